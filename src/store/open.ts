/** Opens the dataset: a connection (connection.ts) with this build's migrations applied (drizzle's migrator). */
import { existsSync } from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import { migrate } from 'drizzle-orm/better-sqlite3/migrator';
import { DatabaseError, DatabaseNeedsMigrationError, DatabaseTooNewError } from './errors.ts';
import { MIGRATIONS_FOLDER, RECORD_SCHEMA_VERSION_SQL, knownMigrations, readMigrationState, schemaVersionOf, type KnownMigration } from './migration-state.ts';
import { busyTimeoutMs, CONNECTION_DEFAULTS, openConnection, toDatabaseError, type Connection, type ConnectionOptions } from './connection.ts';
import { runWwwUpgrade, wwwUpgradeDue } from './upgrades/www-canonical-urls.ts';
import { schemaUpgraded } from '../schema-upgrade-notice.ts';
import { networkHost } from '../urls/canonical.ts';
import { UsageError } from '../errors.ts';

export { toDatabaseError, toDatabaseUseError, type Connection } from './connection.ts';

/** An open dataset: a connection whose schema is this build's. */
export type Database = Connection;

export interface OpenDatabaseOptions extends ConnectionOptions {
  /**
   * With `readonly`: an older netingest's file is first upgraded on a short read-write connection, so readers are not
   * locked out till a run (a blank file is refused).
   */
  upgradeOlderSchema?: boolean;
  /** Migrations to apply; tests only. Default: the repository's migrations/ folder. */
  migrationsFolder?: string;
}

const DEFAULTS = { ...CONNECTION_DEFAULTS, upgradeOlderSchema: false, migrationsFolder: MIGRATIONS_FOLDER } as const;

/** Opens (creating and migrating when needed) the SQLite dataset at `file`. */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): Database {
  const opts = { ...DEFAULTS, ...options, busyTimeoutMs: options.busyTimeoutMs ?? busyTimeoutMs() };
  try {
    return openOnce(file, opts);
  } catch (err) {
    if (!(opts.readonly && opts.upgradeOlderSchema && err instanceof DatabaseNeedsMigrationError && err.olderSchema)) throw err;
  }
  // A newer build reading a file an older one wrote: upgrade it as a writing command would, then read.
  try {
    openOnce(file, { ...opts, readonly: false }).close();
  } catch (err) {
    throw new DatabaseNeedsMigrationError(file, true, err instanceof Error ? err.message : String(err));
  }
  return openOnce(file, opts);
}

/** A read-only connection (`query_only` on); a file of an older netingest is upgraded first, nothing else written. */
export function openForReading(file: string): Database {
  if (!existsSync(file)) throw new UsageError(`no database at ${file}: nothing has run yet (see --db)`, 'DB_NOT_FOUND');
  return openDatabase(file, { readonly: true, upgradeOlderSchema: true });
}

function openOnce(file: string, opts: Required<OpenDatabaseOptions>): Database {
  const connection = openConnection(file, { readonly: opts.readonly, busyTimeoutMs: opts.busyTimeoutMs });
  const { sqlite, file: path } = connection;
  try {
    prepareSchema(sqlite, path, opts);
  } catch (err) {
    connection.close();
    throw toDatabaseError(err, path, opts.busyTimeoutMs);
  }
  return connection;
}

function prepareSchema(sqlite: BetterSqlite3.Database, path: string, opts: Required<OpenDatabaseOptions>): void {
  const known = knownMigrations(opts.migrationsFolder);
  const state = readMigrationState(sqlite, known);
  if (!state.tracked && !state.empty) {
    throw new DatabaseError(
      'DB_NOT_NETINGEST',
      path,
      `${path} is a SQLite database of another program (it has tables but no netingest schema); ` +
        'choose another --db file',
    );
  }
  if (state.unknown.length > 0) throw new DatabaseTooNewError(path, state.unknown);
  if (state.pending.length > 0) {
    if (opts.readonly) throw new DatabaseNeedsMigrationError(path, state.tracked);
    // A dataset an older release made (not a new file): that release refuses it from now on, which the command says.
    if (applyMigrations(sqlite, known, opts.migrationsFolder) && state.tracked) schemaUpgraded(path);
  }
  // The rewrite 0008 asks for (URL parsing SQL cannot do) runs after the SQL migrations, once.
  if (wwwUpgradeDue(sqlite)) {
    if (opts.readonly) throw new DatabaseNeedsMigrationError(path, true);
    runWwwUpgrade(sqlite, networkHost());
  }
}

/** Applies the pending migrations; false when another process applied them first. */
function applyMigrations(sqlite: BetterSqlite3.Database, known: readonly KnownMigration[], migrationsFolder: string): boolean {
  let applied = true;
  try {
    migrate(drizzle(sqlite), { migrationsFolder });
  } catch (err) {
    applied = false;
    // Two processes may migrate the same new file at once: the loser fails, and all is well if the winner
    // applied everything.
    const state = readMigrationState(sqlite, known);
    // drizzle wraps SQLite's error ("Failed to run the query ..."): its cause carries the code (SQLITE_BUSY, a
    // read-only file) that toDatabaseError turns into a message the user can act on.
    if (state.pending.length > 0 || state.unknown.length > 0) throw sqliteCause(err);
  }
  sqlite.prepare(RECORD_SCHEMA_VERSION_SQL.sqlite).run(schemaVersionOf(known));
  return applied;
}

/** The SQLite error behind a wrapper, or the error itself. */
function sqliteCause(err: unknown): unknown {
  const cause = (err as { cause?: unknown } | null)?.cause;
  const code = (cause as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? cause : err;
}
