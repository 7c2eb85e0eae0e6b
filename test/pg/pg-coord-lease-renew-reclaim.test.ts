/**
 * A renewal in flight while its worker gives an input back and claims it again: the renewal's snapshot, taken before
 * the new claim, finds the old lease row deleted and not the new one. Its result must not drop the newer lease from
 * the worker's held inputs, or the worker thinks it lost the input and skips its call (or stops the run).
 */
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTaskClaims } from '../../src/store/pg/coordination/task-claims.ts';
import { holdShared } from '../../src/store/pg/dataset-lock.ts';
import { coordinationTestBed, waitFor } from './coordination-fixtures.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';

const JOB = 'shared-job';
const filter = { job: JOB, runId: null, freshSince: '2000-01-01T00:00:00Z', refresh: false };

const bed = coordinationTestBed();

/** Sessions of the database waiting for a row lock while running a statement whose text holds `statement`. */
const waitingIn = async (pool: pg.Pool, statement: string) => Number((await pool.query(`SELECT count(*) AS n FROM pg_stat_activity
  WHERE datname = current_database() AND wait_event_type = 'Lock' AND strpos(query, $1) > 0`, [statement])).rows[0].n);

describe.skipIf(!pgClusterUrl)(`a renewal racing a give-back and claim of the same input${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('leaves the newer lease held', async () => {
    const { url, pool } = await bed.database('lease_reclaim');
    await pool.query(`INSERT INTO tasks (job, operation, input_key, page, request_json, created_at, updated_at)
      SELECT $1, 'post-details', k, 1, jsonb_build_object('url', k), now(), now() FROM unnest($2::text[]) AS k`, [JOB, ['in-1', 'in-2']]);
    const workerPool = new pg.Pool({ connectionString: url, max: 3 });
    const hold = await holdShared(workerPool, 'the test dataset');
    const claims = createTaskClaims(workerPool, { workerId: 'w', leaseMs: 60_000, holderPid: hold.backendPid });
    const blocker = new pg.Client({ connectionString: url });
    await blocker.connect();
    try {
      expect((await claims.claim(filter, 2)).map((t) => t.inputKey)).toEqual(['in-1', 'in-2']);
      // The renewal locks in key order: held at in-1, it has taken its snapshot and holds nothing on in-2.
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM worker_task_leases WHERE input_key = 'in-1' FOR UPDATE`);
      const renewing = claims.renew();
      await waitFor(async () => (await waitingIn(pool, 'UPDATE worker_task_leases')) === 1, 10_000, 'the renewal to wait');
      // in-2 is given back (its task still pending, so due) and claimed again: a new lease row the renewal cannot see.
      await claims.release(JOB, ['in-2']);
      expect((await claims.claim(filter, 2)).map((t) => t.inputKey)).toEqual(['in-2']);
      await blocker.query('COMMIT');
      expect((await renewing).held.map((h) => h.inputKey)).toEqual(['in-1']);
      expect(await claims.holds(JOB, 'in-2')).toBe(true);
      expect(await claims.holds(JOB, 'in-1')).toBe(true);
    } finally {
      await blocker.end().catch(() => undefined);
      await hold.release();
      await workerPool.end();
    }
  });
});
