/**
 * The run's writer against a real SQLite file: an outcome's promise resolves only once another connection can
 * read it whole; outcomes enqueued across turns of the event loop are all committed, a full batch at once; a
 * commit that fails (or finds the run's lock taken over) reports a clear error once, lets every waiter go,
 * and writes nothing after.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { createLedger } from '../../src/store/ledger.ts';
import { acquireRunLock, LockLostError } from '../../src/store/run-lock.ts';
import { RESULT_WRITER_DEFAULTS, ResultWriter } from '../../src/store/result-writer.ts';
import { DriftTally } from '../../src/operations/drift.ts';
import type { ApiCallInfo } from '../../src/api/types.ts';
import { credits, postRequest, postResponse } from '../support/db-fixtures.ts';

let dir: string;
let file: string;
let database: Database | null = null;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-writer-'));
  file = join(dir, 'w.db');
});
afterEach(() => {
  database?.close();
  database = null;
  rmSync(dir, { recursive: true, force: true });
});

/** The run's connection, as runJobs opens it. */
function open(): Database {
  database = openDatabase(file);
  return database;
}

/** The post id of the i-th task (strings: ids this long lose digits as numbers). */
const activity = (i: number) => `activity-70000000000${1000000 + i}`;
const postUrl = (i: number) => `https://network.com/posts/p_${activity(i)}`;

/** A dataset with one run and `n` pending post-details tasks (ids 1..n). */
function seed(n: number): void {
  const database = openDatabase(file);
  try {
    database.sqlite.exec(`INSERT INTO runs (id, status, started_at, jobs, pid, host) VALUES (1, 'running', '2026-01-01T00:00:00.000Z', '[]', 1, 'h')`);
    const tasks = Array.from({ length: n }, (_, i) => ({
      job: 'posts',
      operation: 'post-details',
      inputKey: postUrl(i),
      page: 1,
      requestJson: '{}',
      inputLine: i + 2,
    }));
    createLedger(database).insertPlanned(tasks, [], 1, '2026-01-01T00:00:00.000Z');
  } finally {
    database.close();
  }
}

function read<T>(sql: string): T {
  const sqlite = new BetterSqlite3(file, { readonly: true });
  try {
    return sqlite.prepare(sql).pluck().get() as T;
  } finally {
    sqlite.close();
  }
}

const call = (path: string): ApiCallInfo => ({ operation: 'post-details', method: 'GET', path, status: 200, latencyMs: 1 });

function ok(i: number) {
  const data = postResponse({ PostId: activity(i) });
  return { kind: 'ok' as const, data, raw: JSON.stringify(data), credits, call: call(`/p/${i}`), lastPage: true, drift: new DriftTally(), setAside: [] };
}

function request(i: number) {
  return { ...postRequest, postUrl: postUrl(i) };
}

describe('ResultWriter', () => {
  it('resolves an outcome only when another connection can read all of it', async () => {
    seed(1);
    const fatal: unknown[] = [];
    const writer = new ResultWriter(open(), 1, (err) => fatal.push(err));
    await writer.success({ id: 1, operation: 'post-details' }, request(0), 'k0', ok(0), 1);
    expect(read<string>(`SELECT status FROM tasks WHERE id = 1`)).toBe('done');
    expect(read<number>(`SELECT count(*) FROM raw_responses WHERE task_id = 1`)).toBe(1);
    expect(read<number>(`SELECT count(*) FROM api_calls WHERE task_id = 1 AND status = 200`)).toBe(1);
    expect(read<number>(`SELECT count(*) FROM posts`)).toBe(1);
    await writer.close();
    expect(fatal).toEqual([]);
  });

  it('commits every outcome enqueued across turns, each with its own kind; a full batch commits at once', async () => {
    const N = 300;
    seed(N);
    // Batches of 7 at most: some commit as they fill, the rest at the end of their turn.
    const writer = new ResultWriter(open(), 1, () => undefined, null, 7);
    const done: Promise<unknown>[] = [];
    for (let i = 0; i < N; i++) {
      const task = { id: i + 1, operation: 'post-details' as const };
      if (i % 3 === 0) done.push(writer.success(task, request(i), `k${i}`, ok(i), 1));
      else if (i % 3 === 1) done.push(writer.notFound(task, { ...call(`/p/${i}`), status: 404 }, 1, null));
      else done.push(writer.failed(task, 'SERVER_ERROR', 'HTTP 500', true, 3));
      // The first outcome was committed at the end of its turn (i = 0), the next 7 as soon as they filled a batch.
      if (i === 7) expect(read<number>(`SELECT count(*) FROM tasks WHERE status <> 'pending'`)).toBe(8);
      if (i % 25 === 0) await new Promise((r) => setImmediate(r));
    }
    await Promise.all(done);
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'done'`)).toBe(N / 3);
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'not_found'`)).toBe(N / 3);
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'failed' AND retryable = 1`)).toBe(N / 3);
    expect(read<number>(`SELECT count(*) FROM api_calls`)).toBe((2 * N) / 3);
    await writer.close();
  });

  it('hands the checkpoints to their thread only once checkpointerAfterCalls calls were handed over', async () => {
    const N = RESULT_WRITER_DEFAULTS.checkpointerAfterCalls;
    seed(N + 1);
    const connection = open();
    const writer = new ResultWriter(connection, 1, () => undefined);
    // The writer's setting while its thread checkpoints; SQLite's own (1,000 pages, on the committing connection) else.
    const autocheckpoint = () => connection.sqlite.pragma('wal_autocheckpoint', { simple: true });
    const answer = (i: number) => writer.notFound({ id: i + 1, operation: 'post-details' }, { ...call(`/p/${i}`), status: 404 }, 1, null);
    await Promise.all(Array.from({ length: N - 1 }, (_, i) => answer(i)));
    expect(autocheckpoint()).toBe(RESULT_WRITER_DEFAULTS.walAutocheckpointPagesAfter);
    await answer(N - 1);
    expect(autocheckpoint()).toBe(RESULT_WRITER_DEFAULTS.walAutocheckpointPages);
    await answer(N);
    await writer.close();
    expect(autocheckpoint()).toBe(RESULT_WRITER_DEFAULTS.walAutocheckpointPagesAfter);
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'not_found'`)).toBe(N + 1);
  });

  it('a commit that fails: the batch is rolled back whole, waiters are let go, nothing is written after', async () => {
    seed(3);
    const fatal: unknown[] = [];
    const writer = new ResultWriter(open(), 1, (err) => fatal.push(err));
    await writer.success({ id: 1, operation: 'post-details' }, request(0), 'k0', ok(0), 1);
    // An answer its operation cannot map to rows can only come from a bug upstream: the commit throws on it.
    const broken = Promise.all([
      writer.notFound({ id: 2, operation: 'post-details' }, { ...call('/p/1'), status: 404 }, 1, null),
      writer.success({ id: 3, operation: 'post-details' }, request(2), 'k2', { ...ok(2), data: null }, 1),
    ]);
    await broken;
    expect(fatal).toHaveLength(1);
    expect(fatal[0]).toBeInstanceOf(TypeError);
    await writer.failed({ id: 2, operation: 'post-details' }, 'X', 'after the failure', false, 1);
    await writer.close();
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'done'`)).toBe(1);
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'pending'`)).toBe(2);
    expect(read<number>(`SELECT count(*) FROM api_calls`)).toBe(1);
  });

  it('a group refused on a value: written again an outcome at a time, the refused answer kept apart, its task failed', async () => {
    seed(4);
    const fatal: unknown[] = [];
    const run = open();
    run.sqlite.exec(`CREATE TRIGGER test_refused BEFORE INSERT ON posts WHEN NEW.post_id = '${activity(1)}' BEGIN SELECT RAISE(ABORT, 'test_refused'); END`);
    const writer = new ResultWriter(run, 1, (err) => fatal.push(err));
    const task = (id: number) => ({ id, operation: 'post-details' as const });
    // One turn: one group, refused as a whole for its second answer.
    const said = await Promise.all([0, 1, 2].map((i) => writer.success(task(i + 1), request(i), `k${i}`, ok(i), 1)));
    await writer.failed(task(4), 'SERVER_ERROR', 'HTTP 500', true, 3);
    await writer.close();
    expect(fatal).toEqual([]);
    expect(said).toEqual([null, expect.stringMatching(/^the database refused this answer's rows: test_refused \[SQLITE_CONSTRAINT_TRIGGER\]$/), null]);
    const sqlite = new BetterSqlite3(file, { readonly: true });
    try {
      expect(sqlite.prepare('SELECT id, status, last_error_code AS code, retryable FROM tasks ORDER BY id').all()).toEqual([
        { id: 1, status: 'done', code: null, retryable: null },
        { id: 2, status: 'failed', code: 'STORE_REFUSED', retryable: 0 },
        { id: 3, status: 'done', code: null, retryable: null },
        { id: 4, status: 'failed', code: 'SERVER_ERROR', retryable: 1 },
      ]);
      expect(sqlite.prepare('SELECT post_id FROM posts ORDER BY post_id').pluck().all()).toEqual([activity(0), activity(2)]);
      // Its body is kept for reprocess, its call recorded as paid: ids in the order the outcomes came.
      expect(sqlite.prepare('SELECT task_id, error_code FROM raw_responses ORDER BY id').all()).toEqual([
        { task_id: 1, error_code: null }, { task_id: 2, error_code: 'STORE_REFUSED' }, { task_id: 3, error_code: null },
      ]);
      expect(sqlite.prepare('SELECT task_id, status, error_code FROM api_calls ORDER BY id').all()).toEqual([
        { task_id: 1, status: 200, error_code: null }, { task_id: 2, status: 200, error_code: 'STORE_REFUSED' }, { task_id: 3, status: 200, error_code: null },
      ]);
    } finally {
      sqlite.close();
    }
  });

  it('a group written again in parts counts the parts committed before a later part stops the writer', async () => {
    seed(3);
    const fatal: unknown[] = [];
    const run = open();
    run.sqlite.exec(`CREATE TRIGGER test_refused BEFORE INSERT ON posts WHEN NEW.post_id = '${activity(1)}' BEGIN SELECT RAISE(ABORT, 'test_refused'); END`);
    const writer = new ResultWriter(run, 1, (err) => fatal.push(err));
    const task = (id: number) => ({ id, operation: 'post-details' as const });
    // Refused on a value for its second answer; its third, alone, cannot be mapped to rows (a bug upstream) and stops it.
    await Promise.all([writer.success(task(1), request(0), 'k0', ok(0), 1), writer.success(task(2), request(1), 'k1', ok(1), 1),
      writer.success(task(3), request(2), 'k2', { ...ok(2), data: null }, 1)]);
    await writer.close();
    expect(fatal[0]).toBeInstanceOf(TypeError);
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'pending'`)).toBe(1);
    // What a run whose database is lost next says it settled: the two parts committed, as the ledger has them.
    expect(writer.settled).toEqual({ done: 1, notFound: 0, failed: 1, failedByCode: { STORE_REFUSED: 1 } });
  });

  it('with the run\'s lock taken over: the commit stores nothing and reports LOCK_LOST once', async () => {
    seed(2);
    const fatal: unknown[] = [];
    const run = open();
    const lock = acquireRunLock(run);
    const writer = new ResultWriter(run, 1, (err) => fatal.push(err), lock);
    await writer.success({ id: 1, operation: 'post-details' }, request(0), 'k0', ok(0), 1);
    // Another run took the lock over (this one was suspended past its lease): its row names another holding.
    run.sqlite.prepare(`UPDATE run_lock SET pid = pid + 1, acquired_at = '2026-01-01T00:00:00.000Z'`).run();
    await writer.success({ id: 2, operation: 'post-details' }, request(1), 'k1', ok(1), 1);
    await writer.failed({ id: 2, operation: 'post-details' }, 'X', 'after the loss', false, 1);
    await writer.close();
    expect(fatal).toHaveLength(1);
    expect(fatal[0]).toBeInstanceOf(LockLostError);
    expect((fatal[0] as LockLostError).code).toBe('LOCK_LOST');
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'done'`)).toBe(1);
    expect(read<number>(`SELECT count(*) FROM raw_responses`)).toBe(1);
    expect(read<number>(`SELECT count(*) FROM api_calls`)).toBe(1);
  });
});
