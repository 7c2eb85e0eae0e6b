/**
 * The read snapshot (read-snapshot.ts) on PostgreSQL: one pooled client, one READ ONLY REPEATABLE READ transaction (so every read of
 * a command sees the database as it was when the first one ran, and the server refuses any write), ended and the
 * client released however the reader's work ends. The server keeps the snapshot itself: the change check is a no-op.
 * Only types of pg here: a SQLite command imports this file (its readers sit beside their PostgreSQL versions).
 */
import type pg from 'pg';
import type { ReadSnapshot } from '../read-snapshot.ts';
import { inPgTransaction } from './transaction.ts';

/** A snapshot of a PostgreSQL dataset: its client, inside the read-only transaction. */
export interface PgSnapshot extends ReadSnapshot {
  readonly engine: 'postgres';
  readonly client: pg.PoolClient;
  /** The server process running this snapshot's statements (pg_cancel_backend stops one). */
  readonly backendPid: number;
  /** The pool the client came from: a second connection, to cancel a statement this one is running. */
  readonly pool: pg.Pool;
}

/** Options of withPgReadSnapshot(). */
export interface PgSnapshotOptions {
  /** The transaction's statement timeout in ms; 0: none. Undefined keeps the pool's. */
  statementTimeoutMs?: number | undefined;
}

/** Runs `fn` in one READ ONLY REPEATABLE READ transaction on a client of `pool`; see the file's comment. */
export async function withPgReadSnapshot<T>(
  pool: pg.Pool,
  fn: (snapshot: PgSnapshot) => Promise<T> | T,
  options: PgSnapshotOptions = {},
): Promise<T> {
  return inPgTransaction(pool, async (client) => {
    if (options.statementTimeoutMs !== undefined) {
      // Local (set_config's true, as SET LOCAL): for this transaction only, the pooled connection keeps its own
      // setting afterwards. Bound, as every value the store sends (SET takes no parameter).
      await client.query("SELECT set_config('statement_timeout', $1, true)", [String(Math.max(0, Math.trunc(options.statementTimeoutMs)))]);
    }
    const pid = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    return fn({ engine: 'postgres', client, pool, backendPid: pid.rows[0]!.pid, assertUnchanged: () => undefined });
  }, 'BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
}

