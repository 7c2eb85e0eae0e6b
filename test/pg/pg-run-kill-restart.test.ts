/**
 * Workers on PostgreSQL with the CLI's 60 s claim lease: a worker killed with SIGKILL and restarted at once does
 * not wait for its dead self's leases (the server dropped its session, and with it its hold on the dataset lock);
 * a worker alive but idle (its calls held at the API) keeps its inputs: another worker does not call them; a worker
 * whose session the server ends stops before any further call. Nor does it wait for the dead worker's credit reservations.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { openPgStore } from '../../src/store/pg/open.ts';
import { pgClusterUrl, lockHolders, pgSkipReason } from './use-pg.ts';
import { waitFor as waitUntil } from './coordination-fixtures.ts';
import { gatedApi } from './gated-api.ts';
import { operationRequests, spawnCli, waitWhileRunning } from '../support/run-helpers.ts';
import { BALANCE_PATH } from '../../src/spec/types.ts';
import { chargedPerUrl, CONCURRENCY, expectWholeAndUnique, one, setUp, startWorker, TOKEN, useCleanups, type Setup } from './run-workers.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import type { RunOptions } from '../../src/runner/run-options.ts';
import type { Job } from '../../src/jobs/schema.ts';

useCleanups();

/** The CLI's default lease: what a restarted worker would wait out without the session check. */
const CLI_LEASE_MS = 60_000;

/** A run of the setup's job with the CLI's lease, on `apiUrl`. */
const runOptions = (s: Setup, jobs: Job[], apiUrl: string): RunOptions => ({
  dbPath: s.url, jobs, api: { baseUrl: apiUrl, token: TOKEN }, requestTimeoutMs: CLI_LEASE_MS, lockLeaseMs: CLI_LEASE_MS,
});

/** The setup's dataset migrated, and a gated API (`gate`) in front of its sandbox, stopped once the test ends. */
async function gatedSetUp(tasks: number, prefix: string, credits?: Parameters<typeof setUp>[2], gate?: Parameters<typeof gatedApi>[1]) {
  const s = await setUp(tasks, prefix, credits);
  await (await openPgStore(s.url)).close();
  const api = await gatedApi(s.sandbox.url, gate);
  onTestFinished(() => api.stop());
  return { s, api };
}

/**
 * Whether the `allowed` requests the gate let through (the balance asked first among them) have reached the API and
 * their answers are committed, while other inputs are leased: the worker's next calls wait at the gate.
 */
async function allowedCallsSettled(s: Setup, allowed: number): Promise<boolean> {
  return s.sandbox.requests.length >= allowed
    && (await one(s.pool, 'SELECT count(*) AS n FROM api_calls WHERE status = 200')) >= operationRequests(s.sandbox).length
    && (await one(s.pool, 'SELECT count(*) AS n FROM worker_task_leases')) > 0;
}

/**
 * The inputs leased now with a task not done yet, each with when its lease ends (the server's clock). A settled
 * input's lease is given back a moment after its commit (with others): it holds nothing anyone would call.
 */
async function leasedInputs(pool: import('pg').Pool): Promise<Map<string, Date>> {
  const { rows } = await pool.query<{ input_key: string; lease_until: Date }>(`SELECT l.input_key, l.lease_until FROM worker_task_leases l
    WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.input_key = l.input_key AND t.status <> 'done')`);
  return new Map(rows.map((r) => [r.input_key, r.lease_until]));
}

/**
 * A worker whose first `allowed` calls go through and are committed, the next ones held at `api` with their inputs
 * leased, killed with SIGKILL: what `observe` read just before the kill.
 */
async function killedMidRun<T>(s: Setup, api: Awaited<ReturnType<typeof gatedApi>>, allowed: number, observe: () => Promise<T>): Promise<T> {
  api.allow(allowed);
  const victim = startWorker(s, { apiUrl: api.url, leaseMs: CLI_LEASE_MS });
  await waitUntil(() => allowedCallsSettled(s, allowed), 30_000, 'the victim\'s calls and leases');
  const seen = await observe();
  victim.child.kill('SIGKILL');
  expect(await victim.exited).toBe('SIGKILL');
  return seen;
}

/** Every task settled once (expectWholeAndUnique, unless `whole` is false), and each post paid once. */
async function expectEachPaidOnce(s: Setup, tasks: number, whole = true): Promise<void> {
  if (whole) await expectWholeAndUnique(s.pool, tasks);
  expect([...chargedPerUrl(s.sandbox).values()].every((n) => n === 1)).toBe(true);
  expect(chargedPerUrl(s.sandbox).size).toBe(tasks);
}

/** The server's clock now, as text: a Date would drop its microseconds. */
async function serverNow(pool: import('pg').Pool): Promise<string> {
  return (await pool.query<{ now: string }>('SELECT clock_timestamp()::text AS now')).rows[0]!.now;
}

/**
 * When a worker's idle claim round (its sessions opened since `since`) ended after `after`: a round that claims nothing
 * counts what is left due (pg-run-store's DUE_LEFT) before it sleeps; the session shows it as its last statement.
 */
async function claimRoundAfter(pool: import('pg').Pool, since: string, after: string): Promise<string> {
  let ended: string | null = null;
  await waitUntil(async () => {
    const { rows } = await pool.query<{ at: string | null }>(`SELECT max(state_change)::text AS at FROM pg_stat_activity
      WHERE datname = current_database() AND backend_start >= $1::timestamptz AND state = 'idle' AND state_change > $2::timestamptz
        AND query LIKE 'SELECT count(*)::int AS n FROM tasks t WHERE %'`, [since, after]);
    ended = rows[0]!.at;
    return ended !== null;
  }, 10_000, 'the other worker\'s next idle claim round', 20);
  return ended!;
}

describe.skipIf(!pgClusterUrl)(`workers with a 60 s lease on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('a worker killed with SIGKILL and restarted at once takes its inputs back before their lease ends, paying nothing twice', async () => {
    const TASKS = 40;
    const ALLOWED = 8;
    const { s, api } = await gatedSetUp(TASKS, 'kill_restart');
    const orphaned = await killedMidRun(s, api, ALLOWED, () => leasedInputs(s.pool));

    // Restarted in this process (as the CLI would be, by cron): stopped if it is still going at half the lease.
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), CLI_LEASE_MS / 2);
    const restarted = await runJobs({ ...runOptions(s, await s.ws.load(s.file), s.sandbox.url), signal: stop.signal }).finally(() => clearTimeout(timer));
    expect(stop.signal.aborted, 'the restarted run waited for the dead worker\'s leases').toBe(false);
    expect(restarted.status).toBe('completed');
    await expectWholeAndUnique(s.pool, TASKS);
    // It called each of the victim's leased inputs before that lease would have ended (both clocks are this host's).
    const { rows } = await s.pool.query<{ input_key: string; at: Date }>(`SELECT t.input_key, min(c.at) AS at FROM api_calls c
      JOIN tasks t ON t.id = c.task_id WHERE c.run_id = (SELECT max(id) FROM runs) AND t.input_key = ANY($1::text[]) GROUP BY t.input_key`, [[...orphaned.keys()]]);
    expect(rows.map((r) => r.input_key).sort()).toEqual([...orphaned.keys()].sort());
    for (const r of rows) expect(new Date(r.at).getTime(), r.input_key).toBeLessThan(orphaned.get(r.input_key)!.getTime());
    // The calls held at the gate never reached the API: each post was paid once.
    await expectEachPaidOnce(s, TASKS, false);
  }, 60_000);

  it('a worker killed near the reserve: the next run does not wait for its credit reservations to expire', async () => {
    const TASKS = 40;
    const ALLOWED = 8;
    // 50 credits above the reserve: the victim reserves them all (cost 1) once its first call shows the cost.
    const { s, api } = await gatedSetUp(TASKS, 'kill_reserved', { balance: 1_000, reserve: 950 });
    // Its reservation holds what is left above the reserve (its calls held at the API among them), for 5 minutes.
    const reserved = await killedMidRun(s, api, ALLOWED, () => one(s.pool, 'SELECT coalesce(sum(cost), 0) AS n FROM credit_reservations'));
    expect(reserved).toBeGreaterThan(TASKS - ALLOWED);

    // Through the same API URL (the budget's account): the victim's requests held there are dropped, not sent. Its
    // exit can be seen before its sockets' close: allowed at once, a held request went through (a post paid twice).
    await waitUntil(async () => api.held() === 0, 10_000, "the victim's held requests to be dropped");
    api.allow(Infinity);
    const restarted = startWorker(s, { apiUrl: api.url, leaseMs: CLI_LEASE_MS });
    const waiting = new Promise<string>((r) => setTimeout(() => r('still running after 20 s'), 20_000).unref());
    expect(await Promise.race([restarted.exited, waiting]), restarted.stderr()).toBe(0);
    expect(JSON.parse(restarted.stdout().trim().split('\n').at(-1)!)).toMatchObject({ status: 'completed' });
    await expectEachPaidOnce(s, TASKS);
  }, 60_000);

  it('a worker alive but idle keeps its inputs: another worker works the rest and does not call them', async () => {
    // The idle worker holds two claims (its queue's 16 inputs each, CONCURRENCY 4): 16 are left for the other.
    const TASKS = 48;
    const ALLOWED = 4;
    const { s, api } = await gatedSetUp(TASKS, 'idle_kept');
    api.allow(ALLOWED);
    // Both in this process, each with its own pool and its own session holding the dataset lock.
    const jobs = await s.ws.load(s.file);
    const idle = runJobs(runOptions(s, jobs, api.url));
    await waitUntil(() => allowedCallsSettled(s, ALLOWED), 30_000, 'the idle worker\'s calls and leases');
    const its = [...(await leasedInputs(s.pool)).keys()];
    const idleId = (await s.pool.query<{ w: string }>('SELECT DISTINCT worker_id AS w FROM worker_task_leases')).rows.map((r) => r.w);
    expect(idleId).toHaveLength(1);
    let otherEnded = false;
    const otherStart = await serverNow(s.pool);
    const other = runJobs(runOptions(s, jobs, s.sandbox.url)).finally(() => (otherEnded = true));
    // The other worker does everything outside the idle worker's leases, then waits for them.
    await waitUntil(async () => (await one(s.pool, 'SELECT count(*) AS n FROM runs')) === 2 && (await one(s.pool, `SELECT count(*) AS n
      FROM tasks t WHERE t.status <> 'done' AND NOT EXISTS (
        SELECT 1 FROM worker_task_leases l WHERE l.input_key = t.input_key AND l.worker_id = '${idleId[0]}')`)) === 0, 30_000, 'the other worker to do the rest');
    // Two of its idle claim rounds later (each ends with its count of what is left due, every 500 ms), it has still
    // called none of them, and waits.
    const firstRound = await claimRoundAfter(s.pool, otherStart, await serverNow(s.pool));
    await claimRoundAfter(s.pool, otherStart, firstRound);
    const otherCalls = `SELECT count(*) AS n FROM api_calls c JOIN tasks t ON t.id = c.task_id
      WHERE c.run_id = (SELECT max(id) FROM runs) AND t.input_key = ANY('{${its.map((k) => `"${k}"`).join(',')}}'::text[])`;
    expect(await one(s.pool, otherCalls)).toBe(0);
    expect(await one(s.pool, `SELECT count(*) AS n FROM api_calls c JOIN runs r ON r.id = c.run_id WHERE r.id = (SELECT max(id) FROM runs)`)).toBeGreaterThan(0);
    expect(otherEnded).toBe(false);

    api.allow(Infinity);
    for (const summary of await Promise.all([idle, other])) expect(summary.status).toBe('completed');
    await expectWholeAndUnique(s.pool, TASKS);
    expect([...chargedPerUrl(s.sandbox).values()].every((n) => n === 1)).toBe(true);
  }, 60_000);
  it('a worker whose session the server ends stops (LOCK_LOST, its run closed) with no call after its in-flight ones; the next takes the rest', async () => {
    const TASKS = 40;
    const ALLOWED = 4;
    const { s, api } = await gatedSetUp(TASKS, 'session_ended');
    api.allow(ALLOWED);
    const jobs = await s.ws.load(s.file);
    // It closes its own run, with the error that stopped it (no other run took it over).
    const cut = runJobs(runOptions(s, jobs, api.url)).then((summary) => summary.error, (err: unknown) => err as { code?: string });
    await waitUntil(() => allowedCallsSettled(s, ALLOWED), 30_000, 'the first worker\'s calls and leases');
    const [holder] = [...(await lockHolders(s.pool))];
    await s.pool.query('SELECT pg_terminate_backend($1)', [holder]);
    await waitUntil(async () => (await s.pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [holder])).rowCount === 0, 10_000, 'its session to end');
    // Its calls waiting at the API go on; it must start no other.
    api.allow(Infinity);
    const stillRunning = new Promise<{ code: string }>((r) => setTimeout(() => r({ code: 'still running after 20 s' }), 20_000).unref());
    expect((await Promise.race([cut, stillRunning]))?.code).toBe('LOCK_LOST');
    const sent = operationRequests(s.sandbox).length;
    expect(sent).toBeLessThanOrEqual(ALLOWED + CONCURRENCY);

    const next = await runJobs(runOptions(s, jobs, s.sandbox.url));
    expect(next.status).toBe('completed');
    await expectWholeAndUnique(s.pool, TASKS);
    // Paid twice at most: what it had in flight when its session ended.
    const charged = chargedPerUrl(s.sandbox);
    expect(charged.size).toBe(TASKS);
    expect(s.sandbox.requests.filter((r) => r.charged > 0).length).toBeLessThanOrEqual(TASKS + CONCURRENCY);
  }, 60_000);

  it('a run waiting for credits another worker\'s calls in flight hold says so, and SIGTERM ends the wait at once', async () => {
    // More inputs than the holder claims (two claims of 16): the waiter has its own to call.
    const TASKS = 80;
    const ALLOWED = 8;
    // The holder's calls past its first 8 wait at the API (for its 30 s request deadline); later requests (the waiter's) go through.
    let holding = true;
    const free = (path: string) => path.startsWith(BALANCE_PATH) || !holding;
    const { s, api } = await gatedSetUp(TASKS, 'credit_wait_term', { balance: 1_000, reserve: 970 }, { free });
    // The holder's block holds most of what is left above the reserve (cost 1) once its 8 calls are paid.
    api.allow(ALLOWED);
    // The waiter says its wait past 1 s (the progress line's interval), not 5.
    const env = { NETINGEST_API_URL: api.url, NETINGEST_API_TOKEN: TOKEN, NETINGEST_PROGRESS_SECONDS: '1' };
    const holder = spawnCli(['run', s.file, '--db', s.url], { cwd: s.ws.dir, env });
    onTestFinished(() => void holder.child.kill('SIGKILL'));
    // Every slot of the holder waits at the API: it can send nothing more, and its block holds the room.
    await waitUntil(async () => operationRequests(s.sandbox).length === ALLOWED && api.held() === CONCURRENCY
      && (await one(s.pool, 'SELECT coalesce(sum(cost), 0) AS n FROM credit_reservations')) >= 10, 30_000, 'the holder\'s reservation');
    holding = false;

    // Before: it waited silently, and a SIGTERM (cron's timeout, systemd's stop) waited with it till the holder's calls came back.
    const waiter = spawnCli(['run', s.file, '--db', s.url], { cwd: s.ws.dir, env });
    await waitWhileRunning(waiter, () => waiter.stderr().includes('waiting: '), 'it said it waits');
    expect(waiter.stderr(), waiter.stderr()).toMatch(/WARN +waiting: calls in flight \(every worker's\) hold the credits left above the reserve job=posts reserved=\d+ balance=\d+/);
    waiter.child.kill('SIGTERM');
    const stillRunning = new Promise<{ code: string }>((r) => setTimeout(() => r({ code: 'still running 12 s after SIGTERM' }), 12_000).unref());
    expect((await Promise.race([waiter.done, stillRunning])).code, waiter.stderr()).toBe(130);
    // It paid for what room was left and no more; nothing twice.
    expect(operationRequests(s.sandbox).length).toBeLessThanOrEqual(ALLOWED + 22);
    expect([...chargedPerUrl(s.sandbox).values()].every((n) => n === 1)).toBe(true);
  }, 60_000);
});
