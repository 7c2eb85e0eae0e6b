/**
 * Opens the dataset: creates the folder, sets the connection up (WAL, foreign keys, busy timeout) and applies
 * this build's migrations, turning every way a file can be unusable into a DatabaseError with a stable code.
 */
import BetterSqlite3 from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import * as schema from './schema.ts';
import {
  DatabaseCorruptError,
  DatabaseError,
  DatabaseLockedError,
  DatabaseNeedsMigrationError,
  DatabaseReadonlyError,
  DatabaseTooNewError,
} from './errors.ts';
import { MIGRATIONS_FOLDER, knownMigrations, readMigrationState, type KnownMigration } from './migration-state.ts';

/** The drizzle instance typed with the schema. */
export type Drizzle = BetterSQLite3Database<typeof schema>;

/** An open dataset. */
export interface Database {
  /** The raw connection, for prepared statements on hot paths. */
  sqlite: BetterSqlite3.Database;
  /** drizzle over the same connection. */
  db: Drizzle;
  /** Absolute path of the file. */
  file: string;
  /** Closes the connection; safe to call twice. */
  close(): void;
}

/** Options of openDatabase(). */
export interface OpenDatabaseOptions {
  /** Open read-only: no folder creation, no migration, refuses a file that needs migrating. Default false. */
  readonly?: boolean;
  /** How long a statement waits for another process's lock before failing. Default 5000. */
  busyTimeoutMs?: number;
  /** Migrations to apply; tests only. Default: the repository's migrations/ folder. */
  migrationsFolder?: string;
}

const DEFAULTS = { readonly: false, busyTimeoutMs: 5000, migrationsFolder: MIGRATIONS_FOLDER } as const;

/** Opens (creating and migrating when needed) the SQLite dataset at `file`. */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): Database {
  const opts = { ...DEFAULTS, ...options };
  const path = resolve(file);
  if (!opts.readonly) ensureFolder(path);
  else if (!existsSync(path)) throw new DatabaseError('DB_NOT_FOUND', path, `database ${path} does not exist`);

  let sqlite: BetterSqlite3.Database;
  try {
    sqlite = new BetterSqlite3(path, { readonly: opts.readonly, fileMustExist: opts.readonly, timeout: opts.busyTimeoutMs });
  } catch (err) {
    throw toDatabaseError(err, path, opts.busyTimeoutMs);
  }
  try {
    configure(sqlite, opts.readonly, opts.busyTimeoutMs);
    const known = knownMigrations(opts.migrationsFolder);
    prepareSchema(sqlite, path, known, opts.readonly, opts.migrationsFolder);
  } catch (err) {
    sqlite.close();
    throw toDatabaseError(err, path, opts.busyTimeoutMs);
  }
  const db = drizzle(sqlite, { schema });
  return {
    sqlite,
    db,
    file: path,
    close() {
      if (sqlite.open) sqlite.close();
    },
  };
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
    throw new DatabaseError('DB_OPEN_FAILED', path, `cannot create folder ${dir}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

function configure(sqlite: BetterSqlite3.Database, readonly: boolean, busyTimeoutMs: number): void {
  sqlite.pragma(`busy_timeout = ${Math.max(0, Math.trunc(busyTimeoutMs))}`);
  // The first statement that reads the file: a non-database file fails here with SQLITE_NOTADB.
  sqlite.prepare('SELECT count(*) FROM sqlite_master').get();
  if (!readonly) {
    sqlite.pragma('journal_mode = WAL');
    sqlite.pragma('synchronous = NORMAL');
  }
  sqlite.pragma('foreign_keys = ON');
}

function prepareSchema(
  sqlite: BetterSqlite3.Database,
  path: string,
  known: readonly KnownMigration[],
  readonly: boolean,
  migrationsFolder: string,
): void {
  let state = readMigrationState(sqlite, known);
  if (!state.tracked && !state.empty) {
    throw new DatabaseError(
      'DB_NOT_NETINGEST',
      path,
      `${path} is a SQLite database of another program (it has tables but no netingest schema); ` +
        'choose another --db file',
    );
  }
  if (state.unknown.length > 0) {
    throw new DatabaseTooNewError(
      path,
      state.unknown.map((m) => `${new Date(m.createdAt).toISOString()} (${m.hash.slice(0, 12)})`),
    );
  }
  if (state.pending.length === 0) return;
  if (readonly) throw new DatabaseNeedsMigrationError(path);
  try {
    migrate(drizzle(sqlite), { migrationsFolder });
  } catch (err) {
    // Two processes may migrate the same new file at once: the loser fails, and all is well if the winner
    // applied everything.
    state = readMigrationState(sqlite, known);
    if (state.pending.length > 0 || state.unknown.length > 0) throw err;
  }
  const version = known.length === 0 ? '0' : String(known[known.length - 1]!.folderMillis);
  sqlite
    .prepare(
      `INSERT INTO netingest_meta (key, value) VALUES ('schema_version', ?)
       ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE value <> excluded.value`,
    )
    .run(version);
}

/** Maps a SQLite or file-system error met while opening to a DatabaseError; others pass through. */
export function toDatabaseError(err: unknown, path: string, busyTimeoutMs: number): unknown {
  if (err instanceof DatabaseError) return err;
  const code = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
  const message = err instanceof Error ? err.message : String(err);
  if (code.startsWith('SQLITE_NOTADB') || code.startsWith('SQLITE_CORRUPT')) {
    return new DatabaseCorruptError(path, message, { cause: err });
  }
  if (code.startsWith('SQLITE_READONLY') || code === 'SQLITE_PERM' || code === 'SQLITE_AUTH') {
    return new DatabaseReadonlyError(path, message, { cause: err });
  }
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new DatabaseLockedError(path, busyTimeoutMs, { cause: err });
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

/**
 * Maps any SQLite error met while using an open database (a write on a full disk, damaged pages, another
 * process's lock) to a DatabaseError that names the file; other errors pass through.
 */
export function toDatabaseUseError(err: unknown, path: string, busyTimeoutMs = DEFAULTS.busyTimeoutMs): unknown {
  const mapped = toDatabaseError(err, path, busyTimeoutMs);
  if (mapped !== err) return mapped;
  const code = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : '';
  if (!code.startsWith('SQLITE_')) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new DatabaseError('DB_WRITE_FAILED', path, `database ${path}: ${message} [${code}]`, { cause: err });
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
