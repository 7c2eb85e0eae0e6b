/**
 * The dataset's tables, built from store/tables.ts as SQLite's are (test/pg/pg-schema-parity.test.ts compares them);
 * `npm run db:generate:pg` makes migrations/postgres/ from it (views and functions are hand-written there). Types: see
 * docs/postgres.md (`flag` smallint so `= 1` works, `given` jsonb so a number stays one, ids BY DEFAULT for copy).
 */
import { bigint, check, doublePrecision, index, integer, jsonb, pgTable, primaryKey, smallint, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import type { AutoId, ColumnKind } from '../table-kit.ts';
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

// Untyped, as SQLite's (schema.ts): nothing reads rows through these tables; drizzle-kit reads them.
export const TABLES = buildTables(DATASET_TABLES, pg) as Record<DatasetTable['name'], unknown>;

// drizzle-kit finds the tables among this module's exports.
export const {
  companies, company_locations, company_industries, company_specialities, company_hashtags, similar_companies,
  posts, post_media, jobs, job_searches, job_search_results,
  runs, tasks, invalid_inputs, api_calls, raw_responses, answer_anomalies, answer_drift, changes, run_lock, netingest_meta,
} = TABLES;
