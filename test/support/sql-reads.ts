/**
 * Reading a dataset with the same SQL on both engines, for tests and for `npm run soak` (so no vitest here):
 * `?` placeholders, and PostgreSQL's values as SQLite gives them.
 */
import pg from 'pg';

/**
 * Values as SQLite gives them: int8 (count(*), bigint ids) as numbers, timestamptz as the ISO text SQLite
 * stores, jsonb as its text (node-postgres would give a string, a Date and a parsed object).
 */
const AS_SQLITE: Record<number, (v: string) => unknown> = { 20: Number, 1184: (v) => new Date(v).toISOString(), 3802: (v) => v };
export const SQLITE_LIKE_TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => AS_SQLITE[oid] ?? pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** The rows of `sql` written with `?` placeholders, on a PostgreSQL pool or client (give it SQLITE_LIKE_TYPES). */
export async function pgRows<T>(db: pg.Pool | pg.Client, sql: string, params: unknown[]): Promise<T[]> {
  let n = 0;
  return (await db.query(sql.replace(/\?/g, () => `$${++n}`), params)).rows as T[];
}

/** The first column of the first row, as a number (count(*), sum(...)); 0 for none. */
export function firstNumber(rows: ReadonlyArray<Record<string, unknown>>): number {
  return Number(Object.values(rows[0] ?? {})[0] ?? 0);
}
