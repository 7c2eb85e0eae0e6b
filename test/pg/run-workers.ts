/** What the tests of `run` with worker processes on PostgreSQL share: a sandbox job, worker processes, checks. */
import { workerArgs } from './worker-entry.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, expect } from 'vitest';
import pg from 'pg';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { csv, makeWorkspace, operationRequests, postUrls, type Workspace } from '../support/run-helpers.ts';
import { newMigratedPgDatabase } from './use-pg.ts';

export const TOKEN = 'pg-workers-5b2d';
export const CONCURRENCY = 4;
/** The shared limit, scaled down: 800 calls in any 2 s (24,000 a minute), a rate the tests' workers do not meet. */
export const RATE_WINDOW_MS = 2_000;
export const REQUESTS_PER_MINUTE = 24_000;
/** The most calls a job at `requestsPerMinute` may make in any RATE_WINDOW_MS, on all workers together. */
export const limitOf = (requestsPerMinute: number): number => (requestsPerMinute * RATE_WINDOW_MS) / 60_000;
/**
 * A rate the workers of a test meet (50 calls a second together, 100 in a window): a rate check over 200 calls
 * can fail, where the default's 800 calls in 2 s would need thousands of calls (each a row planned, called and
 * stored by a worker process: CPU the suite pays for).
 */
export const BINDING_REQUESTS_PER_MINUTE = 3_000;
export const LEASE_MS = 2_000;
/** How long a worker's writer waits for a server gone away (2 minutes in a run): a test's server cut for good. */
export const SERVER_BACK_WITHIN_MS = 5_000;

const cleanups: Array<() => Promise<unknown>> = [];
/** Call at the top level of a test file: ends the workers and sandboxes of each test. */
export function useCleanups(): void {
  afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
  });
}

export interface Setup { sandbox: Sandbox; ws: Workspace; file: string; url: string; pool: pg.Pool }

export async function setUp(
  tasks: number,
  prefix: string,
  credits: { balance: number; reserve?: number } = { balance: 1_000_000 },
  requestsPerMinute = REQUESTS_PER_MINUTE,
): Promise<Setup> {
  const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: credits.balance }, notFoundRate: 0, latencyMs: [2, 10] });
  const ws = await makeWorkspace();
  const url = await newMigratedPgDatabase(prefix);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  cleanups.push(() => sandbox.stop(), () => ws.cleanup(), () => pool.end());
  await ws.write('posts.csv', csv(['post_url'], postUrls(tasks).map((u) => [u])));
  const file = await ws.job('posts', {
    operation: 'post-details',
    input: { csv: 'posts.csv', column: 'post_url' },
    rate: { requestsPerMinute, concurrency: CONCURRENCY },
    retry: { retries: 3, minTimeoutMs: 10, maxTimeoutMs: 50 },
    ...(credits.reserve === undefined ? {} : { credits: { reserve: credits.reserve } }),
  });
  return { sandbox, ws, file, url, pool };
}

/**
 * The setup (its dataset migrated: a test may poll its tables before any worker has opened it) and a job of the
 * setup's posts capped at `maxPerRun` credits a run.
 */
export async function cappedSetUp(tasks: number, prefix: string, maxPerRun: number): Promise<Setup & { capped: string }> {
  const s = await setUp(tasks, prefix);
  const capped = await s.ws.job('capped', {
    operation: 'post-details',
    input: { csv: 'posts.csv', column: 'post_url' },
    rate: { requestsPerMinute: REQUESTS_PER_MINUTE, concurrency: CONCURRENCY },
    retry: { retries: 3, minTimeoutMs: 10, maxTimeoutMs: 50 },
    credits: { maxPerRun },
  });
  return { ...s, capped };
}

export interface Worker { child: ChildProcess; exited: Promise<number | string>; stdout(): string; stderr(): string }

/**
 * A worker process on the setup's job; `as` changes its job file, its API URL, the host name it reads, its claims'
 * lease (LEASE_MS by default), its writer's wait for the server (SERVER_BACK_WITHIN_MS), its calls' timeout (10 s), or
 * names its run.
 */
export function startWorker(
  s: Setup,
  as: { file?: string; apiUrl?: string; hostname?: string; runKey?: string; leaseMs?: number; serverBackWithinMs?: number; requestTimeoutMs?: number } = {},
): Worker {
  const settings = {
    url: s.url, jobFiles: [as.file ?? s.file], cwd: s.ws.dir, apiUrl: as.apiUrl ?? s.sandbox.url, token: TOKEN, leaseMs: as.leaseMs ?? LEASE_MS, rateWindowMs: RATE_WINDOW_MS,
    hostname: as.hostname, runKey: as.runKey, serverBackWithinMs: as.serverBackWithinMs ?? SERVER_BACK_WITHIN_MS, requestTimeoutMs: as.requestTimeoutMs,
  };
  const child = spawn(process.execPath, [...workerArgs('run-worker.ts'), JSON.stringify(settings)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4_000)));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const worker = { child, exited, stdout: () => out, stderr: () => err };
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  return worker;
}

export async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export const one = async (pool: pg.Pool, sql: string): Promise<number> => Number((await pool.query(sql)).rows[0].n);

/** Every done task has its whole answer, and no table holds a row twice. */
export async function expectWholeAndUnique(pool: pg.Pool, tasks: number): Promise<void> {
  expect(await one(pool, `SELECT count(*) AS n FROM tasks WHERE status = 'done'`)).toBe(tasks);
  expect(await one(pool, 'SELECT count(*) AS n FROM tasks')).toBe(tasks);
  expect(await one(pool, 'SELECT count(*) AS n FROM posts')).toBe(tasks);
  expect(await one(pool, 'SELECT count(DISTINCT url) AS n FROM posts')).toBe(tasks);
  expect(await one(pool, 'SELECT count(DISTINCT task_id) AS n FROM raw_responses')).toBe(tasks);
  expect(await one(pool, 'SELECT count(*) AS n FROM post_media')).toBe(await one(pool, 'SELECT count(*) AS n FROM (SELECT DISTINCT post_id, position FROM post_media) d'));
}

/** How many times the sandbox charged for each post URL. */
export function chargedPerUrl(sandbox: Sandbox): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of sandbox.requests) if (r.charged > 0) out.set(r.query['url']!, (out.get(r.query['url']!) ?? 0) + 1);
  return out;
}

/** The most calls that arrived within any `windowMs`. */
export function busiestWindow(sandbox: Sandbox, windowMs: number): number {
  const at = operationRequests(sandbox).map((r) => r.at).sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; j < at.length; j++) {
    while (at[j]! - at[i]! >= windowMs) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

