/**
 * Runs whose process died before writing their end, on both engines: `status` reports them without writing, and
 * the next run to hold the dataset closes them as abandoned with the figures the database holds for them (calls,
 * tasks by status, invalid rows, credits replayed from the counters). Said once, through the store every command
 * uses. What tells a dead run differs, and is marked engine-specific: on SQLite the run_lock row's holder (its
 * pid), on PostgreSQL the worker's session (test/pg/pg-run-hold.test.ts: a worker killed on another host). Runs
 * whose paid calls interleave: test/pg/status-interleaved-credits.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.ts';
import type { RunStore } from '../../src/store/run-store.ts';
import { statusReads } from '../../src/store/status.ts';
import { exitedPid } from '../support/run-helpers.ts';
import { forEachEngine, SQLITE, type TestDb, type TestEngine } from './engines.ts';

const HOST = hostname();
const T0 = '2026-01-01T00:00:00.000Z';
const root = mkdtempSync(join(tmpdir(), 'netingest-abandoned-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let datasets = 0;

let deadPid: number;
beforeAll(async () => {
  deadPid = await exitedPid();
});

function at(seconds: number): string {
  return new Date(Date.parse(T0) + seconds * 1000).toISOString();
}

// Run 2's credits the way its own credit guard would have counted them: its first answer's cost is the
// median of the steps it knew (3 from run 1, then 22 - 20 = 2), so 22 - 20 + 3.
const RUN_2_SPENT = 5;

/**
 * Run 1 finished and taught a cost of 3 per call. Run 2 died after 5 calls: a 500, two paid 200s (the second
 * of the wrong shape, still paid), a 404 and a dropped connection. Run 3 died before its first call. On SQLite
 * the run lock still names run 3's dead pid; on PostgreSQL no session holds the dataset for either.
 */
async function planted(engine: TestEngine): Promise<TestDb> {
  const db = await engine.created(root, `abandoned-${++datasets}.db`);
  const run = (id: number, start: number, end: number | null, status: string, spent: number | null, calls: number) =>
    db.run(`INSERT INTO runs (id, jobs, started_at, ended_at, status, pid, host, credits_spent, calls) VALUES (?, '["posts"]', ?, ?, ?, ?, ?, ?, ?)`,
      id, at(start), end === null ? null : at(end), status, deadPid, HOST, spent, calls);
  const call = (runId: number, status: number | null, used: number | null, when: number, errorCode: string | null = null) =>
    db.run(`INSERT INTO api_calls (run_id, task_id, operation, method, path, status, error_code, latency_ms, total_credits,
      credits_used, credits_remaining, at) VALUES (?, NULL, 'post-details', 'GET', '/post-details', ?, ?, 10, ?, ?, ?, ?)`,
      runId, status, errorCode, used === null ? null : 1000, used, used === null ? null : 1000 - used, at(when));
  const task = (job: string, key: string, status: string, runId: number) =>
    db.run(`INSERT INTO tasks (job, operation, input_key, page, request_json, status, created_at, updated_at, run_id)
      VALUES (?, 'post-details', ?, 1, '{}', ?, ?, ?, ?)`, job, key, status, T0, T0, runId);

  await run(1, 0, 9, 'completed', 9, 3);
  for (const [i, used] of [10, 13, 16].entries()) await call(1, 200, used, i + 1);
  await run(2, 10, null, 'running', null, 0);
  await call(2, 500, null, 11, 'SERVER_ERROR');
  await call(2, 200, 20, 12);
  await call(2, 200, 22, 13, 'SCHEMA');
  await call(2, 404, null, 14);
  await call(2, null, null, 15, 'NETWORK');
  for (const [key, status] of [['a', 'done'], ['b', 'failed'], ['c', 'not_found'], ['d', 'pending'], ['e', 'deferred']] as const) {
    await task('posts', key, status, 2);
  }
  // Another job's task stamped with run 2 is not one of its jobs' tasks; run 1's task is not run 2's either.
  await task('other', 'z', 'done', 2);
  await task('posts', 'y', 'done', 1);
  await db.run(`INSERT INTO invalid_inputs (job, file, line, reason, run_id, created_at) VALUES ('posts', 'p.csv', 3, 'bad url', 2, ?)`, T0);
  await run(3, 20, null, 'running', null, 0);
  if (engine.name === 'sqlite') {
    await db.run(`INSERT INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at) VALUES (1, ?, ?, 3, ?, ?)`,
      deadPid, HOST, at(20), new Date().toISOString());
  } else {
    // The ids were given: the next run's own comes after them.
    await db.run(`SELECT setval(pg_get_serial_sequence('runs', 'id'), 3)`);
  }
  return db;
}

/** `status`'s report, read as the command reads it. */
async function status(db: TestDb) {
  return (await openStore(db.locator)).read((snapshot) => snapshot.read(statusReads()));
}

/** A run of this process holding the dataset, started as the runner starts one. */
async function startRun(db: TestDb): Promise<{ store: RunStore; id: number }> {
  const store = await (await openStore(db.locator)).openRun({});
  const { id } = await store.runs.start({ jobs: ['posts'], startedAt: new Date().toISOString(), pid: process.pid, host: HOST });
  store.hold.setRunId(id);
  return { store, id };
}

async function closeRun(store: RunStore): Promise<void> {
  await store.hold.release();
  await store.close();
}

const runFigures = (db: TestDb, id: number) =>
  db.rows(`SELECT status, ended_at AS "endedAt", calls, tasks_total AS total, tasks_done AS done, tasks_not_found AS "notFound",
    tasks_failed AS failed, tasks_deferred AS deferred, invalid_rows AS invalid, credits_at_start AS "atStart",
    credits_at_end AS "atEnd", credits_spent AS spent, exit_code AS "exitCode", error FROM runs WHERE id = ?`, id).then((r) => r[0]);

forEachEngine('runs whose process died', (engine) => {
  it.concurrent('status does not call them in progress, counts what they spent, and writes nothing', async () => {
    const db = await planted(engine);
    const report = await status(db);
    expect(report.unfinishedRuns.map((r) => r.id)).toEqual([2, 3]);
    expect(report.creditsSpentAllRuns).toBe(9 + RUN_2_SPENT);
    expect(report.runs.find((r) => r.id === 2)).toMatchObject({ status: 'running', unfinished: true, calls: 5, tasksDone: 1, creditsSpent: RUN_2_SPENT });
    // Engine-specific: SQLite tells them dead by the lock's holder, whose pid is gone; PostgreSQL keeps no lock row.
    expect(report.lock).toEqual(engine.name === 'sqlite' ? expect.objectContaining({ pid: deadPid, runId: 3, alive: false }) : null);
    // Nothing written: both runs are still marked running.
    expect(await db.count(`SELECT count(*) FROM runs WHERE status = 'running'`)).toBe(2);
  });

  it.concurrent('status calls a live run in progress, and the same run unfinished once its hold is gone without its end', async () => {
    const db = await planted(engine);
    const { store, id } = await startRun(db);
    try {
      await db.run(`INSERT INTO api_calls (run_id, operation, method, path, status, latency_ms, total_credits, credits_used, credits_remaining, at)
        VALUES (?, 'post-details', 'GET', '/post-details', 200, 10, 1000, 40, 960, ?)`, id, new Date().toISOString());
      const live = await status(db);
      expect(live.unfinishedRuns).toEqual([]);
      expect(live.runs.find((r) => r.id === id)).toMatchObject({ status: 'running', unfinished: false, calls: 1 });
      if (engine.name === 'sqlite') expect(live.lock).toMatchObject({ pid: process.pid, runId: id, alive: true });
    } finally {
      // Its hold goes without its end written. Engine-specific: SQLite's lock row released (a killed run's is told by
      // its pid, as planted above); PostgreSQL's session ended, as a killed worker's is.
      await (engine.name === 'sqlite' ? closeRun(store) : store.close());
    }
    const gone = await status(db);
    expect(gone.unfinishedRuns.map((r) => r.id)).toEqual([id]);
    expect(gone.runs.find((r) => r.id === id)).toMatchObject({ status: 'running', unfinished: true, calls: 1 });
    // status only reads: the row stays for the next run to close.
    expect(await db.rows(`SELECT status FROM runs WHERE id = ?`, id)).toEqual([{ status: 'running' }]);
  });

  it.concurrent('the next run closes every run left marked running as abandoned, with the figures its committed rows show', async () => {
    const db = await planted(engine);
    const { store } = await startRun(db);
    try {
      expect(store.hold.abandonedRuns).toEqual([2, 3]);
      expect(await runFigures(db, 2)).toEqual({
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
      expect(await runFigures(db, 3)).toMatchObject({ status: 'abandoned', endedAt: at(20), calls: 0, total: 0, spent: null, atEnd: null });
      expect(await runFigures(db, 1)).toMatchObject({ status: 'completed', spent: 9, calls: 3 });
      expect((await status(db)).creditsSpentAllRuns).toBe(9 + RUN_2_SPENT);
    } finally {
      await closeRun(store);
    }
  });
});

describe('runs whose process died (sqlite only: the run lock row)', () => {
  it('a run refused the lock (its holder alive) closes nothing: only the holder knows the runs marked running have lost their process', async () => {
    const db = await planted(SQLITE);
    await db.run('UPDATE run_lock SET pid = ?', process.ppid);
    await expect((await openStore(db.locator)).openRun({})).rejects.toThrowError(expect.objectContaining({ code: 'LOCKED' }));
    expect((await db.rows<{ id: number }>(`SELECT id FROM runs WHERE status = 'running'`)).map((r) => r.id)).toEqual([2, 3]);
    await db.run('UPDATE run_lock SET pid = ?', deadPid);
    const { store } = await startRun(db);
    await closeRun(store);
    expect((await db.rows<{ status: string }>('SELECT status FROM runs WHERE id IN (2, 3)')).map((r) => r.status)).toEqual(['abandoned', 'abandoned']);
  });
});
