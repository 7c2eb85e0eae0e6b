/**
 * A realistic dataset on both engines for the reader tests: the example jobs run against the sandbox into a
 * SQLite file, then `netingest copy` into a new PostgreSQL database of this test file's.
 */
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { FAST_RATE, FAST_RETRY, ROOT, inProcess, makeWorkspace, run, type Workspace } from '../support/run-helpers.ts';
import { newMigratedPgDatabase } from './use-pg.ts';

export interface ReadDataset {
  ws: Workspace;
  /** The SQLite file. */
  file: string;
  /** The PostgreSQL database holding the same data. */
  url: string;
  cleanup(): Promise<void>;
}

const TOKEN = 'readers-token-77c1';

/** Runs `jobFiles` (of jobs/) against a sandbox into a SQLite file of a new workspace (ws.db). */
export async function runExampleJobs(jobFiles: string[]): Promise<Workspace> {
  const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 100_000 } });
  const ws = await makeWorkspace();
  try {
    const jobs = await Promise.all(jobFiles.map((f) => loadJob(join(ROOT, 'jobs', f), { cwd: ROOT })));
    await run(ws, sandbox, TOKEN, jobs.map((j) => ({ ...j, rate: FAST_RATE, retry: { ...j.retry, ...FAST_RETRY } })));
  } finally {
    await sandbox.stop();
  }
  return ws;
}

/**
 * Runs `jobFiles` (of jobs/) into a SQLite file and copies it to a new PostgreSQL database named after `prefix`: a
 * copy of the migrated template, which `copy` takes as it takes an empty database (0.1 s of server CPU less than
 * migrating one).
 */
export async function makeReadDataset(prefix: string, jobFiles = ['lookalikes.json', 'job-search.json']): Promise<ReadDataset> {
  const ws = await runExampleJobs(jobFiles);
  const url = await newMigratedPgDatabase(prefix);
  const copied = await inProcess(['copy', '--from', ws.db, '--to', url]);
  if (copied.code !== 0) throw new Error(`copy failed: ${copied.stderr}`);
  return { ws, file: ws.db, url, cleanup: () => ws.cleanup() };
}

/** Statements whose rows must be the same on both engines: counts, sums, timestamps, a view. */
export const SAME_ON_BOTH = [
  `SELECT c.name, count(l.position) AS locations, sum(l.is_headquarter) AS hq, max(c.updated_at) AS seen
     FROM companies c LEFT JOIN company_locations l ON l.company_url = c.url GROUP BY c.url, c.name ORDER BY c.url`,
  `SELECT job, status, count(*) AS n FROM tasks GROUP BY job, status ORDER BY job, status`,
  `SELECT reference_url, company_name, best_grade FROM v_lookalikes ORDER BY reference_url, company_url`,
  `SELECT id, started_at, ended_at, status, calls, credits_spent FROM runs ORDER BY id`,
] as const;

/** A reader test's dataset on both engines and a client of its PostgreSQL side, set in beforeAll. */
export interface ReadFixture {
  data: ReadDataset;
  client: pg.Client;
}

/**
 * The set-up the reader test files share, in the calling describe block: makeReadDataset(prefix, jobFiles) and a
 * client connected to its database before the tests, both ended after them.
 */
export function useReadDataset(prefix: string, jobFiles?: string[]): ReadFixture {
  const fixture = {} as ReadFixture;
  beforeAll(async () => {
    fixture.data = await makeReadDataset(prefix, jobFiles);
    fixture.client = new pg.Client({ connectionString: fixture.data.url });
    await fixture.client.connect();
  }, 60_000);
  afterAll(async () => {
    await fixture.client?.end();
    await fixture.data?.cleanup();
  });
  return fixture;
}
