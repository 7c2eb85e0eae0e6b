/**
 * Starts one PostgreSQL cluster for the whole test run and hands its URL to the test files (`inject('pgUrl')`).
 * Where no server binaries can be had, the PostgreSQL tests skip with the one-line reason; never in CI (NETINGEST_REQUIRE_PG, set by .ci/run), where
 * `.ci/run` installs the server first, so a missing server there fails the run.
 */
import type { TestProject } from 'vitest/node';
import { pgUnavailableReason, startPgCluster } from './pg-cluster.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The test cluster's superuser URL, or null when PostgreSQL cannot run here. */
    pgUrl: string | null;
    /** Why pgUrl is null. */
    pgSkipReason: string | null;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const reason = pgUnavailableReason();
  if (reason) {
    if (process.env.NETINGEST_REQUIRE_PG) throw new Error(`PostgreSQL tests cannot run in CI: ${reason}`);
    project.provide('pgUrl', null);
    project.provide('pgSkipReason', reason);
    return async () => undefined;
  }
  const cluster = await startPgCluster();
  project.provide('pgUrl', cluster.url);
  project.provide('pgSkipReason', null);
  return () => cluster.stop();
}
