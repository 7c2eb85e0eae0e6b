/**
 * Which of this build's migrations a database applied (drizzle's `__drizzle_migrations`). drizzle applies every
 * migration newer than the newest recorded, so a database recording one this build does not ship is "too new".
 */
import type BetterSqlite3 from 'better-sqlite3';
import { join } from 'node:path';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { PACKAGE_ROOT } from '../package-root.ts';
import { param, sql } from '../statement.ts';

/** The generated migrations folder, in the package (checkout or installed) so the cwd does not matter. */
export const MIGRATIONS_FOLDER = join(PACKAGE_ROOT, 'migrations');

/** drizzle's bookkeeping table (its default name). */
export const DRIZZLE_MIGRATIONS_TABLE = '__drizzle_migrations';

/** Records `schema_version` (schemaVersionOf) after migrating, on both engines; a right row is not rewritten. */
export const RECORD_SCHEMA_VERSION_SQL = sql`INSERT INTO netingest_meta (key, value) VALUES ('schema_version', ${param})
  ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE netingest_meta.value <> excluded.value`;

/** The schema version of a build shipping `migrations`: its newest migration's folderMillis, or '0'. */
export const schemaVersionOf = (migrations: ReadonlyArray<{ folderMillis: number }>) => String(migrations.at(-1)?.folderMillis ?? 0);

export interface KnownMigration {
  folderMillis: number;
  hash: string;
}

export interface MigrationState {
  /** Whether the database holds no tables at all (a new or empty file). */
  empty: boolean;
  /** Whether drizzle's bookkeeping table exists. */
  tracked: boolean;
  /** Applied migrations this build does not know (a newer netingest wrote them). */
  unknown: Array<{ hash: string; createdAt: number }>;
  /** Migrations of this build not applied yet. */
  pending: KnownMigration[];
}

export function knownMigrations(folder: string = MIGRATIONS_FOLDER): KnownMigration[] {
  return readMigrationFiles({ migrationsFolder: folder }).map((m) => ({ folderMillis: m.folderMillis, hash: m.hash }));
}

/** Compares the database's applied migrations with `known`. Reads only, so it works on read-only handles. */
export function readMigrationState(sqlite: BetterSqlite3.Database, known: readonly KnownMigration[]): MigrationState {
  const tables = sqlite
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
    .pluck()
    .all() as string[];
  const tracked = tables.includes(DRIZZLE_MIGRATIONS_TABLE);
  if (!tracked) return { empty: tables.length === 0, tracked, unknown: [], pending: [...known] };
  const applied = sqlite
    .prepare(`SELECT hash, created_at AS createdAt FROM ${DRIZZLE_MIGRATIONS_TABLE}`)
    .all() as Array<{ hash: string; createdAt: number | string }>;
  const knownMillis = new Set(known.map((m) => m.folderMillis));
  const unknown = applied
    .map((a) => ({ hash: a.hash, createdAt: Number(a.createdAt) }))
    .filter((a) => !knownMillis.has(a.createdAt));
  const newestApplied = applied.reduce((max, a) => Math.max(max, Number(a.createdAt)), Number.NEGATIVE_INFINITY);
  const pending = known.filter((m) => m.folderMillis > newestApplied);
  return { empty: false, tracked, unknown, pending };
}
