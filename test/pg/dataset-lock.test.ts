/**
 * The dataset's lock on both engines: a run holds it (SQLite's one-run lock row, PostgreSQL's advisory lock held
 * shared), and reprocess and prune, which rewrite under a run's feet, are refused while it does (exit 4) and go
 * ahead once it ends or is killed. Said once, run on each engine through the store every command uses. What
 * differs is marked as engine-specific: SQLite has one run at a time and tells a dead holder by its pid, host and
 * lease (the run_lock row's rules below); PostgreSQL's workers share the lock and the server lets go of a dead
 * one's session.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openPgStore } from '../../src/store/pg/open.ts';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { reprocessDatabase } from '../../src/runner/reprocess.ts';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { openStore } from '../../src/store/open-store.ts';
import { holdExclusive, holdShared } from '../../src/store/pg/dataset-lock.ts';
import { acquireRunLock, LockedError, LockLostError, recentLockCheck, RUN_LOCK_DEFAULTS, type RunLock } from '../../src/store/run-lock.ts';
import { processFacts } from '../../src/store/run-lock.ts';
import { lockLeaseFromEnv } from '../../src/cli/commands/run.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { exitedPid, inProcess } from '../support/run-helpers.ts';
import { forEachEngine, type TestDb } from './engines.ts';
import { newPgDatabase, pgClusterUrl, lockHolders, pgSkipReason } from './use-pg.ts';
import { workerArgs } from './worker-entry.ts';

const root = mkdtempSync(join(tmpdir(), 'netingest-dataset-lock-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let datasets = 0;

/** Holds the dataset as a run does, through the store every command uses, until the returned release. */
async function holdAsRun(db: TestDb): Promise<() => Promise<void>> {
  const run = await (await openStore(db.locator)).openRun({});
  // As the runner ends a run: the hold let go, then the store closed.
  return async () => {
    await run.hold.release();
    await run.close();
  };
}

/** Resolves once `check` holds, polling; rejects after 30 s. */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  for (const end = Date.now() + 30_000; !(await check()); ) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Whether a run could hold the dataset now (released at once when it could). */
async function freeForARun(db: TestDb): Promise<boolean> {
  try {
    await (await holdAsRun(db))();
    return true;
  } catch (err) {
    if (err instanceof LockedError) return false;
    throw err;
  }
}

/** Whether reprocess, which needs the dataset to itself, could rewrite it now (it does, when it can). */
async function rewritable(db: TestDb): Promise<boolean> {
  try {
    expect((await reprocessDatabase(db.locator)).invalid).toBe(0);
    return true;
  } catch (err) {
    if (err instanceof LockedError) return false;
    throw err;
  }
}

/** Whether the mark `dataset` put in the dataset is still there as written. */
const untouched = async (db: TestDb) => expect(await db.count(`SELECT count(*) FROM netingest_meta WHERE key = 'lock-test' AND value = 'untouched'`)).toBe(1);

// Each case its own dataset (advisory locks are per database too): run at once, one case's processes and waits
// overlap another's.
forEachEngine('the dataset lock', (engine) => {
  /** A new dataset with this build's schema and a mark the lock's refusals must leave as it is. */
  const dataset = async () => {
    const db = await engine.created(root, `dataset-${++datasets}.db`);
    await db.run(`INSERT INTO netingest_meta (key, value) VALUES ('lock-test', 'untouched')`);
    return db;
  };

  it.concurrent("a run's hold refuses reprocess and prune (LockedError, exit 4), changing nothing; once it ends they go ahead", async () => {
    const db = await dataset();
    const release = await holdAsRun(db);
    try {
      await expect(reprocessDatabase(db.locator)).rejects.toBeInstanceOf(LockedError);
      for (const command of [['reprocess'], ['prune', '--keep-days', '0']]) {
        const refused = await inProcess([...command, '--db', db.locator]);
        expect(refused.code, command[0]).toBe(EXIT.locked);
        expect(refused.stderr).toMatch(/is in use by (a running `netingest run`|run |netingest with no run id)/);
        // Which command was refused, said once: SQLite's refusal says so before the lock's sentence, PostgreSQL's lock names it.
        if (engine.name === 'sqlite') expect(refused.stderr).toMatch(new RegExp(`^netingest: \`netingest ${command[0]}\` was refused: the database \\S+ is in use by `));
        else expect(refused.stderr).toContain(`\`netingest ${command[0]}\`; netingest ${command[0]} waits for no one`);
      }
      await untouched(db);
    } finally {
      await release();
    }
    for (const command of [['reprocess'], ['prune', '--keep-days', '0']]) expect((await inProcess([...command, '--db', db.locator])).code, command[0]).toBe(EXIT.ok);
    expect(await freeForARun(db)).toBe(true);
  });

  it.concurrent('a run killed with SIGKILL keeps no one out: the next command goes ahead', async () => {
    const db = await dataset();
    const holder = spawn(process.execPath, [...workerArgs('hold-worker.ts'), db.locator], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = once(holder, 'exit');
    try {
      await once(holder.stdout!, 'data');
      expect(await rewritable(db)).toBe(false);
      holder.kill('SIGKILL');
      await exited;
      // SQLite: its pid is gone, so its row is taken over at once. PostgreSQL: the server ends the session once the
      // socket closes; polled rather than a guessed sleep.
      await until(() => rewritable(db), 'the killed holder to be let go');
      expect(await freeForARun(db)).toBe(true);
      await untouched(db);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it.runIf(engine.name === 'sqlite').concurrent('(SQLite) one run at a time: a second run is refused while the first holds the dataset', async () => {
    const db = await dataset();
    const release = await holdAsRun(db);
    try {
      await expect(holdAsRun(db)).rejects.toBeInstanceOf(LockedError);
    } finally {
      await release();
    }
    expect(await freeForARun(db)).toBe(true);
  });

  it.runIf(engine.name === 'postgres').concurrent('(PostgreSQL) runs share it: two workers hold it together, reprocess is refused until both end', async () => {
    const db = await dataset();
    const first = await holdAsRun(db);
    const second = await holdAsRun(db);
    await expect(reprocessDatabase(db.locator)).rejects.toBeInstanceOf(LockedError);
    await first();
    await expect(reprocessDatabase(db.locator)).rejects.toBeInstanceOf(LockedError);
    await second();
    expect((await reprocessDatabase(db.locator)).invalid).toBe(0);
  });
});

const pools: pg.Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});
function pool(url: string): pg.Pool {
  const p = new pg.Pool({ connectionString: url, max: 4 });
  // An idle pooled connection the server ends (idle_session_timeout below) is dropped, not a crash.
  p.on('error', () => undefined);
  pools.push(p);
  return p;
}

describe.skipIf(!pgClusterUrl)(`(PostgreSQL) the advisory lock's modes and session${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  // Each on a database of its own: run at once, the idle case's wait overlaps the other.
  it.concurrent('lets workers share it, refuses reprocess while one holds it, and refuses workers while reprocess holds it', async () => {
    const url = await newPgDatabase('lock');
    const a = pool(url);
    const b = pool(url);
    const w1 = await holdShared(a, 'the dataset');
    const w2 = await holdShared(b, 'the dataset');
    expect(await lockHolders(a)).toEqual(new Set([w1.backendPid, w2.backendPid]));
    await expect(holdExclusive(b, 'the dataset', 'netingest reprocess')).rejects.toBeInstanceOf(LockedError);
    await w1.release();
    await expect(holdExclusive(a, 'the dataset', 'netingest reprocess')).rejects.toThrow(/in use by a running `netingest run`/);
    await w2.release();
    await w2.release();
    const rewrite = await holdExclusive(a, 'the dataset', 'netingest reprocess');
    const refused = await holdShared(b, 'the dataset').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(LockedError);
    expect(String((refused as Error).message)).toMatch(/being rewritten by `netingest reprocess`/);
    expect(await lockHolders(b)).toEqual(new Set([rewrite.backendPid]));
    await rewrite.release();
    expect(await lockHolders(a)).toEqual(new Set());
    // Nothing leaked: every connection went back to its pool.
    expect(a.totalCount - a.idleCount).toBe(0);
    expect(b.totalCount - b.idleCount).toBe(0);
  });

  it.concurrent('keeps its session through a server idle_session_timeout, which would end an idle holder and its hold, as every pooled session', async () => {
    const url = await newPgDatabase('lock');
    const admin = pool(url);
    const version = Number((await admin.query<{ v: string }>('SHOW server_version_num')).rows[0]!.v);
    if (version < 140000) return; // no idle_session_timeout before PostgreSQL 14
    const db = (await admin.query<{ d: string }>('SELECT current_database() AS d')).rows[0]!.d;
    await admin.query(`ALTER DATABASE "${db}" SET idle_session_timeout = '300ms'`);
    // The store's pool turns it off for each session it opens, before handing it out.
    const store = await openPgStore(url);
    try {
      const held = await holdShared(store.pool, 'the dataset');
      const lost: Error[] = [];
      held.onLost((err) => lost.push(err));
      const other = await store.pool.connect();
      try {
        // Idle for three timeouts: a session the server ended is gone from lockHolders below, and fails its next query.
        await new Promise((r) => setTimeout(r, 900));
        expect(lost).toEqual([]);
        expect(await lockHolders(admin)).toEqual(new Set([held.backendPid]));
        expect((await other.query("SELECT current_setting('idle_session_timeout') AS t")).rows[0].t).toBe('0');
      } finally {
        other.release(true);
        await held.release();
      }
    } finally {
      await store.close();
    }
  });
});

describe('(SQLite) the run_lock row: who holds it, and a lost lock', () => {
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
    deadPid = await exitedPid();
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
      acquireRunLock(database, 1234).release();
      const lock = acquireRunLock(database, 1234);
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
});
