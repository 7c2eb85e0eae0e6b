/**
 * The dataset's tables on SQLite, built from tables.ts (types by kind: table-kit.ts's ColumnKind); drizzle-kit
 * generates `migrations/` from these exports and openDatabase() applies them.
 */
import { check, customType, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import type { AutoId, ColumnKind } from './table-kit.ts';
import { buildTables, type Dialect } from './table-build.ts';
import { DATASET_TABLES, type DatasetTable } from './tables.ts';

/** Values of a type the spec does not show: BLOB, so SQLite applies no affinity (TEXT would turn 12 into '12'). */
const asGiven = customType<{ data: string | number; driverData: string | number }>({ dataType: () => 'blob' });

const COLUMNS = { text, time: text, json: text, int: integer, bigint: integer, flag: integer, real, given: asGiven };

const sqlite: Dialect = {
  engine: 'sqlite',
  column: (kind: ColumnKind, autoId: AutoId) => (autoId ? integer().primaryKey({ autoIncrement: true }) : COLUMNS[kind]()) as never,
  table: sqliteTable as never,
  index: index as never,
  uniqueIndex: uniqueIndex as never,
  primaryKey: primaryKey as never,
  check,
};

// Untyped: nothing reads rows through these tables (the store's statements are its own); drizzle-kit reads them.
export const TABLES = buildTables(DATASET_TABLES, sqlite) as Record<DatasetTable['name'], unknown>;

// drizzle-kit finds the tables among this module's exports.
export const {
  companies, company_locations, company_industries, company_specialities, company_hashtags, similar_companies,
  posts, post_media, jobs, job_searches, job_search_results,
  runs, tasks, invalid_inputs, api_calls, raw_responses, answer_anomalies, answer_drift, changes, run_lock, netingest_meta,
} = TABLES;
