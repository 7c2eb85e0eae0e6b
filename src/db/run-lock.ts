import { hostname } from 'node:os';
import { NetingestError } from '../errors.ts';
import type { Database } from './open.ts';
import { closeAbandonedRuns } from './abandoned-runs.ts';

/** Another live process is running against this database (exit code 4). */
export class LockedError extends NetingestError {
  constructor(message: string) {
    super('LOCKED', message);
  }
}

export const RUN_LOCK_DEFAULTS = {
  /** How often the holder refreshes its heartbeat. */
  heartbeatMs: 30_000,
  /** A lock whose heartbeat is older than this is taken over on any host (its pid may have been reused). */
  staleAfterMs: 5 * 60_000,
} as const;

interface LockRow {
  pid: number;
  host: string;
  runId: number | null;
  acquiredAt: string;
  heartbeatAt: string;
}

/** What tells one holding of the lock from another: a pid alone repeats (PID 1 in a container, reuse). */
type Holding = Pick<LockRow, 'pid' | 'host' | 'acquiredAt'>;

/** A held run lock; release() it when the run ends. */
export interface RunLock {
  /** Runs left marked running by dead processes, closed as abandoned when the lock was taken. */
  readonly abandonedRuns: readonly number[];
  setRunId(runId: number): void;
  release(): void;
}

/** The lock row as `netingest status` shows it, with whether its holder is alive as far as this host can tell. */
export type RunLockState = LockRow & { alive: boolean };

const READ_LOCK = `SELECT pid, host, run_id AS runId, acquired_at AS acquiredAt, heartbeat_at AS heartbeatAt FROM run_lock WHERE id = 1`;

// The locks this process holds now. A row naming our own pid is ours only if it is one of these; any other
// was left by an earlier process that had the same pid, which is dead since we have that pid now.
const heldHere = new Set<Holding>();

/** The lock row, if any, and whether its holder is alive by the same test a run applies before taking it over. */
export function readRunLock(database: Database, host = hostname()): RunLockState | null {
  const held = database.sqlite.prepare(READ_LOCK).get() as LockRow | undefined;
  return held ? { ...held, alive: isAlive(held, host) } : null;
}

/**
 * Takes the one-run-per-database lock, a row in `run_lock`. A lock held by a live process is refused with
 * who holds it; one left by a dead process is taken over: its heartbeat is stale (any host), or, on this host,
 * its pid is gone or is our own pid without being our lock. The check and the take happen in one IMMEDIATE
 * transaction, so two runs cannot both win; runs that dead processes left marked running are closed in it too,
 * so no run can see them half-closed.
 */
export function acquireRunLock(database: Database, pid = process.pid, host = hostname()): RunLock {
  const { sqlite } = database;
  const read = sqlite.prepare(READ_LOCK);
  const write = sqlite.prepare(`INSERT OR REPLACE INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at) VALUES (1, ?, ?, NULL, ?, ?)`);
  const { holding, abandonedRuns } = sqlite
    .transaction(() => {
      const held = read.get() as LockRow | undefined;
      if (held && isAlive(held, host)) {
        throw new LockedError(
          `the database ${database.file} is in use by run ${held.runId ?? '?'} (pid ${held.pid} on ${held.host}, since ${held.acquiredAt}); wait for it to finish`,
        );
      }
      const now = new Date().toISOString();
      write.run(pid, host, now, now);
      const holding: Holding = { pid, host, acquiredAt: now };
      return { holding, abandonedRuns: closeAbandonedRuns(database) };
    })
    .immediate();
  heldHere.add(holding);

  // Every statement names the holding, not just pid and host, so a run whose lock was taken over (its
  // heartbeat went stale) cannot refresh or delete the row of the run that took it, even one with its pid.
  const mine = `id = 1 AND pid = ? AND host = ? AND acquired_at = ?`;
  const key = [holding.pid, holding.host, holding.acquiredAt] as const;
  const beat = sqlite.prepare(`UPDATE run_lock SET heartbeat_at = ? WHERE ${mine}`);
  const timer = setInterval(() => {
    try {
      beat.run(new Date().toISOString(), ...key);
    } catch {
      // A busy database delays one heartbeat; the next one will do.
    }
  }, RUN_LOCK_DEFAULTS.heartbeatMs);
  timer.unref();
  return {
    abandonedRuns,
    setRunId(runId) {
      sqlite.prepare(`UPDATE run_lock SET run_id = ? WHERE ${mine}`).run(runId, ...key);
    },
    release() {
      clearInterval(timer);
      // Forgotten first: should the DELETE fail, the row left behind is taken over, even by this process.
      heldHere.delete(holding);
      sqlite.prepare(`DELETE FROM run_lock WHERE ${mine}`).run(...key);
    },
  };
}

function isAlive(lock: LockRow, host: string): boolean {
  // Our own run: known for sure, even if a blocked event loop let its heartbeat go stale.
  if (heldByThisProcess(lock)) return true;
  if (!heartbeatFresh(lock)) return false;
  // Another host's pid cannot be checked from here; the fresh heartbeat is all there is.
  if (lock.host !== host) return true;
  // Our pid, yet not one of our locks (checked above): an earlier process with this pid left it.
  if (lock.pid === process.pid) return false;
  return processExists(lock.pid);
}

function heldByThisProcess(lock: LockRow): boolean {
  for (const h of heldHere) {
    if (h.pid === lock.pid && h.host === lock.host && h.acquiredAt === lock.acquiredAt) return true;
  }
  return false;
}

function heartbeatFresh(lock: LockRow): boolean {
  // An unreadable heartbeat parses to NaN, which compares false: such a lock is taken over.
  return Date.now() - Date.parse(lock.heartbeatAt) < RUN_LOCK_DEFAULTS.staleAfterMs;
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
