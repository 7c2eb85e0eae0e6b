/**
 * The PostgreSQL writer's groups: outcomes that arrive while a group commits go together in the next
 * transaction, instead of one small transaction per turn of the event loop queued behind it (the first of them
 * alone: it starts as it comes, pipelined behind the commit). The first group's commit is held on a row lock
 * another connection holds, so the test does not depend on timing; rows written by one transaction share its xmin.
 * A statement the server refuses fails the writer once, and nothing of its group or of the one behind it is kept.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openPgStore, type PgStore } from '../../src/store/pg/open.ts';
import { PgOutcomeWriter } from '../../src/store/pg/pg-outcome-writer.ts';
import type { ApiError } from '../../src/api/errors.ts';
import { readOperationAnswer } from '../support/store-helpers.ts';
import { requestKeyOf } from '../../src/operations/index.ts';
import { postRequest, postResponse } from '../support/db-fixtures.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const AT = '2026-11-02T08:00:00.000Z';

describe.skipIf(!pgClusterUrl)(`the PostgreSQL writer's groups${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let store: PgStore;
  let blocker: pg.Client;

  beforeAll(async () => {
    const url = await newMigratedPgDatabase('writer-groups');
    store = await openPgStore(url);
    for (let id = 1; id <= 19; id++) {
      await store.pool.query(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, status, attempts, created_at, updated_at)
        VALUES ($1, 'j', 'post-details', $2, 1, '{}', 'pending', 0, $3, $3)`, [id, `k${id}`, AT]);
    }
    blocker = new pg.Client({ connectionString: url });
    await blocker.connect();
  });
  afterAll(async () => {
    await blocker?.end();
    await store?.close();
  });

  it('groups flushed while one commits are committed together next, each outcome released once committed', async () => {
    const fatal: unknown[] = [];
    const writer = new PgOutcomeWriter(store.pool, 1, (err) => fatal.push(err));
    const task = (id: number) => ({ id, operation: 'post-details' as const });
    const attempt = (id: number) => ({ call: { operation: 'post-details', method: 'GET', path: `/p/${id}`, status: 500, latencyMs: 1 }, code: 'HTTP_500' }) as unknown as ApiError;
    await blocker.query('BEGIN');
    await blocker.query('SELECT id FROM tasks WHERE id = 1 FOR UPDATE');
    let settled = 0;
    const done = [writer.failed(task(1), 'HTTP_500', 'server error', true, 1).then(() => settled++)];
    // The first group waits on the row lock: its commit is under way while the next outcomes arrive.
    await waitForLockWait(store);
    for (let id = 2; id <= 6; id++) {
      await new Promise((resolve) => setImmediate(resolve)); // one outcome per turn of the event loop: one group each
      done.push(writer.attemptFailed(task(id), attempt(id)).then(() => settled++));
      done.push(writer.failed(task(id), 'HTTP_500', 'server error', true, 1).then(() => settled++));
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(settled).toBe(0);
    await blocker.query('COMMIT');
    await Promise.all(done);
    await writer.close();
    expect(fatal).toEqual([]);
    const { rows } = await store.pool.query<{ id: string; tx: string }>('SELECT id, xmin::text AS tx FROM tasks WHERE status = $1 AND id <= 6 ORDER BY id', ['failed']);
    expect(rows.map((r) => Number(r.id))).toEqual([1, 2, 3, 4, 5, 6]);
    // Task 1 in the first transaction; the first group that came during it next, alone (its history's reads were
    // sent behind the first one's COMMIT as it came); the four after it together in one more.
    expect(new Set(rows.map((r) => r.tx)).size).toBe(3);
    expect(new Set([rows[0]!.tx, rows[1]!.tx, rows[2]!.tx]).size).toBe(3);
    expect(new Set(rows.slice(2).map((r) => r.tx)).size).toBe(1);
    const calls = await store.pool.query<{ tx: string }>('SELECT DISTINCT xmin::text AS tx FROM api_calls ORDER BY 1');
    expect(calls.rows.map((r) => r.tx).sort()).toEqual([rows[1]!.tx, rows[2]!.tx].sort());
  });

  it('a group whose reads went ahead while the one before it committed sees what that one wrote', async () => {
    const fatal: unknown[] = [];
    const writer = new PgOutcomeWriter(store.pool, 1, (err) => fatal.push(err));
    const task = (id: number) => ({ id, operation: 'post-details' as const });
    // The same post answered twice, its text changed in between: the second answer's history is a change of the first's.
    const answer = (text: string) => {
      const response = postResponse({ PostId: 'activity-7000000000000000077', post: { ...postResponse().post, text_content: text } });
      const { answer: data, setAside } = readOperationAnswer('post-details', response);
      return { raw: JSON.stringify(response), data, setAside, call: { operation: 'post-details', method: 'GET', path: '/p', status: 200, latencyMs: 1 }, credits: null };
    };
    const request = { ...postRequest, postUrl: 'https://network.com/posts/p_activity-7000000000000000077' };
    await blocker.query('BEGIN');
    await blocker.query('SELECT id FROM tasks WHERE id = 7 FOR UPDATE');
    const first = writer.success(task(7), request, requestKeyOf(request), answer('before') as never, 1);
    await waitForLockWait(store);
    await new Promise((resolve) => setImmediate(resolve));
    const second = writer.success(task(8), request, requestKeyOf(request), answer('after') as never, 1);
    await new Promise((resolve) => setImmediate(resolve));
    await blocker.query('COMMIT');
    await Promise.all([first, second]);
    await writer.close();
    expect(fatal).toEqual([]);
    const { rows } = await store.pool.query<{ task: string; change: string; field: string | null; old: string | null; new: string | null }>(
      `SELECT task_id AS task, change, field, old, new FROM changes WHERE key LIKE '%7000000000000000077%' ORDER BY id`);
    expect(rows.filter((r) => r.change === 'added' && r.field === null).map((r) => Number(r.task))).toEqual([7]);
    expect(rows.filter((r) => Number(r.task) === 8)).toEqual([{ task: '8', change: 'changed', field: 'text_content', old: 'before', new: 'after' }]);
  });

  it('a refused statement fails the writer once: its group and the one started behind it are not committed, the one before is', async () => {
    const fatal: unknown[] = [];
    const writer = new PgOutcomeWriter(store.pool, 1, (err) => fatal.push(err));
    const task = (id: number) => ({ id, operation: 'post-details' as const });
    const attempt = (id: number, path: string) => ({ call: { operation: 'post-details', method: 'GET', path, status: 500, latencyMs: 1 }, code: 'HTTP_500' }) as unknown as ApiError;
    // api_calls refuses this path: the group's rows fail on the server, after its BEGIN and reads were answered.
    await store.pool.query(`ALTER TABLE api_calls ADD CONSTRAINT test_refused_path CHECK (path <> '/refused') NOT VALID`);
    try {
      await writer.failed(task(9), 'HTTP_500', 'server error', true, 1);
      const refused = [writer.attemptFailed(task(10), attempt(10, '/refused')), writer.failed(task(10), 'HTTP_500', 'server error', true, 1)];
      // The next turn's group starts as the refused one's COMMIT is sent, before its answer.
      await new Promise((resolve) => setImmediate(resolve));
      const behind = [writer.attemptFailed(task(11), attempt(11, '/fine')), writer.failed(task(11), 'HTTP_500', 'server error', true, 1)];
      await Promise.all([...refused, ...behind]);
      await writer.close();
    } finally {
      await store.pool.query('ALTER TABLE api_calls DROP CONSTRAINT test_refused_path');
    }
    expect(fatal).toHaveLength(1);
    expect(String((fatal[0] as Error).message)).toMatch(/test_refused_path/);
    expect(writer.error).toBe(fatal[0]);
    const { rows } = await store.pool.query<{ id: string; status: string }>('SELECT id, status FROM tasks WHERE id BETWEEN 9 AND 11 ORDER BY id');
    expect(rows.map((r) => [Number(r.id), r.status])).toEqual([[9, 'failed'], [10, 'pending'], [11, 'pending']]);
    const calls = await store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM api_calls WHERE task_id IN (10, 11)`);
    expect(calls.rows[0]!.n).toBe(0);
  });

  it('a group refused on a value is written again an outcome at a time with the one behind it, the refused answer kept apart', async () => {
    const fatal: unknown[] = [];
    const writer = new PgOutcomeWriter(store.pool, 1, (err) => fatal.push(err));
    const post = (id: number) => storePost(writer, id, '1');
    await store.pool.query(`ALTER TABLE posts ADD CONSTRAINT test_refused_post CHECK (post_id <> 'activity-7000000000000000113') NOT VALID`);
    let said: Array<string | null>;
    try {
      // One turn's group, refused for its second answer; the next turn's group starts behind it before that is known.
      const group = [post(12), post(13), post(14)];
      await new Promise((resolve) => setImmediate(resolve));
      said = await Promise.all([...group, post(15)]);
      await writer.close();
    } finally {
      await store.pool.query('ALTER TABLE posts DROP CONSTRAINT test_refused_post');
    }
    expect(fatal).toEqual([]);
    expect(said).toEqual([null, expect.stringMatching(/^the database refused this answer's rows: .*test_refused_post.* \[23514\]$/), null, null]);
    const tasks = await store.pool.query<{ id: string; status: string; code: string | null; retryable: number | null }>(
      'SELECT id, status, last_error_code AS code, retryable FROM tasks WHERE id BETWEEN 12 AND 15 ORDER BY id');
    expect(tasks.rows.map((r) => [Number(r.id), r.status, r.code, r.retryable])).toEqual([
      [12, 'done', null, null], [13, 'failed', 'STORE_REFUSED', 0], [14, 'done', null, null], [15, 'done', null, null],
    ]);
    const posts = await store.pool.query<{ id: string }>("SELECT post_id AS id FROM posts WHERE post_id LIKE 'activity-70000000000000001%' ORDER BY 1");
    expect(posts.rows.map((r) => r.id)).toEqual(['activity-7000000000000000112', 'activity-7000000000000000114', 'activity-7000000000000000115']);
    // Every body kept, in the order the outcomes came; the refused one for reprocess.
    const raw = await store.pool.query<{ task: string; code: string | null }>('SELECT task_id AS task, error_code AS code FROM raw_responses WHERE task_id BETWEEN 12 AND 15 ORDER BY id');
    expect(raw.rows.map((r) => [Number(r.task), r.code])).toEqual([[12, null], [13, 'STORE_REFUSED'], [14, null], [15, null]]);
  });

  it('a group written again in parts counts the parts committed before a later part stops the writer', async () => {
    const fatal: unknown[] = [];
    const writer = new PgOutcomeWriter(store.pool, 1, (err) => fatal.push(err));
    const post = (id: number) => storePost(writer, id, '2');
    // The group is refused on a value for its second answer; its third answer, alone, fails as no value does (P0001).
    await store.pool.query(`ALTER TABLE posts ADD CONSTRAINT test_refused_post2 CHECK (post_id <> 'activity-7000000000000000218') NOT VALID`);
    await store.pool.query(`CREATE FUNCTION test_stop_post() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.post_id = 'activity-7000000000000000219' THEN RAISE EXCEPTION 'test stop in session %', pg_backend_pid(); END IF; RETURN NEW; END $$`);
    await store.pool.query('CREATE TRIGGER test_stop_post BEFORE INSERT ON posts FOR EACH ROW EXECUTE FUNCTION test_stop_post()');
    try {
      await Promise.all([post(17), post(18), post(19)]);
      await writer.close();
    } finally {
      await store.pool.query('DROP TRIGGER test_stop_post ON posts; DROP FUNCTION test_stop_post(); ALTER TABLE posts DROP CONSTRAINT test_refused_post2');
    }
    expect(String((fatal[0] as Error).message)).toMatch(/test stop/);
    const tasks = await store.pool.query<{ id: string; status: string }>('SELECT id, status FROM tasks WHERE id BETWEEN 17 AND 19 ORDER BY id');
    expect(tasks.rows.map((r) => [Number(r.id), r.status])).toEqual([[17, 'done'], [18, 'failed'], [19, 'pending']]);
    // What a run whose database is lost next says it settled: the two parts committed, as the ledger has them.
    expect(writer.settled).toEqual({ done: 1, notFound: 0, failed: 1, failedByCode: { STORE_REFUSED: 1 } });
    // The failed session is closed, not pooled: answers to batches sent behind the failure would reach the next query.
    const failedPid = Number(/test stop in session (\d+)/.exec(String((fatal[0] as Error).message))?.[1]);
    const idle = await Promise.all(Array.from({ length: store.pool.idleCount }, () => store.pool.connect()));
    for (const client of idle) client.release();
    expect(idle.map((c) => (c as unknown as { processID: number }).processID)).not.toContain(failedPid);
  });
});

/** Task `id`'s paid post-details answer handed to `writer`, its PostId `activity-7000000000000000<series><id>`. */
function storePost(writer: PgOutcomeWriter, id: number, series: string): Promise<string | null> {
  const response = postResponse({ PostId: `activity-7000000000000000${series}${id}` });
  const { answer: data, setAside } = readOperationAnswer('post-details', response);
  const request = { ...postRequest, postUrl: `https://network.com/posts/p_activity-7000000000000000${series}${id}` };
  const result = { raw: JSON.stringify(response), data, setAside, call: { operation: 'post-details', method: 'GET', path: `/p/${id}`, status: 200, latencyMs: 1 }, credits: null };
  return writer.success({ id, operation: 'post-details' }, request, requestKeyOf(request), result as never, 1);
}

/** Until the writer's first transaction waits on the blocker's row lock. */
async function waitForLockWait(store: PgStore): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await store.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity
      WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%UPDATE tasks%'`);
    if (rows[0]!.n > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the writer never waited on the row lock');
}
