/**
 * Starts one PostgreSQL cluster for the whole test run and hands its URL to the test files (`inject('pgUrl')`).
 * Where no server binaries can be had, the PostgreSQL tests skip with the one-line reason; never in CI (NETINGEST_REQUIRE_PG, set by .ci/run), where
 * `.ci/run` installs the server first, so a missing server there fails the run.
 */
import type { TestProject } from 'vitest/node';
import { openPgStore } from '../../src/store/pg/open.ts';
import { createTestDatabase, pgUnavailableReason, startPgCluster } from './pg-cluster.ts';

/**
 * Autovacuum visits each of the suite's throwaway databases (one or more a test file) in turn, vacuuming and
 * analyzing what the tests just wrote: a third of the server's CPU in test/pg (61 s against 41 s without, the same
 * 316 tests), on the suite's two cores. No test waits for it (a run analyzes the tasks it plans itself); the benches
 * and the soak keep it on, as a user's server has it.
 */
const TEST_SERVER_SETTINGS = ['autovacuum=off'];

declare module 'vitest' {
  export interface ProvidedContext {
    /** The test cluster's superuser URL, or null when PostgreSQL cannot run here. */
    pgUrl: string | null;
    /** Why pgUrl is null. */
    pgSkipReason: string | null;
    /** A database of the cluster holding this build's migrated, empty dataset, to copy (null with pgUrl). */
    pgTemplate: string | null;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const reason = pgUnavailableReason();
  if (reason) {
    if (process.env.NETINGEST_REQUIRE_PG) throw new Error(`PostgreSQL tests cannot run in CI: ${reason}`);
    project.provide('pgUrl', null);
    project.provide('pgSkipReason', reason);
    project.provide('pgTemplate', null);
    return async () => undefined;
  }
  // NETINGEST_TEST_PG_SETTINGS='logging_collector=on;log_directory=/tmp/pglog' keeps the server's log (a deadlock's
  // statements are only there).
  const cluster = await startPgCluster({ settings: [...TEST_SERVER_SETTINGS, ...(process.env['NETINGEST_TEST_PG_SETTINGS']?.split(';').filter(Boolean) ?? [])] });
  project.provide('pgUrl', cluster.url);
  project.provide('pgSkipReason', null);
  project.provide('pgTemplate', await createMigratedTemplate(cluster.url));
  return () => cluster.stop();
}

/**
 * A database holding this build's migrations applied to an empty dataset, as the first `run` leaves it: tests
 * of runs, workers and readers start from a copy of it (CREATE DATABASE ... TEMPLATE, as cheap as an empty
 * one) instead of migrating their own, about 0.2 s of CPU each. Its name; nothing connects to it again.
 */
async function createMigratedTemplate(clusterUrl: string): Promise<string> {
  const url = new URL(await createTestDatabase(clusterUrl, 'migrated_template'));
  await (await openPgStore(url.toString())).close();
  return url.pathname.slice(1);
}
