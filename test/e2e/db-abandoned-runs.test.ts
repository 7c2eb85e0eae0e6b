/**
 * Runs whose process died before writing their end: `netingest status` reports them without writing, and the
 * next run to take the lock closes them as abandoned with the figures the database holds for them.
 */
import { exitedPid } from '../support/run-helpers.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { acquireRunLock, type RunLock } from '../../src/store/run-lock.ts';
import { statusReads } from '../../src/store/status.ts';
import { readSync } from '../../src/store/read-steps.ts';

const HOST = hostname();
const T0 = '2026-01-01T00:00:00.000Z';

let dir: string;
let database: Database;
let deadPid: number;
const held: RunLock[] = [];

beforeAll(async () => {
  deadPid = await exitedPid();
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-abandoned-'));
  database = openDatabase(join(dir, 'netingest.db'));
  plantHistory();
});
afterEach(() => {
  for (const lock of held.splice(0)) lock.release();
  database.close();
  rmSync(dir, { recursive: true, force: true });
});

function at(seconds: number): string {
  return new Date(Date.parse(T0) + seconds * 1000).toISOString();
}

function call(runId: number, status: number | null, used: number | null, when: string, errorCode: string | null = null): void {
  database.sqlite
    .prepare(`INSERT INTO api_calls (run_id, task_id, operation, method, path, status, error_code, latency_ms, total_credits,
      credits_used, credits_remaining, at) VALUES (?, NULL, 'post-details', 'GET', '/post-details?url=x', ?, ?, 10, ?, ?, ?, ?)`)
    .run(runId, status, errorCode, used === null ? null : 1000, used, used === null ? null : 1000 - used, when);
}

function task(job: string, key: string, status: string, runId: number): void {
  database.sqlite
    .prepare(`INSERT INTO tasks (job, operation, input_key, page, request_json, status, created_at, updated_at, run_id)
      VALUES (?, 'post-details', ?, 1, '{}', ?, ?, ?, ?)`)
    .run(job, key, status, T0, T0, runId);
}

/**
 * Run 1 finished and taught a cost of 3 per call. Run 2 died after 5 calls: a 500, two paid 200s (the second
 * of the wrong shape, still paid), a 404 and a dropped connection. Run 3 died before its first call. The lock
 * names run 3's dead pid.
 */
function plantHistory(): void {
  const insertRun = database.sqlite.prepare(`INSERT INTO runs (id, jobs, started_at, ended_at, status, pid, host, credits_spent, calls)
    VALUES (?, '["posts"]', ?, ?, ?, ?, ?, ?, ?)`);
  insertRun.run(1, at(0), at(9), 'completed', deadPid, HOST, 9, 3);
  for (const [i, used] of [10, 13, 16].entries()) call(1, 200, used, at(i + 1));
  insertRun.run(2, at(10), null, 'running', deadPid, HOST, null, 0);
  call(2, 500, null, at(11), 'SERVER_ERROR');
  call(2, 200, 20, at(12));
  call(2, 200, 22, at(13), 'SCHEMA');
  call(2, 404, null, at(14));
  call(2, null, null, at(15), 'NETWORK');
  for (const [key, status] of [['a', 'done'], ['b', 'failed'], ['c', 'not_found'], ['d', 'pending'], ['e', 'deferred']] as const) {
    task('posts', key, status, 2);
  }
  // Another job's task stamped with run 2 is not one of its jobs' tasks; run 1's task is not run 2's either.
  task('other', 'z', 'done', 2);
  task('posts', 'y', 'done', 1);
  database.sqlite
    .prepare(`INSERT INTO invalid_inputs (job, file, line, reason, run_id, created_at) VALUES ('posts', 'p.csv', 3, 'bad url', 2, ?)`)
    .run(T0);
  insertRun.run(3, at(20), null, 'running', deadPid, HOST, null, 0);
  database.sqlite
    .prepare(`INSERT INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at) VALUES (1, ?, ?, 3, ?, ?)`)
    .run(deadPid, HOST, at(20), new Date().toISOString());
}

function run(id: number) {
  return database.sqlite
    .prepare(`SELECT status, ended_at AS endedAt, calls, tasks_total AS total, tasks_done AS done, tasks_not_found AS notFound,
      tasks_failed AS failed, tasks_deferred AS deferred, invalid_rows AS invalid, credits_at_start AS atStart,
      credits_at_end AS atEnd, credits_spent AS spent, exit_code AS exitCode, error FROM runs WHERE id = ?`)
    .get(id);
}

// Run 2's credits the way its own credit guard would have counted them: its first answer's cost is the
// median of the steps it knew (3 from run 1, then 22 - 20 = 2), so 22 - 20 + 3.
const RUN_2_SPENT = 5;

describe('status, before the next run', () => {
  it('does not call a run with a dead lock holder in progress, and counts what the unfinished runs spent', () => {
    const report = readSync(database.sqlite, statusReads());
    expect(report.lock).toMatchObject({ pid: deadPid, runId: 3, alive: false });
    expect(report.unfinishedRuns.map((r) => r.id)).toEqual([2, 3]);
    expect(report.creditsSpentAllRuns).toBe(9 + RUN_2_SPENT);
    expect(report.runs.find((r) => r.id === 2)).toMatchObject({ status: 'running', unfinished: true, calls: 5, tasksDone: 1, creditsSpent: RUN_2_SPENT });
    // Nothing written: both runs are still marked running.
    expect(database.sqlite.prepare(`SELECT count(*) FROM runs WHERE status = 'running'`).pluck().get()).toBe(2);
  });

  it('calls the live holder in progress, and only the runs of dead processes unfinished', () => {
    const lock = acquireRunLock(database);
    held.push(lock);
    database.sqlite.prepare(`INSERT INTO runs (id, jobs, started_at, status, pid, host) VALUES (4, '["posts"]', ?, 'running', ?, ?)`)
      .run(new Date().toISOString(), process.pid, HOST);
    lock.setRunId(4);
    call(4, 200, 40, new Date().toISOString());
    const report = readSync(database.sqlite, statusReads());
    expect(report.lock).toMatchObject({ pid: process.pid, runId: 4, alive: true });
    expect(report.unfinishedRuns).toEqual([]);
    expect(report.runs.find((r) => r.id === 4)).toMatchObject({ status: 'running', unfinished: false, calls: 1 });
  });
});

describe('taking the lock', () => {
  it('closes every run left marked running as abandoned, with the figures its committed rows show', () => {
    // Refused to it, the lock closes nothing: only the holder knows the runs marked running have lost their process.
    database.sqlite.prepare('UPDATE run_lock SET pid = ?').run(process.ppid);
    expect(() => acquireRunLock(database)).toThrowError(expect.objectContaining({ code: 'LOCKED' }));
    expect(database.sqlite.prepare(`SELECT id FROM runs WHERE status = 'running'`).pluck().all()).toEqual([2, 3]);
    database.sqlite.prepare('UPDATE run_lock SET pid = ?').run(deadPid);

    const lock = acquireRunLock(database);
    held.push(lock);
    expect(lock.abandonedRuns).toEqual([2, 3]);
    expect(run(2)).toEqual({
      status: 'abandoned',
      endedAt: at(15),
      calls: 5,
      total: 5,
      done: 1,
      notFound: 1,
      failed: 1,
      deferred: 2,
      invalid: 1,
      atStart: 1000 - 22 + RUN_2_SPENT,
      atEnd: 1000 - 22,
      spent: RUN_2_SPENT,
      exitCode: null,
      error: 'the process ended without finishing the run',
    });
    expect(run(3)).toMatchObject({ status: 'abandoned', endedAt: at(20), calls: 0, total: 0, spent: null, atEnd: null });
    expect(run(1)).toMatchObject({ status: 'completed', spent: 9, calls: 3 });
    expect(readSync(database.sqlite, statusReads()).creditsSpentAllRuns).toBe(9 + RUN_2_SPENT);
  });
});

describe('runs whose paid calls interleave (workers of two runs on one account, as on PostgreSQL)', () => {
  it('count each its own credits: the account counters between two of a run\'s answers hold the other run\'s calls too', () => {
    const insert = database.sqlite.prepare(`INSERT INTO runs (id, jobs, started_at, status, pid, host) VALUES (?, '["posts"]', ?, 'running', ?, ?)`);
    insert.run(4, at(30), deadPid, HOST);
    insert.run(5, at(30), deadPid, HOST);
    // 20 paid calls of 3 credits each, the runs' answers taking turns: 10 each, 60 credits billed in all.
    for (let i = 0; i < 20; i++) call(i % 2 === 0 ? 4 : 5, 200, 25 + 3 * (i + 1), at(31 + i));
    const spent = new Map(readSync(database.sqlite, statusReads()).runs.map((r) => [r.id, (r as { creditsSpent?: number | null }).creditsSpent]));
    expect(spent.get(4)).toBe(30);
    expect(spent.get(5)).toBe(30);
  });
});
