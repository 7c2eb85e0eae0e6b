/**
 * One consistent view of the dataset for a command that only reads (export, enrich, query, status, plan): the
 * read transaction opened, the reader's work done in it, the transaction closed however that work ends, and the
 * change check (Connection.assertUnchanged, for a file read without locks: read-without-shm.ts) run after it,
 * on success and on failure alike. Every reader goes through here instead of pairing the calls itself.
 *
 * Given a PostgreSQL store instead, the same call runs `fn` in a READ ONLY REPEATABLE READ transaction on one
 * pooled client, whose change check is a no-op (pg/read-snapshot.ts).
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { Connection } from './connection.ts';
import type { PgStore } from './pg/open.ts';
import type { PgSnapshot, PgSnapshotOptions } from './pg/read-snapshot.ts';

/** What every reader's snapshot offers, whatever database is behind it. */
export interface ReadSnapshot {
  /**
   * Throws (DatabaseChangedError) when what was read so far may be inconsistent: a SQLite file read without
   * locks that changed meanwhile. Call it before keeping anything (an output file renamed into place); the
   * wrapper calls it once more at the end. A no-op where the database keeps the snapshot itself.
   */
  assertUnchanged(): void;
}

/** A snapshot of a SQLite dataset: its connection, inside the read transaction. */
export interface SqliteSnapshot extends ReadSnapshot {
  readonly sqlite: BetterSqlite3.Database;
  /** Absolute path of the database file. */
  readonly file: string;
}

/** A snapshot held open across several reads (an export worker's life); `read` checks each one. */
export interface HeldSnapshot extends SqliteSnapshot {
  /** Runs one synchronous read in the snapshot, then the change check; a read failed on a changed file reports the change. */
  read<T>(fn: () => T): T;
}

/**
 * Runs `fn` in one read transaction on `connection` (opened here, so the snapshot is the database as it is now)
 * and ends it when `fn`'s promise settles: rows streamed inside `fn` all come from that snapshot, and an error or
 * an early end closes it too. The change check runs after `fn`, with its error as the cause on failure.
 */
export async function withReadSnapshot<T>(connection: Connection, fn: (snapshot: SqliteSnapshot) => Promise<T> | T): Promise<T>;
/** On PostgreSQL: a READ ONLY REPEATABLE READ transaction on one pooled client (pg/read-snapshot.ts). */
export async function withReadSnapshot<T>(store: PgStore, fn: (snapshot: PgSnapshot) => Promise<T> | T, options?: PgSnapshotOptions): Promise<T>;
export async function withReadSnapshot<T>(
  db: Connection | PgStore,
  fn: ((snapshot: SqliteSnapshot) => Promise<T> | T) | ((snapshot: PgSnapshot) => Promise<T> | T),
  options?: PgSnapshotOptions,
): Promise<T> {
  if ('pool' in db) {
    // Loaded here: a SQLite reader loads no pg.
    const { withPgReadSnapshot } = await import('./pg/read-snapshot.ts');
    return withPgReadSnapshot(db.pool, fn as (snapshot: PgSnapshot) => Promise<T> | T, options);
  }
  return withSqliteReadSnapshot(db, fn as (snapshot: SqliteSnapshot) => Promise<T> | T);
}

async function withSqliteReadSnapshot<T>(connection: Connection, fn: (snapshot: SqliteSnapshot) => Promise<T> | T): Promise<T> {
  begin(connection.sqlite);
  let result: T;
  try {
    takeSnapshot(connection.sqlite);
    result = await fn(snapshotOf(connection));
    end(connection.sqlite);
  } catch (err) {
    endQuietly(connection.sqlite);
    connection.assertUnchanged(err);
    throw err;
  }
  connection.assertUnchanged();
  return result;
}

/** withReadSnapshot for a synchronous read, where the caller cannot await (openDataset's `all()`); SQLite only. */
export function withReadSnapshotSync<T>(connection: Connection, fn: (snapshot: SqliteSnapshot) => T): T {
  begin(connection.sqlite);
  let result: T;
  try {
    takeSnapshot(connection.sqlite);
    result = fn(snapshotOf(connection));
    end(connection.sqlite);
  } catch (err) {
    endQuietly(connection.sqlite);
    connection.assertUnchanged(err);
    throw err;
  }
  connection.assertUnchanged();
  return result;
}

/**
 * Opens a read transaction that stays open until the connection closes (an export worker reads every chunk from
 * it). Each `read` is followed by the change check.
 */
export function holdReadSnapshot(connection: Connection): HeldSnapshot {
  begin(connection.sqlite);
  takeSnapshot(connection.sqlite);
  return {
    ...snapshotOf(connection),
    read<T>(fn: () => T): T {
      let result: T;
      try {
        result = fn();
      } catch (err) {
        // A read that failed on a file that changed under it (torn pages look corrupt) reports the change.
        connection.assertUnchanged(err);
        throw err;
      }
      connection.assertUnchanged();
      return result;
    },
  };
}

function snapshotOf(connection: Connection): SqliteSnapshot {
  return { sqlite: connection.sqlite, file: connection.file, assertUnchanged: () => connection.assertUnchanged() };
}

/** Outside the wrapper's try: a BEGIN refused inside another transaction must not end that one. */
function begin(sqlite: BetterSqlite3.Database): void {
  sqlite.exec('BEGIN');
}

/** BEGIN takes no snapshot; the first read does: from here on the connection sees the database as it is now. */
function takeSnapshot(sqlite: BetterSqlite3.Database): void {
  sqlite.prepare('SELECT count(*) FROM sqlite_master').get();
}

function end(sqlite: BetterSqlite3.Database): void {
  if (sqlite.open && sqlite.inTransaction) sqlite.exec('COMMIT');
}

/** Ends the transaction after a failure, whose error is the one to report. */
function endQuietly(sqlite: BetterSqlite3.Database): void {
  try {
    end(sqlite);
  } catch {
    // An iterator left open keeps the connection busy; closing the connection ends the transaction.
  }
}
