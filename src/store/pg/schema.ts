/**
 * The dataset's tables on PostgreSQL, built from the same definition as SQLite's (store/tables.ts): same names,
 * keys, unique indexes and indexes, so the public contract (docs/schema.md) reads the same on both engines.
 * `migrations/postgres/` is generated from this file (`npm run db:generate:pg`); views, SQLite-compatible SQL
 * functions and raw_body() are a hand-written migration there. test/pg/pg-schema-parity.test.ts compares the two.
 *
 * Kinds become PostgreSQL types (docs/postgres.md):
 * - `time` -> timestamptz, read back as PostgreSQL's text form. Days (`posted_on`, `posted_date`) are `text`,
 *   `YYYY-MM-DD` as on SQLite, so the ready queries that compare them with date text work unchanged.
 * - `flag` (0/1) -> smallint 0/1, not boolean: `is_headquarter = 1` in users' SQL keeps working.
 * - `json` -> jsonb; `given` (SQLite's BLOB "as given") -> jsonb too, so a number stays a number and a string a
 *   string.
 * - `bigint` -> bigint; an id -> bigint identity (BY DEFAULT, so `netingest copy` keeps the ids).
 * - `real` -> double precision. Raw bodies -> text, always as received (`body_encoding` NULL): PostgreSQL
 *   compresses large values itself (TOAST), and raw_body() stays plain SQL.
 */
import type { BuildColumns } from 'drizzle-orm';
import {
  bigint,
  check,
  doublePrecision,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uniqueIndex,
  type PgTableWithColumns,
} from 'drizzle-orm/pg-core';
import type { AutoId, Column, ColumnKind, TableDef } from '../table-kit.ts';
import { buildTables, type Dialect } from '../table-build.ts';
import { DATASET_TABLES, type DatasetTable } from '../tables.ts';

const COLUMNS = {
  text: () => text(),
  time: () => timestamp({ withTimezone: true, mode: 'string' }),
  json: () => jsonb(),
  int: () => integer(),
  bigint: () => bigint({ mode: 'number' }),
  flag: () => smallint(),
  real: () => doublePrecision(),
  given: () => jsonb(),
};

const identity = (mode: Exclude<AutoId, false>) => {
  const id = bigint({ mode: 'number' }).primaryKey();
  return mode === 'always' ? id.generatedAlwaysAsIdentity() : id.generatedByDefaultAsIdentity();
};

type ColumnOf<C> = C extends Column<infer K, infer T, infer N, infer D> ? ReturnType<(typeof COLUMNS)[K]> & { _: { notNull: N; hasDefault: D; $type: T } } : never;
type TableOf<Def> = Def extends TableDef<infer Name, infer C>
  ? PgTableWithColumns<{ name: Name; schema: undefined; columns: BuildColumns<Name, { [K in keyof C]: ColumnOf<C[K]> }, 'pg'>; dialect: 'pg' }>
  : never;
/** Each table of `Defs`, by name, typed as drizzle infers it. */
export type PgTablesOf<Defs extends TableDef> = { [Def in Defs as Def['name']]: TableOf<Def> };

/** PostgreSQL's dialect for buildTables(); the PostgreSQL-only coordination tables use it too. */
export const pg: Dialect = {
  engine: 'postgres',
  column: (kind: ColumnKind, autoId: AutoId) => (autoId ? identity(autoId) : COLUMNS[kind]()) as never,
  table: pgTable as never,
  index: index as never,
  uniqueIndex: uniqueIndex as never,
  primaryKey: primaryKey as never,
  check,
};

export const TABLES = buildTables(DATASET_TABLES, pg) as PgTablesOf<DatasetTable>;

// drizzle-kit finds the tables among this module's exports.
export const {
  companies, company_locations, company_industries, company_specialities, company_hashtags, similar_companies,
  posts, post_media, jobs, job_searches, job_search_results,
  runs, tasks, invalid_inputs, api_calls, raw_responses, answer_anomalies, answer_drift, changes, run_lock, netingest_meta,
} = TABLES;
