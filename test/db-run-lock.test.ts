import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../src/db/open.ts';
import { acquireRunLock, RUN_LOCK_DEFAULTS, type RunLock } from '../src/db/run-lock.ts';

const HOST = hostname();
const STALE_MS = RUN_LOCK_DEFAULTS.leaseMs + 60_000;

let dir: string;
let database: Database;
let deadPid: number;
const held: RunLock[] = [];

interface Row {
  pid: number;
  host: string;
  runId: number | null;
  acquiredAt: string;
  heartbeatAt: string;
}

function acquire(): RunLock {
  const lock = acquireRunLock(database);
  held.push(lock);
  return lock;
}
/** Writes the lock row another (maybe dead) process would have left. */
function setLock(pid: number, host: string, heartbeatAgoMs = 0): void {
  const at = new Date(Date.now() - heartbeatAgoMs).toISOString();
  database.sqlite
    .prepare('INSERT OR REPLACE INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at) VALUES (1, ?, ?, 7, ?, ?)')
    .run(pid, host, at, at);
}
function lockRow(): Row | undefined {
  return database.sqlite
    .prepare('SELECT pid, host, run_id AS runId, acquired_at AS acquiredAt, heartbeat_at AS heartbeatAt FROM run_lock WHERE id = 1')
    .get() as Row | undefined;
}
/** Acquires, and checks the row is now ours: the rows the tests plant name run 7, a fresh lock no run yet. */
function expectTakenOver(): void {
  acquire();
  expect(lockRow()).toMatchObject({ pid: process.pid, host: HOST, runId: null });
}
function expectRefused(pid: number): void {
  expect(() => acquire()).toThrowError(expect.objectContaining({ code: 'LOCKED', message: expect.stringContaining(`pid ${pid} `) }));
}

beforeAll(async () => {
  const child = spawn(process.execPath, ['-e', '0']);
  deadPid = await new Promise<number>((resolve) => child.once('exit', () => resolve(child.pid!)));
});
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-run-lock-'));
  database = openDatabase(join(dir, 'netingest.db'));
});
afterEach(() => {
  for (const lock of held.splice(0)) lock.release();
  database.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('acquireRunLock: who counts as a live holder', () => {
  it('takes over a lock naming this very pid that this process does not hold (PID 1 after a SIGKILL)', () => {
    setLock(process.pid, HOST, 1_000);
    expectTakenOver();
  });

  it('takes over a lock naming this very pid whose heartbeat is stale', () => {
    setLock(process.pid, HOST, STALE_MS);
    expectTakenOver();
  });

  it('takes over a lock of a dead pid on this host', () => {
    setLock(deadPid, HOST);
    expectTakenOver();
  });

  it('refuses a lock of a live process on this host with a fresh heartbeat, naming it', () => {
    setLock(process.ppid, HOST, 1_000);
    expectRefused(process.ppid);
  });

  it('takes over a lock whose pid is alive but whose heartbeat is stale (the pid was reused)', () => {
    setLock(process.ppid, HOST, STALE_MS);
    expectTakenOver();
  });

  it('refuses another host with a fresh heartbeat and takes it over once stale', () => {
    setLock(deadPid, 'other-host.example', 1_000);
    expectRefused(deadPid);
    setLock(deadPid, 'other-host.example', STALE_MS);
    expectTakenOver();
  });

  it('refuses a second lock in the same process while the first is held, even with a stale heartbeat', () => {
    const first = acquire();
    expectRefused(process.pid);
    database.sqlite.prepare('UPDATE run_lock SET heartbeat_at = ?').run(new Date(Date.now() - STALE_MS).toISOString());
    expectRefused(process.pid);
    first.release();
    expect(lockRow()).toBeUndefined();
    expectTakenOver();
  });

  it('takes over a lock this process failed to release', () => {
    const first = acquire();
    first.setRunId(7);
    // What a release whose DELETE failed leaves behind: the row, but no live run behind it.
    const row = lockRow()!;
    first.release();
    database.sqlite
      .prepare('INSERT INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at) VALUES (1, ?, ?, 7, ?, ?)')
      .run(row.pid, row.host, row.acquiredAt, row.heartbeatAt);
    expectTakenOver();
  });

  it('a lock that was taken over neither refreshes nor releases the new holder', () => {
    const first = acquire();
    // A later holder with the same pid and host (an earlier incarnation's row taken over by a later one).
    setLock(process.pid, HOST, 1_000);
    const theirs = lockRow();
    first.setRunId(99);
    first.release();
    expect(lockRow()).toEqual(theirs);
  });
});
