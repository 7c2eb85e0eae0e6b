/**
 * The PostgreSQL dataset's lock: shared by workers, exclusive for reprocess, prune and copy's target. A session
 * advisory lock: the server frees a killed worker's, on any host, as its connection drops; no lease, no pid to check.
 */
import type pg from 'pg';
import { LockedError } from '../run-lock.ts';

/** Any fixed 64-bit key, the same in every netingest build: "netingest dataset". */
const DATASET_LOCK_KEY = 0x6e657464617461n; // 'netdata'

/** Any fixed 64-bit key, the same in every netingest build: "netingest migrations", held by a migrator (open.ts). */
export const MIGRATION_LOCK_KEY = 0x6e6574696e6765n; // 'netinge'

/** A hold on the dataset lock: its connection's backend pid (how others tell it is alive) and its release. */
export interface DatasetHold {
  /** pg_backend_pid() of the connection holding the lock. */
  readonly backendPid: number;
  /** Lets go of the lock and gives the connection back; safe to call twice. */
  release(): Promise<void>;
  /** Tells `listener` once if the session ends before release (the server let go of the lock with it). */
  onLost(listener: (err: Error) => void): void;
}

/** Holds the lock shared, as a worker: refused while reprocess, prune or copy holds it. `what` names the dataset. */
export function holdShared(pool: pg.Pool, what: string): Promise<DatasetHold> {
  // Waits out a migrator first (its lock only, for the statement): one that has just committed an upgrade still
  // holds the dataset exclusive (withDatasetUpgrade) until it lets go of both.
  const waited = `FROM (SELECT pg_advisory_xact_lock_shared(${MIGRATION_LOCK_KEY.toString()}) OFFSET 0) AS migrated`;
  return hold(pool, 'pg_try_advisory_lock_shared', 'pg_advisory_unlock_shared', waited, () =>
    `${what} is being rewritten by \`netingest reprocess\`, \`netingest prune\` or \`netingest copy\`; run again once it has finished`);
}

/** Holds the lock exclusive for `command` (reprocess, prune, copy): refused while a worker runs. `what` names the dataset. */
export function holdExclusive(pool: pg.Pool, what: string, command: string): Promise<DatasetHold> {
  return hold(pool, 'pg_try_advisory_lock', 'pg_advisory_unlock', '', () =>
    `${what} is in use by a running \`netingest run\` or \`netingest ${command.replace(/^netingest /, '')}\`; ` +
      `${command} waits for no one: run it again once they have finished`);
}

/** The pids of the sessions holding the dataset lock: a run whose session is not among them has ended, on any host. */
export const LOCK_HOLDERS_SQL = `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = ${DATASET_LOCK_KEY.toString()}`;

/**
 * Runs `upgrade` (the migrator's) on `client`'s session with the lock held exclusive, refused (LockedError) while
 * anyone holds it: a worker of an earlier release, on the old schema, would fail its next write and lose its answer.
 */
export async function withDatasetUpgrade<T>(client: pg.PoolClient, what: string, upgrade: () => Promise<T>): Promise<T> {
  const key = DATASET_LOCK_KEY.toString();
  const { rows } = await client.query<{ got: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS got', [key]);
  if (!rows[0]!.got) {
    const holders = (await client.query<{ pid: number }>(LOCK_HOLDERS_SQL)).rows.map((r) => r.pid).join(', ');
    throw new LockedError(
      `${what} holds a dataset of an earlier netingest, to be upgraded, but netingest workers are using it (server ` +
        `sessions ${holders || 'gone meanwhile'}: a \`netingest run\`, reprocess, prune or copy) and an upgrade under them ` +
        'would lose what they write; stop the running netingest workers, or wait for them to finish, then run again: the next run upgrades it in place',
    );
  }
  try {
    return await upgrade();
  } finally {
    await client.query('SELECT pg_advisory_unlock($1::bigint)', [key]).catch(() => undefined);
  }
}

async function hold(pool: pg.Pool, tryLock: string, unlock: string, from: string, lockedMessage: () => string): Promise<DatasetHold> {
  const client = await pool.connect();
  let released = false;
  try {
    const { rows } = await client.query<{ got: boolean; pid: number }>(`SELECT ${tryLock}($1::bigint) AS got, pg_backend_pid() AS pid ${from}`, [DATASET_LOCK_KEY.toString()]);
    if (!rows[0]!.got) throw new LockedError(lockedMessage());
    const backendPid = rows[0]!.pid;
    // A checked-out client has no pool listener: without this one, a session the server ends would crash the process.
    let lost: Error | null = null;
    const lostListeners: Array<(err: Error) => void> = [];
    const onError = (err: Error) => {
      if (released || lost) return;
      lost = err;
      for (const l of lostListeners) l(err);
    };
    client.on('error', onError);
    return {
      backendPid,
      onLost(listener) {
        if (lost) listener(lost);
        else lostListeners.push(listener);
      },
      async release() {
        if (released) return;
        released = true;
        try {
          await client.query(`SELECT ${unlock}($1::bigint)`, [DATASET_LOCK_KEY.toString()]);
          client.removeListener('error', onError);
          client.release();
        } catch (err) {
          // A connection that failed is dropped rather than pooled: its lock goes with it.
          client.release(err instanceof Error ? err : true);
        }
      },
    };
  } catch (err) {
    released = true;
    client.release();
    throw err;
  }
}
