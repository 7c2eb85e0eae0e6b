/**
 * Opens the dataset: a connection (connection.ts) with this build's migrations applied, and drizzle over it.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import * as schema from './schema.ts';
import { DatabaseError, DatabaseNeedsMigrationError, DatabaseTooNewError } from './errors.ts';
import { MIGRATIONS_FOLDER, knownMigrations, readMigrationState, type KnownMigration } from './migration-state.ts';
import { CONNECTION_DEFAULTS, openConnection, toDatabaseError, type Connection } from './connection.ts';

export { toDatabaseError, toDatabaseUseError, type Connection } from './connection.ts';

/** The drizzle instance typed with the schema. */
export type Drizzle = BetterSQLite3Database<typeof schema>;

/** An open dataset. */
export interface Database extends Connection {
  /** drizzle over the same connection. */
  db: Drizzle;
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

const DEFAULTS = { ...CONNECTION_DEFAULTS, migrationsFolder: MIGRATIONS_FOLDER } as const;

/** Opens (creating and migrating when needed) the SQLite dataset at `file`. */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): Database {
  const opts = { ...DEFAULTS, ...options };
  const connection = openConnection(file, { readonly: opts.readonly, busyTimeoutMs: opts.busyTimeoutMs });
  const { sqlite, file: path } = connection;
  try {
    const known = knownMigrations(opts.migrationsFolder);
    prepareSchema(sqlite, path, known, opts.readonly, opts.migrationsFolder);
  } catch (err) {
    connection.close();
    throw toDatabaseError(err, path, opts.busyTimeoutMs);
  }
  return { ...connection, db: drizzle(sqlite, { schema }) };
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
