/**
 * The dataset opened read-only for a user's own script (the package's openDataset): plain objects per row,
 * parameters allowed, and nothing that could write, as `netingest query` guarantees on the command line.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { BadQueryError } from './query-errors.ts';
import { openForReading } from './open-for-reading.ts';
import { asQueryError } from './read-only-sql.ts';
import { withReadSnapshotSync } from '../read-snapshot.ts';

/** Values for a statement's `?` placeholders (an array) or `:name` / `$name` / `@name` ones (an object). */
export type QueryParams = readonly unknown[] | Readonly<Record<string, unknown>>;

/** A read-only connection to a netingest database. */
export interface Dataset {
  /** Absolute path of the database file. */
  readonly file: string;
  /** Every row of one statement that reads (SELECT, WITH, VALUES, a reporting PRAGMA), as objects by column. */
  all<Row = Record<string, unknown>>(sql: string, params?: QueryParams): Row[];
  /** Closes the connection; safe to call twice. */
  close(): void;
}

/** Opens `file` read-only (it must exist); SQLite refuses any write on this connection (`query_only`). */
export function openDataset(file: string): Dataset {
  const database = openForReading(file);
  return {
    file: database.file,
    all<Row>(sql: string, params: QueryParams = []): Row[] {
      // Read without SQLite's locks (an unwritable folder), a file that changed meanwhile may be half-read: the snapshot checks.
      return withReadSnapshotSync(database, ({ sqlite }) => {
        try {
          return bound(readingStatement(sqlite, sql), params).all() as Row[];
        } catch (err) {
          throw asQueryError(err);
        }
      });
    },
    close: () => database.close(),
  };
}

function readingStatement(sqlite: BetterSqlite3.Database, sql: string): BetterSqlite3.Statement {
  let stmt: BetterSqlite3.Statement;
  try {
    stmt = sqlite.prepare(sql);
  } catch (err) {
    throw new BadQueryError(`SQL error: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  if (!stmt.reader) throw new BadQueryError('this statement returns no rows: openDataset() only reads');
  return stmt;
}

/** The statement with its parameters bound, array or object alike. */
function bound(stmt: BetterSqlite3.Statement, params: QueryParams): BetterSqlite3.Statement {
  return Array.isArray(params) ? stmt.bind(...(params as unknown[])) : stmt.bind(params);
}
