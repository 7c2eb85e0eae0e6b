/**
 * The dataset opened read-only for a user's own script (the package's openDataset), as `netingest query` reads.
 * `query()` works on both engines; the synchronous `all()` is SQLite's, kept callable on `Dataset` for 0.1's code.
 */
import { UsageError } from '../../errors.ts';
import { locateDataset } from '../locator.ts';
import { openStore } from '../open-store.ts';
import { BadQueryError } from './query-errors.ts';
import { openForReading } from '../open.ts';
import { asQueryError, prepareUserSql } from './read-only-sql.ts';
import { withReadSnapshot } from '../read-snapshot.ts';

/** Values for a statement's `?` placeholders (an array) or `:name` / `$name` / `@name` ones (an object). */
export type QueryParams = readonly unknown[] | Readonly<Record<string, unknown>>;

/** A read-only connection to a netingest database in SQLite. */
export interface SqliteDataset {
  readonly engine: 'sqlite';
  /** Absolute path of the database file. */
  readonly file: string;
  /** Every row of one statement that reads (SELECT, WITH, VALUES, a reporting PRAGMA), as objects by column. */
  all<Row = Record<string, unknown>>(sql: string, params?: QueryParams): Row[];
  /** all(), as a promise: the form that works on both engines. */
  query<Row = Record<string, unknown>>(sql: string, params?: QueryParams): Promise<Row[]>;
  /** Closes the connection; safe to call twice. */
  close(): void;
}

/** A read-only connection to a netingest database in PostgreSQL; every query() is a READ ONLY transaction. */
export interface PgDataset {
  readonly engine: 'postgres';
  /** The database's URL with its password hidden (***): the only form of it ever shown. */
  readonly file: string;
  /**
   * Not on PostgreSQL, which cannot read synchronously: use `await dataset.query(sql, params)`. Not callable in
   * the type; called all the same (plain JavaScript), it throws a UsageError saying so.
   */
  readonly all: never;
  /** Every row of one statement that reads (SELECT, WITH, VALUES, TABLE, SHOW, EXPLAIN); parameters $1, $2, ... */
  query<Row = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<Row[]>;
  /** Ends the connection pool; safe to call twice. */
  close(): Promise<void>;
}

/** Either engine's dataset, told apart by `engine`; `all()` stays callable for 0.1's code (it throws on PostgreSQL). */
export type Dataset = SqliteDataset | PgDataset;

/** postgres:// or postgresql://, in any case (as the CLI's --db takes them). */
type PostgresUrl = `postgres://${string}` | `postgresql://${string}`;

/**
 * The dataset openDataset(db) resolves to, as far as the type of `db` tells the engine: a literal postgres://
 * URL gives a PgDataset, another literal a SqliteDataset, a string known only at run time (or none) either.
 */
export type DatasetAt<Db extends string | undefined> = string extends Db
  ? Dataset
  : Db extends string
    ? Lowercase<Db> extends PostgresUrl
      ? PgDataset
      : SqliteDataset
    : Dataset;

/**
 * Opens the dataset at `db` (a SQLite file, or a postgres:// URL) read-only; without `db`, the one the CLI uses
 * without --db: NETINGEST_DATABASE_URL, else data/netingest.db.
 */
export async function openDataset(db?: string): Promise<Dataset> {
  if (db !== undefined && db.trim() === '') {
    throw new UsageError('openDataset(""): give a SQLite file or a postgres:// URL, or nothing for NETINGEST_DATABASE_URL');
  }
  // As the CLI without --db: NETINGEST_DATABASE_URL applies.
  const store = await openStore(locateDataset({ db }));
  return store.openDataset();
}

/** Opens `file` read-only (it must exist); SQLite refuses any write on this connection (`query_only`). */
export function openSqliteDataset(file: string): SqliteDataset {
  const database = openForReading(file);
  const all = <Row>(sql: string, params: QueryParams = []): Row[] =>
    // Read without SQLite's locks (unwritable folder), a file changed meanwhile may be half-read: the snapshot checks.
    withReadSnapshot(database, ({ sqlite }) => {
      try {
        const stmt = prepareUserSql(sqlite, sql);
        if (!stmt.reader) throw new BadQueryError('this statement returns no rows: openDataset() only reads');
        // Array or object alike: bind() takes positional values spread, named ones as one object.
        return (Array.isArray(params) ? stmt.bind(...(params as unknown[])) : stmt.bind(params)).all() as Row[];
      } catch (err) {
        throw asDatasetError(err);
      }
    });
  return {
    engine: 'sqlite',
    file: database.file,
    all,
    query: async <Row>(sql: string, params?: QueryParams) => all<Row>(sql, params),
    close: () => database.close(),
  };
}

/** A write that returns rows (INSERT ... RETURNING) is stopped by `query_only`: refused as any other write. */
function asDatasetError(err: unknown): unknown {
  if ((err as { code?: unknown } | null)?.code === 'SQLITE_READONLY') {
    return new BadQueryError('refused: this statement writes to the database (openDataset() only reads)', { cause: err });
  }
  return asQueryError(err);
}
