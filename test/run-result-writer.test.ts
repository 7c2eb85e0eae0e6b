/**
 * The run's writer thread against a real SQLite file: an outcome's promise resolves only once another
 * connection can read it whole; outcomes sent while a commit is under way are all committed; a thread that
 * cannot open the file or commit reports a clear error once, lets every waiter go, and writes nothing after.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/open.ts';
import { createLedger } from '../src/store/ledger.ts';
import { DatabaseError } from '../src/store/errors.ts';
import { ResultWriter } from '../src/runner/result-writer.ts';
import { DriftTally } from '../src/operations/drift.ts';
import type { ApiCallInfo } from '../src/api/types.ts';
import { credits, postRequest, postResponse } from './db-fixtures.ts';

let dir: string;
let file: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-writer-'));
  file = join(dir, 'w.db');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

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

function ok(i: number, body?: string) {
  const data = postResponse({ PostId: activity(i) });
  return { kind: 'ok' as const, data, raw: body ?? JSON.stringify(data), credits, call: call(`/p/${i}`), lastPage: true, drift: new DriftTally(), setAside: 0 };
}

function request(i: number) {
  return { ...postRequest, postUrl: postUrl(i) };
}

describe('ResultWriter', () => {
  it('resolves an outcome only when another connection can read all of it', async () => {
    seed(1);
    const fatal: unknown[] = [];
    const writer = new ResultWriter(file, 1, (err) => fatal.push(err));
    await writer.ready;
    await writer.success({ id: 1, operation: 'post-details' }, request(0), 'k0', ok(0), 1);
    expect(read<string>(`SELECT status FROM tasks WHERE id = 1`)).toBe('done');
    expect(read<number>(`SELECT count(*) FROM raw_responses WHERE task_id = 1`)).toBe(1);
    expect(read<number>(`SELECT count(*) FROM api_calls WHERE task_id = 1 AND status = 200`)).toBe(1);
    expect(read<number>(`SELECT count(*) FROM posts`)).toBe(1);
    await writer.close();
    expect(fatal).toEqual([]);
  });

  it('commits every outcome sent while a commit is under way, each with its own kind', async () => {
    const N = 300;
    seed(N);
    const writer = new ResultWriter(file, 1, () => undefined);
    await writer.ready;
    const done: Promise<void>[] = [];
    for (let i = 0; i < N; i++) {
      const task = { id: i + 1, operation: 'post-details' as const };
      if (i % 3 === 0) done.push(writer.success(task, request(i), `k${i}`, ok(i), 1));
      else if (i % 3 === 1) done.push(writer.notFound(task, { ...call(`/p/${i}`), status: 404 }, 1, null));
      else done.push(writer.failed(task, 'SERVER_ERROR', 'HTTP 500', true, 3));
      // Spread over several turns, so that some outcomes reach the thread while it commits others.
      if (i % 25 === 0) await new Promise((r) => setImmediate(r));
    }
    await Promise.all(done);
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'done'`)).toBe(N / 3);
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'not_found'`)).toBe(N / 3);
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'failed' AND retryable = 1`)).toBe(N / 3);
    expect(read<number>(`SELECT count(*) FROM api_calls`)).toBe((2 * N) / 3);
    await writer.close();
  });

  it('a file it cannot open: ready rejects with a DatabaseError naming the file, reported once', async () => {
    writeFileSync(file, Buffer.alloc(8192, 7));
    const fatal: unknown[] = [];
    const writer = new ResultWriter(file, 1, (err) => fatal.push(err));
    const err = await writer.ready.then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseError);
    expect((err as DatabaseError).message).toContain(file);
    expect(fatal).toHaveLength(1);
    // Outcomes after the failure are let go at once, not left hanging.
    await writer.success({ id: 1, operation: 'post-details' }, request(0), 'k0', ok(0), 1);
    await writer.close();
  });

  it('a commit that fails: the batch is rolled back whole, waiters are let go, nothing is written after', async () => {
    seed(3);
    const fatal: unknown[] = [];
    const writer = new ResultWriter(file, 1, (err) => fatal.push(err));
    await writer.ready;
    await writer.success({ id: 1, operation: 'post-details' }, request(0), 'k0', ok(0), 1);
    // A body that is not JSON can only come from a bug upstream: the thread's commit throws on it.
    const broken = Promise.all([
      writer.notFound({ id: 2, operation: 'post-details' }, { ...call('/p/1'), status: 404 }, 1, null),
      writer.success({ id: 3, operation: 'post-details' }, request(2), 'k2', ok(2, '{not json'), 1),
    ]);
    await broken;
    expect(fatal).toHaveLength(1);
    expect(String((fatal[0] as Error).message)).toMatch(/JSON/);
    await writer.failed({ id: 2, operation: 'post-details' }, 'X', 'after the failure', false, 1);
    await writer.close();
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'done'`)).toBe(1);
    expect(read<number>(`SELECT count(*) FROM tasks WHERE status = 'pending'`)).toBe(2);
    expect(read<number>(`SELECT count(*) FROM api_calls`)).toBe(1);
  });
});
