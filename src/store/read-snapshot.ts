/**
 * One consistent view of the dataset for a command that only reads, change-checked (read-without-shm.ts) however the
 * work ends. PostgreSQL's is pg/read-snapshot.ts.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { Connection } from './connection.ts';

/** What every reader's snapshot offers, whatever database is behind it. */
export interface ReadSnapshot {
  /**
   * Throws DatabaseChangedError when a lock-free SQLite read may have seen a changed file; call it before keeping
   * anything (an output renamed into place). A no-op where the engine keeps the snapshot.
   */
  assertUnchanged(): void;
}

/** A snapshot of a SQLite dataset: its connection and file, inside the read transaction. */
export type SqliteSnapshot = ReadSnapshot & Readonly<Pick<Connection, 'sqlite' | 'file'>>;

/** A snapshot held open across several reads (an export worker's life); `read` checks each one. */
export interface HeldSnapshot extends SqliteSnapshot {
  /** One synchronous read in the snapshot, then the change check (a read failing on a changed file reports it). */
  read<T>(fn: () => T): T;
}

/**
 * Runs `fn` in one read transaction, ended when it returns or its promise settles (an error or early end too), then the
 * change check, with `fn`'s error as cause. A refused BEGIN (inside another transaction) throws at once.
 */
export function withReadSnapshot<T>(connection: Connection, fn: (snapshot: SqliteSnapshot) => T): T {
  const { sqlite } = connection;
  // Outside the try: a BEGIN refused inside another transaction must not end that one.
  sqlite.exec('BEGIN');
  const failed = (err: unknown): never => {
    try {
      end(sqlite);
    } catch {
      // An iterator left open keeps the connection busy; closing the connection ends the transaction.
    }
    connection.assertUnchanged(err);
    throw err;
  };
  const done = <V>(value: V): V => {
    try {
      end(sqlite);
    } catch (err) {
      failed(err);
    }
    connection.assertUnchanged();
    return value;
  };
  let result: T;
  try {
    takeSnapshot(sqlite);
    result = fn(snapshotOf(connection));
  } catch (err) {
    return failed(err);
  }
  return result instanceof Promise ? (result.then(done, failed) as T) : done(result);
}

/** A read transaction open until the connection closes (an export worker's chunks); each `read` is change-checked. */
export function holdReadSnapshot(connection: Connection): HeldSnapshot {
  connection.sqlite.exec('BEGIN');
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

/** BEGIN takes no snapshot; the first read does: from here on the connection sees the database as it is now. */
function takeSnapshot(sqlite: BetterSqlite3.Database): void {
  sqlite.prepare('SELECT count(*) FROM sqlite_master').get();
}

function end(sqlite: BetterSqlite3.Database): void {
  if (sqlite.open && sqlite.inTransaction) sqlite.exec('COMMIT');
}
