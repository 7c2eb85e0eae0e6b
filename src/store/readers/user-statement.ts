/**
 * A user's statement (`query`, `export --sql`), made read-only by read-only-sql.ts: its columns, checked on the
 * command's own snapshot, and its rows, read on a connection of their own (in the child process of
 * sqlite/statement-rows.ts, which can be killed in the middle of a statement).
 */
import { openConnection } from '../connection.ts';
import type { SqliteSnapshot } from '../read-snapshot.ts';
import { lockConnectionReadOnly, prepareReadQuery } from './read-only-sql.ts';

/** The statement's column names; throws as prepareReadQuery does when it is not a plain read. */
export function userStatementColumns(snapshot: SqliteSnapshot, sql: string): string[] {
  return prepareReadQuery(snapshot.sqlite, sql).columns().map((c) => c.name);
}

/** The raw rows of a statement (bigints for integers, Buffers for blobs), and the connection's close. */
export interface UserStatementRows {
  rows: Iterator<unknown[]>;
  close(): void;
}

/** Opens `db` read-only on a connection of its own and starts `sql` (one statement: one snapshot). */
export function openUserStatement(db: string, sql: string): UserStatementRows {
  // Not openForReading(): the parent has checked the file and its schema, and a child that loads no drizzle
  // starts faster. openConnection() all the same, for a folder this user cannot write (read-without-shm.ts).
  const database = openConnection(db, { readonly: true });
  try {
    lockConnectionReadOnly(database.sqlite);
    const rows = (prepareReadQuery(database.sqlite, sql).iterate() as IterableIterator<unknown[]>)[Symbol.iterator]();
    return { rows, close: () => database.close() };
  } catch (err) {
    database.close();
    throw err;
  }
}
