/**
 * The dataset's tables, built from store/tables.ts as SQLite's are (test/pg/pg-schema-parity.test.ts compares them);
 * `npm run db:generate:pg` makes migrations/postgres/ from it (views and functions are hand-written there). Types: see
 * docs/postgres.md (`flag` smallint so `= 1` works, `given` jsonb so a number stays one, ids BY DEFAULT for copy).
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
