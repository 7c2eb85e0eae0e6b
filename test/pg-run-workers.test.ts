/**
 * `run` on PostgreSQL with workers as real processes: a worker killed with SIGKILL and run again loses at most
 * its in-flight calls; two workers started apart share one job (one killed halfway and restarted) without
 * calling a task twice outside the in-flight bound, and together never exceed the shared rate limit in any
 * sliding window; a dataset copied from SQLite is run on PostgreSQL without paying again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startSandbox, type Sandbox } from '../src/sandbox/server.ts';
import { runJobs } from '../src/runner/run-jobs.ts';
import { copyDataset } from '../src/store/copy-dataset.ts';
import { cliEnv, csv, makeWorkspace, operationRequests, postUrls, runCli, type Workspace } from './run-helpers.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './pg/use-pg.ts';

const TOKEN = 'pg-workers-5b2d';
const CONCURRENCY = 4;
/** The shared limit, scaled down: 400 calls in any 2 s (12,000 a minute). */
const RATE_WINDOW_MS = 2_000;
const REQUESTS_PER_MINUTE = 12_000;
const LIMIT = (REQUESTS_PER_MINUTE * RATE_WINDOW_MS) / 60_000;
const LEASE_MS = 2_000;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface Setup { sandbox: Sandbox; ws: Workspace; file: string; url: string; pool: pg.Pool }

async function setUp(tasks: number, prefix: string, credits: { balance: number; reserve?: number } = { balance: 1_000_000 }): Promise<Setup> {
  const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: credits.balance }, notFoundRate: 0, latencyMs: [2, 10] });
  const ws = await makeWorkspace();
  const url = await newPgDatabase(prefix);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  cleanups.push(() => sandbox.stop(), () => ws.cleanup(), () => pool.end());
  await ws.write('posts.csv', csv(['post_url'], postUrls(tasks).map((u) => [u])));
  const file = await ws.job('posts', {
    operation: 'post-details',
    input: { csv: 'posts.csv', column: 'post_url' },
    rate: { requestsPerMinute: REQUESTS_PER_MINUTE, concurrency: CONCURRENCY },
    retry: { retries: 3, minTimeoutMs: 10, maxTimeoutMs: 50 },
    ...(credits.reserve === undefined ? {} : { credits: { reserve: credits.reserve } }),
  });
  return { sandbox, ws, file, url, pool };
}

interface Worker { child: ChildProcess; exited: Promise<number | string>; stdout(): string; stderr(): string }

function startWorker(s: Setup): Worker {
  const script = fileURLToPath(new URL('./pg/workers/run-worker.ts', import.meta.url));
  const settings = { url: s.url, jobFiles: [s.file], cwd: s.ws.dir, apiUrl: s.sandbox.url, token: TOKEN, leaseMs: LEASE_MS, rateWindowMs: RATE_WINDOW_MS };
  const child = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify(settings)], { stdio: ['ignore', 'pipe', 'pipe'] });
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

async function waitFor(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const one = async (pool: pg.Pool, sql: string): Promise<number> => Number((await pool.query(sql)).rows[0].n);

/** Every done task has its whole answer, and no table holds a row twice. */
async function expectWholeAndUnique(pool: pg.Pool, tasks: number): Promise<void> {
  expect(await one(pool, `SELECT count(*) AS n FROM tasks WHERE status = 'done'`)).toBe(tasks);
  expect(await one(pool, 'SELECT count(*) AS n FROM tasks')).toBe(tasks);
  expect(await one(pool, 'SELECT count(*) AS n FROM posts')).toBe(tasks);
  expect(await one(pool, 'SELECT count(DISTINCT url) AS n FROM posts')).toBe(tasks);
  expect(await one(pool, 'SELECT count(DISTINCT task_id) AS n FROM raw_responses')).toBe(tasks);
  expect(await one(pool, 'SELECT count(*) AS n FROM post_media')).toBe(await one(pool, 'SELECT count(*) AS n FROM (SELECT DISTINCT post_id, position FROM post_media) d'));
}

/** How many times the sandbox charged for each post URL. */
function chargedPerUrl(sandbox: Sandbox): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of sandbox.requests) if (r.charged > 0) out.set(r.query['url']!, (out.get(r.query['url']!) ?? 0) + 1);
  return out;
}

/** The most calls that arrived within any `windowMs`. */
function busiestWindow(sandbox: Sandbox, windowMs: number): number {
  const at = operationRequests(sandbox).map((r) => r.at).sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; j < at.length; j++) {
    while (at[j]! - at[i]! >= windowMs) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

describe.skipIf(!pgClusterUrl)(`run on PostgreSQL, several workers${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('a worker killed with SIGKILL and run again (the CLI, NETINGEST_DATABASE_URL) ends every task, paying at most its in-flight calls twice', async () => {
    const TASKS = 300;
    const s = await setUp(TASKS, 'kill');
    const victim = startWorker(s);
    await waitFor(() => operationRequests(s.sandbox).length >= 100 || victim.child.exitCode !== null, 30_000, 'calls of the first worker');
    victim.child.kill('SIGKILL');
    expect(await victim.exited).toBe('SIGKILL');
    expect(operationRequests(s.sandbox).length).toBeLessThan(TASKS);

    const env = { ...cliEnv(s.sandbox, TOKEN), NETINGEST_DATABASE_URL: s.url, NETINGEST_LOCK_LEASE_SECONDS: String(LEASE_MS / 1000) };
    const resumed = await runCli(['run', s.file, '--json'], { cwd: s.ws.dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const summary = JSON.parse(resumed.stdout) as { status: string; jobs: Array<{ name: string; fresh: number }> };
    expect(summary.status).toBe('completed');
    expect(summary.jobs[0]!.fresh).toBeGreaterThan(0);
    await expectWholeAndUnique(s.pool, TASKS);
    const charged = chargedPerUrl(s.sandbox);
    expect(charged.size).toBe(TASKS);
    expect([...charged.values()].every((n) => n <= 2)).toBe(true);
    expect(s.sandbox.requests.filter((r) => r.charged > 0).length).toBeLessThanOrEqual(TASKS + CONCURRENCY);
  }, 60_000);

  it('two workers started apart share one job; one killed halfway and restarted: every task once (in-flight aside), the shared rate never exceeded', async () => {
    const TASKS = 2_000;
    const s = await setUp(TASKS, 'two');
    const first = startWorker(s);
    // The second starts once the first is calling (a second or so later).
    await waitFor(() => operationRequests(s.sandbox).length >= 50, 30_000, 'calls of the first worker');
    const second = startWorker(s);
    await waitFor(() => operationRequests(s.sandbox).length >= TASKS / 2, 60_000, 'half of the calls');
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const restarted = startWorker(s);
    expect(await second.exited, second.stderr()).toBe(0);
    expect(await restarted.exited, restarted.stderr()).toBe(0);

    await expectWholeAndUnique(s.pool, TASKS);
    // Paid twice: only the calls the killed worker had in flight.
    const charged = chargedPerUrl(s.sandbox);
    expect(charged.size).toBe(TASKS);
    expect([...charged.values()].every((n) => n <= 2)).toBe(true);
    expect(s.sandbox.requests.filter((r) => r.charged > 0).length).toBeLessThanOrEqual(TASKS + CONCURRENCY);
    // The job was shared: the first and the second worker both made calls (the restarted one may find little left).
    expect(await one(s.pool, 'SELECT count(DISTINCT run_id) AS n FROM api_calls')).toBeGreaterThanOrEqual(2);
    for (const w of [second, restarted]) expect((JSON.parse(w.stdout().split('\n').filter(Boolean).pop()!) as { status: string }).status).toBe('completed');
    // The shared limit held across the workers, in every sliding window.
    expect(busiestWindow(s.sandbox, RATE_WINDOW_MS)).toBeLessThanOrEqual(LIMIT);
  }, 90_000);

  it('the credit reserve holds for the account across two workers: together they spend no more than the balance above it', async () => {
    const TASKS = 300;
    const s = await setUp(TASKS, 'reserve', { balance: 300, reserve: 200 });
    const workers = [startWorker(s), startWorker(s)];
    for (const w of workers) expect(await w.exited, w.stderr()).toBe(0);
    const summaries = workers.map((w) => JSON.parse(w.stdout().split('\n').filter(Boolean).pop()!) as { stop: { reason: string } | null });
    expect(summaries.map((x) => x.stop?.reason)).toEqual(['credits', 'credits']);
    const charged = s.sandbox.requests.reduce((sum, r) => sum + r.charged, 0);
    // 300 - 200: not one credit of the reserve, though each worker alone keeps 4 calls in flight.
    expect(charged).toBeLessThanOrEqual(100);
    expect(charged).toBeGreaterThanOrEqual(90);
    // Both workers called: the budget was shared, not won by one.
    expect(await one(s.pool, 'SELECT count(DISTINCT run_id) AS n FROM api_calls WHERE status = 200')).toBe(2);
  }, 60_000);

  it('a dataset copied from SQLite, then run on PostgreSQL, bills nothing for fresh tasks', async () => {
    const TASKS = 60;
    const s = await setUp(TASKS, 'copied');
    const jobs = await s.ws.load(s.file);
    const api = { baseUrl: s.sandbox.url, token: TOKEN };
    const onSqlite = await runJobs({ dbPath: s.ws.db, jobs, api, requestTimeoutMs: 5000 });
    expect(onSqlite.status).toBe('completed');
    const paid = operationRequests(s.sandbox).length;
    expect(paid).toBe(TASKS);
    await copyDataset(s.ws.db, s.url);
    const onPg = await runJobs({ dbPath: s.url, jobs, api, requestTimeoutMs: 5000 });
    expect(onPg.status).toBe('completed');
    expect(onPg.jobs[0]!.fresh).toBe(TASKS);
    expect(operationRequests(s.sandbox).length).toBe(paid);
    // The run is recorded after the copied one, its id past the copied ids.
    expect(await one(s.pool, 'SELECT count(*) AS n FROM runs')).toBe(2);
  }, 60_000);
});
