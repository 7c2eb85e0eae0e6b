/**
 * A worker's start drops the credit reservations of a dead worker's run (its session gone): counted till they
 * expired (5 min), they held the next run's calls back, and kept its balance read from being recorded. A live
 * worker's, slow or not, are kept.
 */
import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { holdShared, type DatasetHold } from '../../src/store/pg/dataset-lock.ts';
import { startWorkerRun } from '../../src/store/pg/coordination/worker-runs.ts';
import { SharedCreditBudget } from '../../src/store/pg/coordination/shared-credit-budget.ts';
import { startWorker, waitFor } from './coordination-fixtures.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A worker: its own pool, the dataset lock held on one session, its run started on `jobs`; its run key. */
async function worker(url: string, jobs: string[]): Promise<{ hold: DatasetHold; runKey: string }> {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  // The session a test ends makes its pool's idle clients fail: that is the point, not an error of the test.
  pool.on('error', () => undefined);
  const hold = await holdShared(pool, 'the test dataset');
  cleanups.push(() => pool.end(), () => hold.release());
  const { runKey } = await startWorkerRun(pool, { jobs, startedAt: new Date().toISOString(), pid: process.pid, host: 'test', backendPid: hold.backendPid });
  return { hold, runKey };
}

const reserve = (pool: pg.Pool, runKey: string, workerId: string) => pool.query(`INSERT INTO credit_reservations (api_url, run_key, worker_id, cost, expires_at)
  VALUES ('http://api', $1, $2, 40, clock_timestamp() + interval '5 minutes')`, [runKey, workerId]);

describe.skipIf(!pgClusterUrl)(`a worker's start and the credit reservations${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('drops a dead worker\'s reservations and keeps a live worker\'s', async () => {
    const url = await newMigratedPgDatabase('dead_reservations');
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    cleanups.push(() => pool.end());
    // Different jobs: each its own run key (one sharing a job would join the live run's).
    const live = await worker(url, ['a']);
    const dead = await worker(url, ['b']);
    await reserve(pool, live.runKey, 'live');
    await reserve(pool, dead.runKey, 'dead');
    // Killed: the server drops its session, and with it its hold on the dataset lock.
    await pool.query('SELECT pg_terminate_backend($1)', [dead.hold.backendPid]);
    await waitFor(async () => (await pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [dead.hold.backendPid])).rowCount === 0, 10_000, 'its session to end');

    await worker(url, ['b']);
    const { rows } = await pool.query<{ worker_id: string }>('SELECT worker_id FROM credit_reservations ORDER BY id');
    expect(rows.map((r) => r.worker_id)).toEqual(['live']);
  });

  it('a worker process SIGKILLed with its block reserved: a run started right after records its balance read', async () => {
    const url = await newMigratedPgDatabase('dead_reservations_kill');
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    cleanups.push(() => pool.end());
    const apiUrl = 'http://api';
    const killed = startWorker('reserve-worker.ts', { url, jobs: ['b'], apiUrl });
    cleanups.push(async () => killed.child.kill('SIGKILL'));
    await waitFor(async () => killed.stdout().includes('reserved'), 30_000, `the worker's block (stderr: ${killed.stderr()})`);
    const next = new SharedCreditBudget(pool, { apiUrl, runKey: 'next', workerId: 'next' });
    const read = { credits_used: 100, total_credits: 1_000, credits_remaining: 900 };
    await next.report(read);
    expect((await pool.query('SELECT 1 FROM account_balance')).rowCount).toBe(0);
    killed.child.kill('SIGKILL');
    await killed.exited;
    // The server ends the session once it reads the closed socket: a start before then finds the run live (its
    // block then counts till it expires). Under load that can take a moment; the run's start comes right after.
    const pid = Number(/reserved (\d+)/.exec(killed.stdout())![1]);
    await waitFor(async () => (await pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rowCount === 0, 10_000, 'its session to end');
    await worker(url, ['b']);
    await next.report(read);
    expect((await pool.query('SELECT balance FROM account_balance')).rows).toEqual([{ balance: 900 }]);
  });
});
