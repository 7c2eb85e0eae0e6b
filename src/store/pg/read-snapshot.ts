/**
 * The read snapshot on PostgreSQL: one READ ONLY REPEATABLE READ transaction, so a command's reads see one state, kept
 * by the server (the change check is a no-op). Only pg's types here: SQLite commands import this file.
 */
import type pg from 'pg';
import type { ReadSnapshot } from '../read-snapshot.ts';
import { inPgTransaction } from './transaction.ts';
import { withAnswerBound } from './answer-watchdog.ts';

/** A snapshot of a PostgreSQL dataset: its client, inside the read-only transaction. */
export interface PgSnapshot extends ReadSnapshot {
  readonly engine: 'postgres';
  readonly client: pg.PoolClient;
  /** The server process running this snapshot's statements (pg_cancel_backend stops one). */
  readonly backendPid: number;
  /** The pool the client came from: a second connection, to cancel a statement this one is running. */
  readonly pool: pg.Pool;
}

/** `fn` in a snapshot of `pool`'s dataset; `statementTimeoutMs` is the transaction's (0: none, undefined: the pool's). */
export async function withPgReadSnapshot<T>(
  pool: pg.Pool,
  fn: (snapshot: PgSnapshot) => Promise<T> | T,
  options: { statementTimeoutMs?: number | undefined } = {},
): Promise<T> {
  return inPgTransaction(pool, async (client) => {
    const snapshot = async () => {
      const pid = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      return fn({ engine: 'postgres', client, pool, backendPid: pid.rows[0]!.pid, assertUnchanged: () => undefined });
    };
    if (options.statementTimeoutMs === undefined) return snapshot();
    const timeoutMs = Math.max(0, Math.trunc(options.statementTimeoutMs));
    // set_config(..., true) is SET LOCAL (this transaction only), and unlike SET it takes a bound value.
    await client.query("SELECT set_config('statement_timeout', $1, true)", [String(timeoutMs)]);
    return withAnswerBound(client, timeoutMs, snapshot);
  }, 'BEGIN TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY');
}

