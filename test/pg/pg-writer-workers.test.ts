/**
 * Two workers' writers storing answers that name the same companies: each upserts them in key order, so one waits for
 * the other and neither deadlocks (in answer order, one took X then waited for Y while the other held Y and waited for
 * X: the server ended one, its paid answers lost and paid for again). A group the server ends on a conflict anyway is
 * written again, not given up. Sessions are held where the test needs them by an advisory lock a trigger takes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openPgStore, type PgStore } from '../../src/store/pg/open.ts';
import { PgOutcomeWriter } from '../../src/store/pg/pg-outcome-writer.ts';
import { canonicalCompanyUrl } from '../../src/urls/canonical.ts';
import { requestKeyOf } from '../../src/operations/index.ts';
import { readOperationAnswer } from '../support/store-helpers.ts';
import { company, similarRequest, similarResponse } from '../support/db-fixtures.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const AT = '2026-11-02T08:00:00.000Z';
const urlOf = (n: number) => {
  const c = canonicalCompanyUrl(company(n).url, 'network.com');
  if (!c.ok) throw new Error('fixture');
  return c.url;
};

describe.skipIf(!pgClusterUrl)(`two workers' writers${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let url: string;
  let store: PgStore;
  let blocker: pg.Client;

  beforeAll(async () => {
    url = await newMigratedPgDatabase('writer-workers');
    store = await openPgStore(url);
    for (let id = 1; id <= 4; id++) {
      await store.pool.query(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, status, attempts, created_at, updated_at)
        VALUES ($1, 'j', 'similar-companies', $2, 1, '{}', 'pending', 0, $3, $3)`, [id, `k${id}`, AT]);
    }
    blocker = new pg.Client({ connectionString: url });
    await blocker.connect();
  });
  afterAll(async () => {
    await blocker?.end();
    await store?.close();
  });

  /** Task `id`'s answer from `writer`: a similar-companies page naming companies `ns`, in that order. */
  function store1(writer: PgOutcomeWriter, id: number, ns: number[]): Promise<string | null> {
    const response = similarResponse(ns.map((n) => company(n)));
    const { answer: data, setAside } = readOperationAnswer('similar-companies', response);
    const request = { ...similarRequest(), referenceUrl: `https://network.com/company/reference-${id}` };
    const result = { raw: JSON.stringify(response), data, setAside, call: { operation: 'similar-companies', method: 'POST', path: '/s', status: 200, latencyMs: 1 }, credits: null };
    return writer.success({ id, operation: 'similar-companies' }, request, requestKeyOf(request), result as never, 1);
  }

  const deadlocks = async () => Number((await store.pool.query(`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`)).rows[0].deadlocks);

  it('answers naming the same companies in opposite orders: both stored, no deadlock', async () => {
    const fatal: unknown[] = [];
    // Writer a's session is held (an advisory lock the test holds) as it upserts company 72, after 71.
    const other = await openPgStore(`${url}${url.includes('?') ? '&' : '?'}application_name=writer_a`);
    await store.pool.query(`CREATE FUNCTION test_hold_a() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.url = '${urlOf(72)}' AND current_setting('application_name') = 'writer_a' THEN PERFORM pg_advisory_xact_lock(4242); END IF;
      RETURN NEW; END $$;
      CREATE TRIGGER test_hold_a BEFORE INSERT ON companies FOR EACH ROW EXECUTE FUNCTION test_hold_a()`);
    const [a, b] = [new PgOutcomeWriter(other.pool, 1, (err) => fatal.push(err)), new PgOutcomeWriter(store.pool, 2, (err) => fatal.push(err))];
    const before = await deadlocks();
    try {
      await blocker.query('SELECT pg_advisory_lock(4242)');
      const stored = [store1(a, 1, [71, 72])];
      await waitForLockWaits(store, 1);
      // In answer order b takes 72 and waits for a's 71; in key order it waits for 71 holding nothing.
      stored.push(store1(b, 2, [72, 71]));
      await waitForLockWaits(store, 2);
      await blocker.query('SELECT pg_advisory_unlock(4242)');
      expect(await Promise.all(stored)).toEqual([null, null]);
      await Promise.all([a.close(), b.close()]);
    } finally {
      await other.close();
      await store.pool.query('DROP TRIGGER test_hold_a ON companies; DROP FUNCTION test_hold_a()');
    }
    expect(fatal).toEqual([]);
    expect(await deadlocks()).toBe(before);
    const { rows } = await store.pool.query<{ id: string; status: string }>('SELECT id, status FROM tasks WHERE id IN (1, 2) ORDER BY id');
    expect(rows.map((r) => [Number(r.id), r.status])).toEqual([[1, 'done'], [2, 'done']]);
    const similar = await store.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM similar_companies');
    expect(similar.rows[0]!.n).toBe(4);
  });

  it('a group the server ends on a conflict with another transaction is written again', async () => {
    const fatal: unknown[] = [];
    const writer = new PgOutcomeWriter(store.pool, 3, (err) => fatal.push(err));
    // The first upsert of company 73 is ended as a deadlock ends it (a sequence counts past rollbacks); the next goes through.
    await store.pool.query(`CREATE SEQUENCE test_conflict_once;
      CREATE FUNCTION test_conflict_once() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.url = '${urlOf(73)}' AND nextval('test_conflict_once') = 1 THEN
        RAISE EXCEPTION 'deadlock detected (test)' USING ERRCODE = '40P01';
      END IF; RETURN NEW; END $$;
      CREATE TRIGGER test_conflict_once BEFORE INSERT ON companies FOR EACH ROW EXECUTE FUNCTION test_conflict_once()`);
    try {
      expect(await store1(writer, 3, [73])).toBeNull();
      await writer.close();
    } finally {
      await store.pool.query('DROP TRIGGER test_conflict_once ON companies; DROP FUNCTION test_conflict_once(); DROP SEQUENCE test_conflict_once');
    }
    expect(fatal).toEqual([]);
    const { rows } = await store.pool.query<{ status: string }>('SELECT status FROM tasks WHERE id = 3');
    expect(rows[0]!.status).toBe('done');
  });
});

/** Until `n` sessions of the database wait on a lock. */
async function waitForLockWaits(store: PgStore, n: number): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock'`);
    if (rows[0]!.n >= n) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`fewer than ${n} sessions waited on a lock`);
}
