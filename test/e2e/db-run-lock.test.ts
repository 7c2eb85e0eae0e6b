import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { acquireRunLock, LockLostError, recentLockCheck, RUN_LOCK_DEFAULTS, type RunLock } from '../../src/store/run-lock.ts';
import { processFacts } from '../../src/store/process-identity.ts';
import { lockLeaseFromEnv } from '../../src/cli/commands/run.ts';

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
/** Writes the lock row another (maybe dead) process would have left; an older netingest wrote no start nor lease. */
function setLock(pid: number, host: string, heartbeatAgoMs = 0, extra: { processStart?: string | null; leaseMs?: number | null } = {}): void {
  const at = new Date(Date.now() - heartbeatAgoMs).toISOString();
  database.sqlite
    .prepare('INSERT OR REPLACE INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at, process_start, lease_ms) VALUES (1, ?, ?, 7, ?, ?, ?, ?)')
    .run(pid, host, at, at, extra.processStart ?? null, extra.leaseMs ?? null);
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

describe('acquireRunLock: pid and process start on this host, the lease across hosts', () => {
  const DAY_MS = 24 * 3600_000;

  it('records its own process start and lease', () => {
    acquireRunLock(database, { leaseMs: 1234 }).release();
    const lock = acquireRunLock(database, { leaseMs: 1234 });
    held.push(lock);
    const row = database.sqlite.prepare('SELECT process_start AS processStart, lease_ms AS leaseMs FROM run_lock').get();
    expect(row).toEqual({ processStart: processFacts(process.pid)!.start, leaseMs: 1234 });
  });

  it('never takes over a live process of this host that started when the lock was taken, however old its heartbeat', () => {
    setLock(process.ppid, HOST, DAY_MS, { processStart: processFacts(process.ppid)!.start, leaseMs: 1000 });
    expectRefused(process.ppid);
  });

  it('takes over at once a live pid whose process started at another time (the pid was reused)', () => {
    const facts = processFacts(process.ppid)!;
    setLock(process.ppid, HOST, 0, { processStart: `${facts.start}1` });
    expectTakenOver();
  });

  it('says the holder is stopped, and how to resume or end it, when it is', async () => {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      await new Promise((resolve) => child.once('spawn', resolve));
      const pid = child.pid!;
      child.kill('SIGSTOP');
      const stopped = () => processFacts(pid)?.state === 'T';
      for (let i = 0; i < 500 && !stopped(); i++) await new Promise((r) => setTimeout(r, 10));
      setLock(pid, HOST, DAY_MS, { processStart: processFacts(pid)!.start });
      expect(() => acquire()).toThrowError(`which is stopped (Ctrl-Z or SIGSTOP): resume it (fg, or kill -CONT ${pid}) or end it (kill ${pid})`);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it("takes another host's lock over only once the lease written in its row has run out since its heartbeat", () => {
    setLock(deadPid, 'other-host.example', 5_000, { leaseMs: 60_000 });
    expectRefused(deadPid);
    setLock(deadPid, 'other-host.example', 5_000, { leaseMs: 2_000 });
    expectTakenOver();
  });
});

describe('RunLock: finding it gone', () => {
  it('held() turns false for good once another holding replaced the row, tells onLost once, and whileHeld writes nothing', () => {
    const lock = acquire();
    lock.setRunId(3);
    const lost: LockLostError[] = [];
    lock.onLost((err) => lost.push(err));
    expect(lock.held()).toBe(true);
    expect(lock.whileHeld(() => 'written')).toBe('written');

    setLock(deadPid, 'other-host.example');
    expect(lock.held()).toBe(false);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toBeInstanceOf(LockLostError);
    expect(lost[0]!.code).toBe('LOCK_LOST');
    expect(lost[0]!.message).toMatch(/^run 3 lost the lock of .* run 7 holds it now \(pid \d+ on other-host.example, since /);
    let wrote = false;
    expect(() => lock.whileHeld(() => (wrote = true))).toThrowError(LockLostError);
    expect(wrote).toBe(false);
    // Even once the row is gone altogether, the lock is not ours again.
    database.sqlite.prepare('DELETE FROM run_lock').run();
    expect(lock.held()).toBe(false);
    expect(lost).toHaveLength(1);
  });

  it('whileHeld checks inside its own transaction: the write is not made', () => {
    const lock = acquire();
    database.sqlite.prepare(`UPDATE run_lock SET acquired_at = '2000-01-01T00:00:00.000Z'`).run();
    expect(() => lock.whileHeld(() => database.sqlite.prepare(`INSERT INTO netingest_meta (key, value) VALUES ('x', 'y')`).run())).toThrowError(LockLostError);
    expect(database.sqlite.prepare(`SELECT count(*) FROM netingest_meta WHERE key = 'x'`).pluck().get()).toBe(0);
  });
});

describe('NETINGEST_LOCK_LEASE_SECONDS', () => {
  it('sets the lease in seconds; unset is the default; a bad value is a usage error', () => {
    expect(lockLeaseFromEnv({})).toBeUndefined();
    expect(lockLeaseFromEnv({ NETINGEST_LOCK_LEASE_SECONDS: ' 90 ' })).toBe(90_000);
    expect(lockLeaseFromEnv({ NETINGEST_LOCK_LEASE_SECONDS: '1.5' })).toBe(1500);
    for (const bad of ['0', '0.5', '-3', 'abc', 'Infinity']) {
      expect(() => lockLeaseFromEnv({ NETINGEST_LOCK_LEASE_SECONDS: bad }), bad).toThrowError(expect.objectContaining({ code: 'USAGE' }));
    }
  });
});

describe('recentLockCheck', () => {
  it('reads the lock again once its last answer is older than the limit, and never caches a loss', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    try {
      let reads = 0;
      let ours = true;
      const held = recentLockCheck(() => (reads++, ours), 100);
      expect([held(), held(), held()]).toEqual([true, true, true]);
      expect(reads).toBe(1);
      vi.advanceTimersByTime(99);
      held();
      expect(reads).toBe(1);
      // A stall (SIGSTOP, a suspended VM) moves the monotonic clock: the first call after it reads the row.
      vi.advanceTimersByTime(5_000);
      ours = false;
      expect(held()).toBe(false);
      expect(held()).toBe(false);
      expect(reads).toBe(3);
    } finally {
      vi.useRealTimers();
    }
  });
});
