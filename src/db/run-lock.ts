import { hostname } from 'node:os';
import { NetingestError } from '../errors.ts';
import type { Database } from './open.ts';

/** Another live process is running against this database (exit code 4). */
export class LockedError extends NetingestError {
  constructor(message: string) {
    super('LOCKED', message);
  }
}

export const RUN_LOCK_DEFAULTS = {
  /** How often the holder refreshes its heartbeat. */
  heartbeatMs: 30_000,
  /** A lock from another host whose heartbeat is older than this is taken over (its pid cannot be checked). */
  staleAfterMs: 5 * 60_000,
} as const;

interface LockRow {
  pid: number;
  host: string;
  runId: number | null;
  acquiredAt: string;
  heartbeatAt: string;
}

/** A held run lock; release() it when the run ends. */
export interface RunLock {
  setRunId(runId: number): void;
  release(): void;
}

/**
 * Takes the one-run-per-database lock, a row in `run_lock`. A lock held by a live process is refused with
 * who holds it; one left by a dead process (same host, pid gone; or another host, heartbeat stale) is taken
 * over. The check and the take happen in one IMMEDIATE transaction, so two runs cannot both win.
 */
export function acquireRunLock(database: Database, pid = process.pid, host = hostname()): RunLock {
  const { sqlite } = database;
  const read = sqlite.prepare(`SELECT pid, host, run_id AS runId, acquired_at AS acquiredAt, heartbeat_at AS heartbeatAt FROM run_lock WHERE id = 1`);
  const write = sqlite.prepare(`INSERT OR REPLACE INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at) VALUES (1, ?, ?, NULL, ?, ?)`);
  sqlite
    .transaction(() => {
      const held = read.get() as LockRow | undefined;
      if (held && isAlive(held, host)) {
        throw new LockedError(
          `the database ${database.file} is in use by run ${held.runId ?? '?'} (pid ${held.pid} on ${held.host}, since ${held.acquiredAt}); wait for it to finish`,
        );
      }
      const now = new Date().toISOString();
      write.run(pid, host, now, now);
    })
    .immediate();

  const beat = sqlite.prepare(`UPDATE run_lock SET heartbeat_at = ? WHERE id = 1 AND pid = ? AND host = ?`);
  const timer = setInterval(() => {
    try {
      beat.run(new Date().toISOString(), pid, host);
    } catch {
      // A busy database delays one heartbeat; the next one will do.
    }
  }, RUN_LOCK_DEFAULTS.heartbeatMs);
  timer.unref();
  return {
    setRunId(runId) {
      sqlite.prepare(`UPDATE run_lock SET run_id = ? WHERE id = 1 AND pid = ? AND host = ?`).run(runId, pid, host);
    },
    release() {
      clearInterval(timer);
      sqlite.prepare(`DELETE FROM run_lock WHERE id = 1 AND pid = ? AND host = ?`).run(pid, host);
    },
  };
}

function isAlive(lock: LockRow, host: string): boolean {
  if (lock.host !== host) return Date.now() - Date.parse(lock.heartbeatAt) < RUN_LOCK_DEFAULTS.staleAfterMs;
  if (lock.pid === process.pid) return true;
  try {
    process.kill(lock.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
