import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type BetterSqlite3 from 'better-sqlite3';
import { NetingestError } from '../errors.ts';
import { toDatabaseUseError } from './connection.ts';
import type { Database } from './open.ts';
import { closeAbandonedRuns } from './abandoned-runs.ts';
import { rows, type Reads } from './read-steps.ts';
import type { RunHold } from './run-store.ts';

/** Another live process is running against this database (exit code 4). */
export class LockedError extends NetingestError {
  constructor(message: string) {
    super('LOCKED', message);
  }
}

/**
 * This run's lock was taken over while it was not running (suspended past its lease on a lock shared between
 * hosts, or its row changed by hand): it stopped before its next call and commit (exit code 4).
 */
export class LockLostError extends NetingestError {
  constructor(message: string) {
    super('LOCK_LOST', message);
  }
}

export const RUN_LOCK_DEFAULTS = {
  /**
   * How long after its holder's last heartbeat a lock from another host may be taken over (the holder writes
   * its own lease in the row). A lock of this host is taken over only once its process is gone, never on time.
   */
  leaseMs: 5 * 60_000,
  /** Heartbeats per lease: a live holder renews its lease this many times before it could run out. */
  heartbeatsPerLease: 10,
  /**
   * How old a "still ours" answer may be when a call asks: a takeover needs a stall of a whole lease, which moves the
   * monotonic clock past this, so the first call after one reads the row again (each commit always does).
   */
  callCheckMaxAgeMs: 100,
} as const;

interface LockRow {
  pid: number;
  host: string;
  runId: number | null;
  acquiredAt: string;
  heartbeatAt: string;
  processStart: string | null;
  leaseMs: number | null;
}

/** What tells one holding of the lock from another: a pid alone repeats (PID 1 in a container, reuse). */
export type RunLockHolding = Pick<LockRow, 'pid' | 'host' | 'acquiredAt'>;

/** A held run lock; release() it when the run ends. */
export interface RunLock extends RunHold {
  /** Runs `write` in one IMMEDIATE transaction once the lock is checked to be ours; throws LockLostError if not. */
  whileHeld<T>(write: () => T): T;
  release(): void;
}

/** The lock row as `netingest status` shows it, with whether its holder is alive as far as this host can tell. */
export type RunLockState = Omit<LockRow, 'processStart' | 'leaseMs'> & { alive: boolean };

// Aliases quoted: the same statement reads the lock row on PostgreSQL (runLockReads), which folds bare ones.
const READ_LOCK = `SELECT pid, host, run_id AS "runId", acquired_at AS "acquiredAt", heartbeat_at AS "heartbeatAt",
  process_start AS "processStart", lease_ms AS "leaseMs" FROM run_lock WHERE id = 1`;
const MINE = `id = 1 AND pid = ? AND host = ? AND acquired_at = ?`;

// The locks this process holds now. A row naming our own pid is ours only if it is one of these; any other
// was left by an earlier process that had the same pid, which is dead since we have that pid now.
const heldHere = new Set<RunLockHolding>();

/** The lock row, if any, and whether its holder is alive by the same test a run applies before taking it over. */
export function* runLockReads(): Reads<RunLockState | null> {
  const held = (yield* rows<LockRow>(READ_LOCK))[0];
  if (!held) return null;
  const { processStart: _start, leaseMs: _lease, ...shown } = held;
  return { ...shown, alive: isAlive(held, hostname()) };
}

/** `check`'s last true answer reused while younger than `maxAgeMs` (monotonic), sparing a row read per call; a false one stays. */
export function recentLockCheck(check: () => boolean, maxAgeMs: number = RUN_LOCK_DEFAULTS.callCheckMaxAgeMs): () => boolean {
  let trueAt = -Infinity;
  return () => {
    const now = performance.now();
    if (now - trueAt < maxAgeMs) return true;
    if (!check()) return false;
    trueAt = now;
    return true;
  };
}

/** The error of a run that lost its lock, saying who holds it now. */
export function lockLostError(sqlite: BetterSqlite3.Database, file: string, runId: number | null): LockLostError {
  let now = 'no run holds it now';
  try {
    const row = sqlite.prepare(READ_LOCK).get() as LockRow | undefined;
    if (row) now = `run ${row.runId ?? '?'} holds it now (pid ${row.pid} on ${row.host}, since ${row.acquiredAt})`;
  } catch {
    // The message matters less than the stop it explains.
  }
  return new LockLostError(
    `run ${runId ?? '?'} lost the lock of ${file} while it was not running (suspended, or cut off past its lease): ${now}. ` +
      'It stopped before its next call and stored nothing more; the run that took the lock over closed it as abandoned ' +
      'and does its remaining tasks',
  );
}

/**
 * Takes the one-run-per-database lock (a `run_lock` row). A live holder is refused, named: on this host, one whose
 * process started when it did (stopped included); on another, one within its lease. Check and take share one IMMEDIATE
 * transaction (two runs cannot both win) that also closes dead processes' runs, so none is seen half-closed.
 */
export function acquireRunLock(database: Database, leaseMs: number = RUN_LOCK_DEFAULTS.leaseMs): RunLock {
  const { pid } = process;
  const host = hostname();
  const { sqlite } = database;
  const read = sqlite.prepare(READ_LOCK);
  const write = sqlite.prepare(`INSERT OR REPLACE INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at, process_start, lease_ms)
    VALUES (1, ?, ?, NULL, ?, ?, ?, ?)`);
  const take = sqlite.transaction(() => {
    const held = read.get() as LockRow | undefined;
    if (held && isAlive(held, host)) throw lockedError(database.file, held, host);
    const now = new Date().toISOString();
    write.run(pid, host, now, now, processFacts(pid)?.start ?? null, leaseMs);
    const holding: RunLockHolding = { pid, host, acquiredAt: now };
    return { holding, abandonedRuns: closeAbandonedRuns(database) };
  });
  let taken: ReturnType<typeof take>;
  try {
    taken = take.immediate();
  } catch (err) {
    throw refusalOf(err, () => read.get() as LockRow | undefined, database.file, host);
  }
  const { holding, abandonedRuns } = taken;
  heldHere.add(holding);
  return holdLock(database, holding, abandonedRuns, leaseMs);
}

/** The RunLock of a holding just taken: its heartbeat, its checks, its release. */
function holdLock(database: Database, holding: RunLockHolding, abandonedRuns: number[], leaseMs: number): RunLock {
  const { sqlite } = database;
  // Every statement names the holding, not just pid and host, so a run whose lock was taken over cannot
  // refresh or delete the row of the run that took it, even one with its pid.
  const key = [holding.pid, holding.host, holding.acquiredAt] as const;
  const beat = sqlite.prepare(`UPDATE run_lock SET heartbeat_at = ? WHERE ${MINE}`);
  // Whether the lock is still ours; `guarded` asks inside the write transaction, so that no takeover can come
  // between the check and the commit.
  const mine = sqlite.prepare(`SELECT 1 FROM run_lock WHERE ${MINE}`).pluck();
  const ours = () => mine.get(...key) === 1;
  const listeners: Array<(err: LockLostError) => void> = [];
  let runId: number | null = null;
  let lost = false;
  const markLost = () => {
    if (lost) return;
    lost = true;
    const err = lockLostError(sqlite, database.file, runId);
    for (const listener of listeners.splice(0)) listener(err);
  };
  const guarded = sqlite.transaction(<T>(write: () => T): T => {
    if (!ours()) throw lockLostError(sqlite, database.file, runId);
    return write();
  });

  const timer = setInterval(() => {
    try {
      if (beat.run(new Date().toISOString(), ...key).changes === 0) markLost();
    } catch {
      // A busy database delays one heartbeat; the next one will do.
    }
  }, leaseMs / RUN_LOCK_DEFAULTS.heartbeatsPerLease);
  timer.unref();
  return {
    abandonedRuns,
    setRunId(id) {
      runId = id;
      sqlite.prepare(`UPDATE run_lock SET run_id = ? WHERE ${MINE}`).run(id, ...key);
    },
    held() {
      if (lost) return false;
      try {
        if (!ours()) markLost();
      } catch {
        // Unreadable now: the writer's check in each commit still fences this run off.
      }
      return !lost;
    },
    whileHeld(write) {
      if (lost) throw lockLostError(sqlite, database.file, runId);
      try {
        return guarded.immediate(write) as ReturnType<typeof write>;
      } catch (err) {
        if (err instanceof LockLostError) markLost();
        throw err;
      }
    },
    onLost(listener) {
      listeners.push(listener);
    },
    release() {
      clearInterval(timer);
      // Forgotten first: should the DELETE fail, the row left behind is taken over, even by this process.
      heldHere.delete(holding);
      sqlite.prepare(`DELETE FROM run_lock WHERE ${MINE}`).run(...key);
    },
  };
}

function isAlive(lock: LockRow, host: string): boolean {
  // Our own run: known for sure, even if a blocked event loop let its heartbeat go stale.
  const ours = [...heldHere].some((h) => h.pid === lock.pid && h.host === lock.host && h.acquiredAt === lock.acquiredAt);
  if (ours) return true;
  // Another host's pid cannot be checked from here: its lease, renewed by its heartbeat, is all there is.
  if (lock.host !== host) return leaseRunning(lock);
  // Our pid, yet not one of our locks (checked above): an earlier process with this pid left it.
  if (lock.pid === process.pid) return false;
  if (!processExists(lock.pid)) return false;
  const facts = processFacts(lock.pid);
  // The holder itself, stopped (Ctrl-Z) or frozen however long, is alive; another process with its pid is not.
  if (lock.processStart !== null && facts !== null) return facts.start === lock.processStart;
  // No start to compare (a row written without one, or no /proc here): the lease decides, as on another host.
  return leaseRunning(lock);
}

function leaseRunning(lock: LockRow): boolean {
  const leaseMs = lock.leaseMs !== null && lock.leaseMs > 0 ? lock.leaseMs : RUN_LOCK_DEFAULTS.leaseMs;
  // An unreadable heartbeat parses to NaN, which compares false: such a lock is taken over.
  return Date.now() - Date.parse(lock.heartbeatAt) < leaseMs;
}

/**
 * acquireRunLock's one conversion of its errors, so no caller repeats it. The lock's transaction timed out behind a
 * holder's long write (`reprocess`'s one transaction, `prune`'s VACUUM): the lock row, readable meanwhile, names that
 * holder as any other refusal does. Otherwise a SQLite error is a DatabaseError naming the file (busy: DB_LOCKED).
 */
function refusalOf(err: unknown, readHeld: () => LockRow | undefined, file: string, host: string): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('SQLITE_BUSY')) {
    try {
      const held = readHeld();
      if (held && isAlive(held, host)) return lockedError(file, held, host);
    } catch {
      // Unreadable too: the busy error says what it can.
    }
  }
  return toDatabaseUseError(err, file);
}

/** Who holds the lock: a run by its id; without one, `reprocess`, `prune`, `copy`, or a run before its `runs` row. */
export function lockHolder(runId: number | null): string {
  return runId === null ? 'netingest with no run id (`reprocess`, `prune`, `copy`, or a run starting)' : `run ${runId}`;
}

/**
 * The refusal of a live holder's lock, one sentence whichever command met it (a run, reprocess, prune, copy, its
 * read-only path included): who holds it, and what to do.
 */
export function lockedError(file: string, held: Pick<LockRow, 'runId' | 'pid' | 'host' | 'acquiredAt'>, host: string = hostname()): LockedError {
  const holder = `the database ${file} is in use by ${lockHolder(held.runId)} (pid ${held.pid} on ${held.host}, since ${held.acquiredAt})`;
  const state = held.host === host ? processFacts(held.pid)?.state : undefined;
  // A stopped run holds its lock for as long as it is stopped: waiting would not help.
  if (state === 'T' || state === 't') {
    return new LockedError(`${holder}, which is stopped (Ctrl-Z or SIGSTOP): resume it (fg, or kill -CONT ${held.pid}) or end it (kill ${held.pid})`);
  }
  return new LockedError(`${holder}; wait for it to finish`);
}

/** Whether process `pid` lives (signal 0 asks without sending anything; EPERM: another user's, alive). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What /proc says of a live process: a pid alone is reused (after a crash, PID 1 in every container). */
export interface ProcessFacts {
  /** The boot's id and the process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat). */
  start: string;
  /** Its state letter (field 3): `T` stopped (Ctrl-Z, SIGSTOP), `t` stopped by a debugger. */
  state: string;
}

/** The facts of process `pid`, or null where /proc cannot tell (no such process, or not Linux). */
export function processFacts(pid: number): ProcessFacts | null {
  const stat = readProc(`/proc/${pid}/stat`);
  if (stat === null) return null;
  // Field 2, the command name, is in parentheses and may hold spaces or parentheses itself: count after the last.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTicks = fields[19];
  if (!state || !startTicks || !/^\d+$/.test(startTicks)) return null;
  return { start: `${bootId()}:${startTicks}`, state };
}

let cachedBootId: string | undefined;

/** The kernel's id of this boot: start times count from the boot, so two boots' times cannot be compared. */
function bootId(): string {
  return (cachedBootId ??= readProc('/proc/sys/kernel/random/boot_id')?.trim() ?? '');
}

/** A /proc file's text, or null where it cannot be read (no such process, or not Linux). */
function readProc(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}
