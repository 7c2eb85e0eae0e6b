/**
 * A task lease on PostgreSQL is tied to the session holding the dataset lock for its worker: once the server has
 * dropped that session (the worker killed), its inputs are claimable at once, long before the lease ends; a
 * worker alive but idle keeps its inputs until its lease ends; a later session given the same pid does not keep a
 * dead one's leases; a worker whose own session is gone claims nothing.
 */
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTaskClaims } from '../../src/store/pg/coordination/task-claims.ts';
import { holdShared } from '../../src/store/pg/dataset-lock.ts';
import { coordinationTestBed, planTasks, waitFor } from './coordination-fixtures.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';

const JOB = 'shared-job';
/** What a lease row's `job` holds: the operation of the input leased (one lease per lookup, whichever job asks it). */
const OPERATION = 'post-details';
const FRESH_SINCE = '2000-01-01T00:00:00Z';
const LEASE_MS = 60_000;
const filter = { job: JOB, runId: null, freshSince: FRESH_SINCE, refresh: false };

const bed = coordinationTestBed();

/** A worker as a run has it: its own pool, its hold on the dataset lock, its claims tied to the hold. */
async function worker(url: string, workerId: string) {
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  const hold = await holdShared(pool, 'the test dataset');
  const claims = createTaskClaims(pool, { workerId, leaseMs: LEASE_MS, holderPid: hold.backendPid });
  return { pool, hold, claims, end: async () => { await hold.release(); await pool.end(); } };
}

const leases = async (pool: pg.Pool) => (await pool.query<{ input_key: string; worker_id: string; lease_until: Date }>(
  'SELECT input_key, worker_id, lease_until FROM worker_task_leases ORDER BY input_key')).rows;

describe.skipIf(!pgClusterUrl)(`task leases tied to the dataset lock's session${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('a dead session\'s leases are taken at once; a live idle worker\'s are not; a reused pid does not keep them', async () => {
    const { url, pool } = await bed.database('lease_session');
    await planTasks(pool, JOB, 6); // in-00000 (1 page), in-00001 (2), in-00002 (3)
    const a = await worker(url, 'a');
    const b = await worker(url, 'b');
    const idle = await worker(url, 'idle');
    try {
      // The idle worker claims in-00000 and then does nothing (no renewal): alive, its lease far from its end.
      expect((await idle.claims.claim(filter, 1)).map((t) => t.inputKey)).toEqual(['in-00000']);
      expect((await a.claims.claim(filter, 2)).map((t) => t.inputKey)).toEqual(['in-00001', 'in-00001']);
      const [, aLease] = await leases(pool);
      expect(aLease).toMatchObject({ input_key: 'in-00001', worker_id: 'a' });

      // a's session ends as a killed worker's does: the server drops it, and its lock with it.
      await pool.query('SELECT pg_terminate_backend($1)', [a.hold.backendPid]);
      await waitFor(async () => (await pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [a.hold.backendPid])).rowCount === 0, 10_000, 'a\'s session to end');
      // b takes a's input now, before a's lease ends; the idle worker's input stays its own.
      const taken = await b.claims.claim(filter, 100);
      expect(new Set(taken.map((t) => t.inputKey))).toEqual(new Set(['in-00001', 'in-00002']));
      const [nowAt] = (await pool.query<{ now: Date }>('SELECT clock_timestamp() AS now')).rows.map((r) => r.now);
      expect(nowAt!.getTime()).toBeLessThan(aLease!.lease_until.getTime());
      expect((await leases(pool)).map((l) => [l.input_key, l.worker_id])).toEqual([['in-00000', 'idle'], ['in-00001', 'b'], ['in-00002', 'b']]);
      expect(await b.claims.claim(filter, 100)).toEqual([]);

      // A lease naming a live pid but an earlier session (the pid reused) is a dead session's: taken at once.
      await b.claims.release(JOB, ['in-00001']);
      await pool.query(`INSERT INTO worker_task_leases (job, input_key, worker_id, lease_until, claimed_at, backend_pid, backend_start)
        SELECT $1, 'in-00001', 'gone', clock_timestamp() + interval '1 minute', now() - interval '1 minute', $2, backend_start - interval '1 hour'
        FROM pg_stat_activity WHERE pid = $2`, [OPERATION, idle.hold.backendPid]);
      expect((await b.claims.claim(filter, 100)).map((t) => t.inputKey)).toEqual(['in-00001', 'in-00001']);
      // Still nobody takes the idle worker's input while its lease lives.
      expect(await b.claims.claim(filter, 100)).toEqual([]);
      expect((await leases(pool))[0]).toMatchObject({ input_key: 'in-00000', worker_id: 'idle' });
    } finally {
      for (const w of [a, b, idle]) await w.end().catch(() => undefined);
    }
  });

  it('a worker whose own session is gone claims nothing; a lease claimed while a claim runs is left to its holder', async () => {
    const { url, pool } = await bed.database('lease_own');
    await planTasks(pool, JOB, 3);
    const a = await worker(url, 'a');
    const b = await worker(url, 'b');
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await pool.query('SELECT pg_terminate_backend($1)', [a.hold.backendPid]);
      await new Promise<void>((resolve) => a.hold.onLost(() => resolve()));
      expect(await a.claims.claim(filter, 100)).toEqual([]);
      expect(await leases(pool)).toEqual([]);

      // A lease committed while b's claim waits for it, naming a session b's claim did not see holding the lock
      // (it may have taken it after the claim read pg_locks): b leaves it to its holder.
      await other.query('BEGIN');
      await other.query(`INSERT INTO worker_task_leases (job, input_key, worker_id, lease_until, claimed_at, backend_pid)
        VALUES ($1, 'in-00000', 'x', clock_timestamp() + interval '1 minute', clock_timestamp(), 2147483647)`, [OPERATION]);
      const claiming = b.claims.claim(filter, 1);
      await waitFor(async () => (await pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
        AND query LIKE 'WITH %candidates AS MATERIALIZED%'`)).rows[0].n > 0, 30_000, 'b to wait for the lease row');
      await other.query(`UPDATE worker_task_leases SET claimed_at = clock_timestamp() WHERE input_key = 'in-00000'`);
      await other.query('COMMIT');
      expect(await claiming).toEqual([]);
      expect((await leases(pool)).map((l) => l.worker_id)).toEqual(['x']);
      // Once its statement is over, that session is judged by pg_locks: not holding the lock, its lease is dead.
      expect((await b.claims.claim(filter, 1)).map((t) => t.inputKey)).toEqual(['in-00000']);
    } finally {
      await other.end();
      for (const w of [a, b]) await w.end().catch(() => undefined);
    }
  });
});
