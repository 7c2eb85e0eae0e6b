/**
 * store/ingest/tables.ts's writes in PostgreSQL's dialect, as `head VALUES (...), (...) tail` so that one statement
 * writes many rows; LEAST/GREATEST stand for SQLite's two-argument min/max. Values go in as `copy` converts them.
 */
import type { Row } from '../../operations/stored-rows.ts';
import { pgValueConverters } from '../copy-dataset.ts';
import { onConflict, TABLE_WRITES } from '../ingest/tables.ts';

export interface PgTableStatement {
  table: string;
  columns: readonly string[];
  convert: Array<(value: unknown) => unknown>;
  /** `INSERT INTO table (columns)`, before the VALUES. */
  head: string;
  /** What follows the VALUES: the ON CONFLICT clause, or nothing (a set's plain insert). */
  tail: string;
  /** The ON CONFLICT columns: rows with the same values here are the same stored row. null: a plain insert. */
  conflictKey: readonly string[] | null;
}

const statements = new Map<string, PgTableStatement>();

export function tableStatementOf(table: string): PgTableStatement {
  const known = statements.get(table);
  if (known) return known;
  const w = Object.hasOwn(TABLE_WRITES, table) ? TABLE_WRITES[table as keyof typeof TABLE_WRITES] : undefined;
  if (!w) throw new Error(`internal: no statement for table ${table}`);
  const converters = pgValueConverters(table);
  // The stored column named by its table: bare, it is ambiguous beside `excluded`.
  const merge = {
    new: (c: string) => `excluded.${c}`,
    earliest: (c: string) => `LEAST(${table}.${c}, excluded.${c})`,
    latest: (c: string) => `GREATEST(${table}.${c}, excluded.${c})`,
  };
  const s: PgTableStatement = {
    table,
    columns: w.columns,
    convert: w.columns.map((c) => converters.get(c) ?? ((v) => v)),
    head: `INSERT INTO ${table} (${w.columns.join(', ')})`,
    tail: onConflict(w, merge),
    conflictKey: w.conflictKey,
  };
  statements.set(table, s);
  return s;
}

/** A row's parameters in the statement's column order. */
export function paramsOf(s: PgTableStatement, row: Row): unknown[] {
  return s.columns.map((column, i) => {
    const value = row[column];
    if (value === undefined) throw new Error(`internal: row of ${s.table} without ${column}`);
    if (typeof value !== 'bigint') return s.convert[i]!(value);
    // A bigint (object_urn, ids past 2^53) goes as its digits, which every numeric column and jsonb read as that number.
    return Number.isSafeInteger(Number(value)) ? s.convert[i]!(Number(value)) : value.toString();
  });
}
