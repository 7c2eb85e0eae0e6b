/**
 * A plain connection to the dataset (WAL, foreign keys, busy timeout; an unusable file as a DatabaseError). No schema
 * work or drizzle, so a thread running only prepared statements (the WAL checkpointer) starts in milliseconds.
 */
import BetterSqlite3 from 'better-sqlite3';
import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { DatabaseError, DatabaseReadonlyError } from './errors.ts';
import { secondsFromEnv } from '../seconds-from-env.ts';
import { failedForWantOfShm, openWithoutShm, type ChangeWatch } from './read-without-shm.ts';
import { registerRawBodyFunction } from './raw-body.ts';

/*
 * SQLite's `file:` URIs, which read-without-shm.ts needs (`?immutable=1`): better-sqlite3's SQLite is built with
 * SQLITE_USE_URI=0 and has no per-connection flag, but its addon reads this variable when it loads (at the first
 * `new Database()`, made only here). Paths are made absolute first, so none starts with "file:". A user's value wins.
 */
process.env.SQLITE_USE_URI ??= '1';

export interface Connection {
  /** The raw connection, for prepared statements on hot paths. */
  sqlite: BetterSqlite3.Database;
  /** Absolute path of the file. */
  file: string;
  /** Closes the connection; safe to call twice. */
  close(): void;
  /**
   * On a read-only connection without -shm and locks (read-without-shm.ts), throws DatabaseChangedError if the file
   * changed since opened, `failure` as cause; a no-op elsewhere. Call it after reading, before keeping anything.
   */
  assertUnchanged(failure?: unknown): void;
}

export interface ConnectionOptions {
  /** Read-only: no folder made, the file must exist, and `query_only` is on so nothing can write. Default false. */
  readonly?: boolean;
  /** How long a statement waits for another process's lock before failing. Default: busyTimeoutMs(). */
  busyTimeoutMs?: number;
}

export const CONNECTION_DEFAULTS = { readonly: false, busyTimeoutMs: 5000 } as const;

/** Seconds a connection waits for another process's lock (default CONNECTION_DEFAULTS.busyTimeoutMs). */
export const BUSY_TIMEOUT_ENV = 'NETINGEST_SQLITE_BUSY_SECONDS';

/** The busy timeout of connections opened without one, in ms: BUSY_TIMEOUT_ENV's, at least 1 s; a bad value is a usage error. */
export function busyTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  return secondsFromEnv(BUSY_TIMEOUT_ENV, 1, env) ?? CONNECTION_DEFAULTS.busyTimeoutMs;
}

/** Opens the SQLite file at `file` and sets the connection up; the schema is the caller's business. */
export function openConnection(file: string, options: ConnectionOptions = {}): Connection {
  const opts = { ...CONNECTION_DEFAULTS, ...options, busyTimeoutMs: options.busyTimeoutMs ?? busyTimeoutMs() };
  const path = resolve(file);
  if (!opts.readonly) ensureFolder(path);
  else if (!existsSync(path)) throw new DatabaseError('DB_NOT_FOUND', path, `database ${path} does not exist`);
  let sqlite: BetterSqlite3.Database;
  let watch: ChangeWatch | null = null;
  try {
    sqlite = openConfigured(path, opts);
  } catch (err) {
    const failure = toDatabaseError(err, path, opts.busyTimeoutMs);
    if (!opts.readonly || !failedForWantOfShm(err) || !(failure instanceof DatabaseError)) throw failure;
    try {
      ({ opened: sqlite, watch } = openWithoutShm(path, failure, (uri) => openConfigured(uri, opts)));
    } catch (retryErr) {
      throw toDatabaseError(retryErr, path, opts.busyTimeoutMs);
    }
  }
  return {
    sqlite,
    file: path,
    close() {
      if (sqlite.open) sqlite.close();
    },
    assertUnchanged(failure?: unknown) {
      watch?.assertUnchanged(failure);
    },
  };
}

/** Opens `name` (the path, or a `file:` URI) and sets the connection up; SQLite's error comes out as it is. */
function openConfigured(name: string, opts: Required<ConnectionOptions>): BetterSqlite3.Database {
  const sqlite = new BetterSqlite3(name, { readonly: opts.readonly, fileMustExist: opts.readonly, timeout: opts.busyTimeoutMs });
  try {
    sqlite.pragma(`busy_timeout = ${Math.max(0, Math.trunc(opts.busyTimeoutMs))}`);
    // The first statement that reads the file: a non-database file fails here with SQLITE_NOTADB.
    sqlite.prepare('SELECT count(*) FROM sqlite_master').get();
    if (!opts.readonly) {
      sqlite.pragma('journal_mode = WAL');
      sqlite.pragma('synchronous = NORMAL');
    } else {
      // The connection's own guard, the last of a reader's locks: even a statement that slipped through cannot write.
      sqlite.pragma('query_only = ON');
    }
    sqlite.pragma('foreign_keys = ON');
    registerRawBodyFunction(sqlite);
  } catch (err) {
    sqlite.close();
    throw err;
  }
  return sqlite;
}

function ensureFolder(path: string): void {
  const dir = dirname(path);
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      throw new DatabaseReadonlyError(path, `cannot create folder ${dir}`, { cause: err });
    }
    throw new DatabaseError('DB_OPEN_FAILED', path, `cannot create folder ${dir}: ${(err as Error).message}`, { cause: err });
  }
}

/** Maps a SQLite or file-system error met while opening to a DatabaseError; others pass through. */
export function toDatabaseError(err: unknown, path: string, busyTimeoutMs: number): unknown {
  if (err instanceof DatabaseError) return err;
  const code = sqliteCodeOf(err);
  const message = err instanceof Error ? err.message : String(err);
  if (code.startsWith('SQLITE_NOTADB') || code.startsWith('SQLITE_CORRUPT')) {
    return new DatabaseError('DB_CORRUPT', path, `${path} is not a usable SQLite database (${message}); check the --db path`, { cause: err });
  }
  if (code.startsWith('SQLITE_READONLY') || code === 'SQLITE_PERM' || code === 'SQLITE_AUTH') {
    return new DatabaseReadonlyError(path, message, { cause: err });
  }
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new DatabaseError('DB_LOCKED', path, `database ${path} is locked by another process (waited ${busyTimeoutMs} ms); try again when it has finished`, { cause: err });
  }
  if (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_IOERR')) {
    if (existsSync(path) && statSync(path).isDirectory()) {
      return new DatabaseError('DB_OPEN_FAILED', path, `cannot open database ${path}: the path is a folder`, { cause: err });
    }
    if (!writable(dirname(path))) return new DatabaseReadonlyError(path, `${message}; folder not writable`, { cause: err });
    return new DatabaseError('DB_OPEN_FAILED', path, `cannot open database ${path}: ${message}`, { cause: err });
  }
  return err;
}

/** An open database's SQLite error (full disk, bad pages, a lock) as a DatabaseError naming the file; others pass. */
export function toDatabaseUseError(err: unknown, path: string): unknown {
  const code = sqliteCodeOf(err);
  const message = err instanceof Error ? err.message : String(err);
  // The file is open: an I/O error now is a write that failed (a full disk, a file size limit), not "cannot open".
  if (code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR')) {
    return new DatabaseError(
      'DB_WRITE_FAILED',
      path,
      `database ${path}: could not write (${message}): is the disk full, or a file size limit reached? What was committed before is kept [${code}]`,
      { cause: err },
    );
  }
  if (code === 'SQLITE_TOOBIG') {
    return new DatabaseError('DB_WRITE_FAILED', path, `database ${path}: a value is larger than SQLite can store in one field (${message}) [${code}]`, { cause: err });
  }
  const mapped = toDatabaseError(err, path, busyTimeoutMs());
  if (mapped !== err) return mapped;
  if (!code.startsWith('SQLITE_')) return err;
  return new DatabaseError('DB_WRITE_FAILED', path, `database ${path}: ${message} [${code}]`, { cause: err });
}

/**
 * What SQLite said in refusing a value of the rows written (a constraint or trigger, a value past its limits), or
 * null for any other failure: the run writer then stores the refused answer apart (GroupCommitWriter.refusedAlone).
 */
export function sqliteRefusal(err: unknown): string | null {
  const code = sqliteCodeOf(err);
  if (!code.startsWith('SQLITE_CONSTRAINT') && code !== 'SQLITE_TOOBIG' && code !== 'SQLITE_MISMATCH') return null;
  return `${(err as Error).message} [${code}]`;
}

/** better-sqlite3's error code (`SQLITE_CONSTRAINT_CHECK`...), '' for an error without one. */
function sqliteCodeOf(err: unknown): string {
  return typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
