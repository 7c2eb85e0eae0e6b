/**
 * `query`, `export <table>` and `export --sql` on PostgreSQL: the dataset opened for reading only, one READ ONLY
 * REPEATABLE READ snapshot, the statement streamed from a cursor (pg-statement-rows.ts) into the same encoders
 * and output as on SQLite. No worker threads: the server reads, the cursor streams, one process encodes.
 * Loaded only when `--db` (or NETINGEST_DATABASE_URL) names a PostgreSQL database.
 */
import { withReadSnapshot } from '../store/read-snapshot.ts';
import type { PgSnapshot } from '../store/pg/read-snapshot.ts';
import { openPgForReading } from '../store/readers/open-for-reading.ts';
import { checkPgReadQuery } from '../store/readers/read-only-sql.ts';
import { pgTableRowsSql, type TableQuery } from '../store/readers/table-rows.ts';
import { startPgStatement, type PgStatementOptions, type PgStatementRows } from './pg-statement-rows.ts';

/** A user's statement (`query`, `export --sql`): checked, then started in a snapshot and handed to `use`. */
export async function userStatementOnPostgres<R>(
  url: string,
  options: { sql: string } & Omit<PgStatementOptions, 'batchRows'>,
  use: (statement: PgStatementRows, snapshot: PgSnapshot) => Promise<R>,
): Promise<R> {
  checkPgReadQuery(options.sql);
  return onPostgres(url, options.timeoutMs ?? 0, async (snapshot) => {
    const statement = await startPgStatement(snapshot, options.sql, [], options);
    try {
      return await use(statement, snapshot);
    } finally {
      await statement.close();
    }
  });
}

/** `export <table>`: the table's rows (pgTableRowsSql), started in a snapshot and handed to `use`. */
export async function tableOnPostgres<R>(
  url: string,
  query: TableQuery,
  options: Omit<PgStatementOptions, 'batchRows' | 'timeoutMs'>,
  use: (statement: PgStatementRows, snapshot: PgSnapshot) => Promise<R>,
): Promise<R> {
  // No time limit: a table export reads each row once and always ends (the pool's default would cut a large one).
  return onPostgres(url, 0, async (snapshot) => {
    const { sql, params } = await pgTableRowsSql(snapshot, query);
    const statement = await startPgStatement(snapshot, sql, params, options);
    try {
      return await use(statement, snapshot);
    } finally {
      await statement.close();
    }
  });
}

/** Opens the dataset read-only, runs `fn` in one snapshot whose statements may run `statementTimeoutMs` (0: no limit), closes. */
async function onPostgres<R>(url: string, statementTimeoutMs: number, fn: (snapshot: PgSnapshot) => Promise<R>): Promise<R> {
  const store = await openPgForReading(url);
  try {
    return await withReadSnapshot(store, fn, { statementTimeoutMs });
  } finally {
    await store.close();
  }
}
