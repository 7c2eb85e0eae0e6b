/**
 * A real PostgreSQL server restarted under a run (`pg_ctl restart -m fast`: sessions ended, connections refused, then
 * "starting up"): the answers the run paid for and still holds are written once the server is back, and the next run
 * pays for none of them again. A group whose COMMIT the lost connection left unanswered is found committed (txid_status)
 * or written again, never twice: a proxy ends the writer's connection as its COMMIT goes, after or before the server
 * has it.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startSandbox } from '../../src/sandbox/server.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { csv, inProcess, makeWorkspace, operationRequests, postUrls } from '../support/run-helpers.ts';
import { createTestDatabase, pgUnavailableReason, startPgCluster, type PgCluster } from './pg-cluster.ts';
import { newMigratedPgDatabase, pgClusterUrl } from './use-pg.ts';
import { chargedPerUrl, expectWholeAndUnique, one, startWorker, TOKEN as WORKER_TOKEN, useCleanups, type Setup } from './run-workers.ts';
import { RunNotRecordedError } from '../../src/errors.ts';
import { loadJob } from '../../src/jobs/load.ts';
import { run } from '../../src/index.ts';
import { formatRunSummary } from '../../src/cli/format-summary.ts';
import { PG_WRITER_DEFAULTS, PgOutcomeWriter } from '../../src/store/pg/pg-outcome-writer.ts';
import type { ApiError } from '../../src/api/errors.ts';
import { cuttableProxy } from './cuttable-proxy.ts';
import { gatedApi } from './gated-api.ts';
import { BALANCE_PATH } from '../../src/spec/types.ts';

const TASKS = 300;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});
// The worker processes' (startWorker).
useCleanups();

/** A sandbox, a migrated dataset of the cluster at `clusterUrl`, and a job of `tasks` posts (at concurrency 4, fast). */
async function setUpOn(clusterUrl: string, prefix: string, tasks: number, rate = { requestsPerMinute: 600_000, concurrency: 4 }): Promise<Setup> {
  const sandbox = await startSandbox({ port: 0, tokens: { [WORKER_TOKEN]: 1_000_000 }, notFoundRate: 0, latencyMs: [5, 15] });
  const ws = await makeWorkspace();
  const url = await createTestDatabase(clusterUrl, prefix);
  await (await openPgStore(url)).close();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  pool.on('error', () => undefined);
  cleanups.push(() => sandbox.stop(), () => ws.cleanup(), () => pool.end());
  await ws.write('posts.csv', csv(['post_url'], postUrls(tasks).map((u) => [u])));
  const file = await ws.job('posts', {
    operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' },
    rate, retry: { retries: 3, minTimeoutMs: 10, maxTimeoutMs: 50 },
  });
  return { sandbox, ws, file, url, pool };
}

/** Resolves once the dataset holds `n` api_calls rows (the run is under way). */
async function callsStored(pool: pg.Pool, n: number): Promise<void> {
  while ((await one(pool, 'SELECT count(*) AS n FROM api_calls').catch(() => 0)) < n) await new Promise((r) => setTimeout(r, 20));
}

describe.skipIf(!pgClusterUrl)('a run whose PostgreSQL server restarts', () => {
  // A cluster of its own: the suite's is shared by the other test files.
  let cluster: PgCluster;
  beforeAll(async () => {
    if (pgUnavailableReason()) return;
    cluster = await startPgCluster();
  });
  afterAll(async () => cluster?.stop());

  /** `netingest run --json` on the setup, the cluster restarted (down `downMs`) once `callsBefore` calls are stored. */
  async function runThroughRestart(s: Setup, callsBefore: number, downMs: number) {
    const env = { NETINGEST_API_URL: s.sandbox.url, NETINGEST_API_TOKEN: WORKER_TOKEN };
    const running = inProcess(['run', s.file, '--db', s.url, '--json'], env, { cwd: s.ws.dir });
    while ((await one(s.pool, 'SELECT count(*) AS n FROM api_calls').catch(() => 0)) < callsBefore) await new Promise((r) => setTimeout(r, 20));
    await cluster.restart(downMs);
    const cli = await running;
    return { cli, env, paid: operationRequests(s.sandbox).length };
  }

  it('stores every answer it paid for once the server is back, none twice; the next run pays for none of them again', async () => {
    const s = await setUpOn(cluster.url, 'restart', TASKS);
    const { sandbox, ws, file, url, pool } = s;
    // Down for a while: the calls in flight are answered while no connection is taken.
    const { cli, env, paid } = await runThroughRestart(s, 30, 1_500);
    expect(paid).toBeLessThan(TASKS);
    // Every answer paid for is stored, once: its call, its body and its task.
    expect(await one(pool, 'SELECT count(*) AS n FROM api_calls WHERE status = 200'), cli.stderr).toBe(paid);
    expect(await one(pool, 'SELECT count(*) AS n FROM raw_responses')).toBe(paid);
    expect(await one(pool, 'SELECT count(DISTINCT task_id) AS n FROM raw_responses')).toBe(paid);
    expect(await one(pool, `SELECT count(*) AS n FROM tasks WHERE status = 'done'`)).toBe(paid);
    // The server back, the run's end is recorded, with every call counted once.
    const summary = JSON.parse(cli.stdout);
    expect(summary.notRecorded ?? null, cli.stderr).toBeNull();
    expect(summary.calls).toBe(paid);
    expect((await pool.query('SELECT status, calls FROM runs')).rows).toEqual([{ status: summary.status, calls: paid }]);

    const next = await inProcess(['run', file, '--db', url], env, { cwd: ws.dir });
    expect(next.code, next.stderr).toBe(0);
    expect([...chargedPerUrl(sandbox).values()].filter((n) => n > 1)).toEqual([]);
    await expectWholeAndUnique(pool, TASKS);
  }, 90_000);

  it('a restart between calls, the writer holding nothing: the run waits for the server to record its end', async () => {
    // A call every 2 s: the restart comes while the run waits for its next one, nothing in flight.
    const s = await setUpOn(cluster.url, 'restart_idle', 20, { requestsPerMinute: 30, concurrency: 1 });
    const { pool } = s;
    const { cli, paid } = await runThroughRestart(s, 2, 2_500);
    const summary = JSON.parse(cli.stdout);
    expect(summary.notRecorded ?? null, cli.stderr).toBeNull();
    expect(summary.calls).toBe(paid);
    expect((await pool.query('SELECT status, calls FROM runs')).rows).toEqual([{ status: summary.status, calls: paid }]);
    expect(await one(pool, 'SELECT count(*) AS n FROM api_calls WHERE status = 200')).toBe(paid);
  }, 60_000);

  it('two workers through a restart longer than 15 s: every answer paid for stored once, none paid twice, both runs recorded', async () => {
    const s = await setUpOn(cluster.url, 'restart_long', 400);
    // The workers' first 40 calls go through; the next ones wait at the API, to be answered while the server is down.
    const api = await gatedApi(s.sandbox.url, { free: (path) => path.startsWith(BALANCE_PATH) });
    cleanups.push(() => api.stop());
    api.allow(40);
    // The CLI's lease and wait for the server.
    const as = { apiUrl: api.url, leaseMs: 60_000, serverBackWithinMs: PG_WRITER_DEFAULTS.serverBackWithinMs };
    const workers = [startWorker(s, as), startWorker(s, as)];
    await callsStored(s.pool, 40);
    // Past the 15 s the writer waited before (a package upgrade, a slow checkpoint): within its 2 minutes now.
    const restarted = cluster.restart(17_000);
    while (await s.pool.query('SELECT 1').then(() => true, () => false)) await new Promise((r) => setTimeout(r, 20));
    api.allow(Infinity);
    await restarted;
    expect(await Promise.all(workers.map((w) => w.exited)), workers.map((w) => w.stderr()).join('\n')).toEqual([0, 0]);

    const paid = operationRequests(s.sandbox).length;
    expect(paid).toBeGreaterThan(40);
    expect(await one(s.pool, 'SELECT count(*) AS n FROM api_calls WHERE status = 200')).toBe(paid);
    expect(await one(s.pool, 'SELECT count(DISTINCT task_id) AS n FROM raw_responses')).toBe(paid);
    expect(await one(s.pool, `SELECT count(*) AS n FROM tasks WHERE status = 'done'`)).toBe(paid);
    expect([...chargedPerUrl(s.sandbox).values()].filter((n) => n > 1)).toEqual([]);
    // Each worker's end recorded (the server back in time), its calls counted once, none said lost.
    const summaries = workers.map((w) => JSON.parse(w.stdout().split('\n')[1]!));
    expect(summaries.map((x) => [x.notRecorded, x.callsNotStored])).toEqual([[null, undefined], [null, undefined]]);
    expect(summaries[0].calls + summaries[1].calls).toBe(paid);
    expect(await one(s.pool, `SELECT sum(calls) AS n FROM runs WHERE status = 'failed'`)).toBe(paid);
  }, 90_000);

  it('a server not back within the bound: the run ends without waiting for it, its summary counting the answers not stored', async () => {
    const s = await setUpOn(cluster.url, 'restart_bound', 300);
    // The first 30 calls go through; the next ones wait at the API, to be answered once the server is down (on a
    // busy machine the run could otherwise hold nothing at the restart, waiting on its claims).
    const api = await gatedApi(s.sandbox.url, { free: (path) => path.startsWith(BALANCE_PATH) });
    cleanups.push(() => api.stop());
    api.allow(30);
    const job = await loadJob(s.file, { cwd: s.ws.dir });
    const running = run({ db: s.url, jobs: [job], api: { baseUrl: api.url, token: WORKER_TOKEN }, dbServerBackWithinMs: 500 });
    running.catch(() => undefined);
    await callsStored(s.pool, 30);
    const restarted = cluster.restart(3_000);
    while (await s.pool.query('SELECT 1').then(() => true, () => false)) await new Promise((r) => setTimeout(r, 20));
    api.allow(Infinity);
    // Ended while the server is still down: no wait past the bound.
    expect(await Promise.race([running.then(() => 'ended', () => 'ended'), restarted.then(() => 'server back')])).toBe('ended');
    const err = await running.then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(RunNotRecordedError);
    const summary = (err as RunNotRecordedError).summary;
    await restarted;

    const paid = operationRequests(s.sandbox).length;
    const stored = await one(s.pool, 'SELECT count(*) AS n FROM api_calls');
    expect(summary.calls).toBe(paid);
    expect(summary.callsNotStored).toBeGreaterThan(0);
    expect(summary.callsNotStored).toBe(paid - stored);
    expect(formatRunSummary(summary)).toContain(`\n  not stored: ${paid - stored} of these calls (the database could not be written): their answers are lost`);
  }, 60_000);
});

describe.skipIf(!pgClusterUrl)('the run writer whose connection ends as its COMMIT goes', () => {
  const AT = '2026-11-02T08:00:00.000Z';

  const TASK = { id: 1, operation: 'post-details' as const };
  const ATTEMPT = { call: { operation: 'post-details', method: 'GET', path: '/p/1', status: 500, latencyMs: 1 }, code: 'HTTP_500' } as unknown as ApiError;

  /** A new dataset holding one pending task (TASK), a direct pool on it, and a store reaching it through a cuttable proxy. */
  async function pendingTaskBehindProxy(prefix: string) {
    const url = await newMigratedPgDatabase(prefix);
    const direct = new pg.Pool({ connectionString: url, max: 1 });
    cleanups.push(() => direct.end());
    await direct.query(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, status, attempts, created_at, updated_at)
      VALUES (1, 'j', 'post-details', 'k1', 1, '{}', 'pending', 0, $1, $1)`, [AT]);
    const proxy = await cuttableProxy(url);
    const store = await openPgStore(proxy.url);
    cleanups.push(() => store.close(), () => proxy.cut());
    return { direct, proxy, store };
  }

  /** The writer's one group (an attempt's call and its task failed) on a connection `ended` cuts; what is stored after. */
  async function writeCut(prefix: string, answered: boolean) {
    const { direct, proxy, store } = await pendingTaskBehindProxy(prefix);
    const fatal: unknown[] = [];
    const writer = new PgOutcomeWriter(store.pool, 1, (err) => fatal.push(err));
    const ended = proxy.endOnSight('COMMIT', answered);
    await Promise.all([writer.attemptFailed(TASK, ATTEMPT), writer.failed(TASK, 'HTTP_500', 'server error', true, 1)]);
    await ended;
    await writer.close();
    return {
      fatal,
      notWritten: writer.callsNotWritten,
      failed: writer.settled.failed,
      calls: await one(direct, 'SELECT count(*) AS n FROM api_calls'),
      task: (await direct.query('SELECT status, attempts FROM tasks')).rows,
    };
  }

  it('committed before the connection ended: found committed, not written again', async () => {
    expect(await writeCut('commit_answer_lost', true)).toEqual({ fatal: [], notWritten: 0, failed: 1, calls: 1, task: [{ status: 'failed', attempts: 1 }] });
  });

  it('told to stop (SIGTERM) while the server is away: waits afterSignalMs for it, not its minutes, and counts what it could not write', async () => {
    const { proxy, store } = await pendingTaskBehindProxy('writer_signal');
    store.pool.on('error', () => undefined);
    const fatal: unknown[] = [];
    const interrupted = new AbortController();
    const writer = new PgOutcomeWriter(store.pool, 1, (err) => fatal.push(err), undefined, { serverBackWithinMs: 60_000, afterSignalMs: 300, interrupted: interrupted.signal });
    await proxy.cut();
    interrupted.abort();
    const started = performance.now();
    await writer.attemptFailed(TASK, ATTEMPT);
    await writer.close();
    expect(performance.now() - started).toBeLessThan(10_000);
    expect({ fatal: fatal.length, notWritten: writer.callsNotWritten }).toEqual({ fatal: 1, notWritten: 1 });
  }, 20_000);

  it('ended before the server had its COMMIT: written again, once', async () => {
    expect(await writeCut('commit_never_sent', false)).toEqual({ fatal: [], notWritten: 0, failed: 1, calls: 1, task: [{ status: 'failed', attempts: 1 }] });
  });
});
