/**
 * The soak's reads of a dataset, the same on both engines: a SQLite file through better-sqlite3, a PostgreSQL
 * database through pg (values as SQLite gives them: ../support/sql-reads.ts). Outside vitest (`npm run soak`), so
 * not test/pg/engines.ts, which reads the same way.
 */
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { firstNumber, pgRows, SQLITE_LIKE_TYPES } from '../support/sql-reads.ts';

export interface SoakReader {
  engine: 'sqlite' | 'postgres';
  /** The rows of `sql` (`?` placeholders, SQL both engines read). */
  rows<T = Record<string, unknown>>(sql: string, ...params: unknown[]): Promise<T[]>;
  /** The first column of the first row, as a number. */
  count(sql: string, ...params: unknown[]): Promise<number>;
  /** A table's columns in their order. */
  columns(table: string): Promise<string[]>;
  close(): Promise<void>;
}

/** Opens `locator` (a SQLite file or a postgres:// URL) for reading. */
export async function openSoakReader(locator: string): Promise<SoakReader> {
  return /^postgres(ql)?:\/\//.test(locator) ? pgReader(locator) : sqliteReader(locator);
}

function withCount(reader: Omit<SoakReader, 'count'>): SoakReader {
  const count = async (sql: string, ...params: unknown[]) => firstNumber(await reader.rows(sql, ...params));
  return { ...reader, count };
}

function sqliteReader(file: string): SoakReader {
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  return withCount({
    engine: 'sqlite',
    rows: async <T>(sql: string, ...params: unknown[]) => db.prepare(sql).all(...params) as T[],
    columns: async (table) => db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(table) as string[],
    close: async () => void db.close(),
  });
}

async function pgReader(url: string): Promise<SoakReader> {
  const client = new pg.Client({ connectionString: url, types: SQLITE_LIKE_TYPES });
  await client.connect();
  const rows = async <T>(sql: string, ...params: unknown[]) => pgRows<T>(client, sql, params);
  return withCount({
    engine: 'postgres',
    rows,
    columns: async (table) => (await rows<{ name: string }>(
      "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = ? ORDER BY ordinal_position", table,
    )).map((r) => r.name),
    close: () => client.end(),
  });
}
