/**
 * The soak's reads of a dataset, the same on both engines: a SQLite file through better-sqlite3, a PostgreSQL
 * database through pg (int8 counts as numbers). Outside vitest (`npm run soak`), so not test/pg/engines.ts.
 */
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';

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
  const count = async (sql: string, ...params: unknown[]) => Number(Object.values((await reader.rows(sql, ...params))[0] ?? {})[0] ?? 0);
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
  const int8AsNumber = ((oid: number, format?: 'text' | 'binary') => (oid === 20 ? Number : pg.types.getTypeParser(oid, format))) as pg.CustomTypesConfig['getTypeParser'];
  const client = new pg.Client({ connectionString: url, types: { getTypeParser: int8AsNumber } });
  await client.connect();
  const rows = async <T>(sql: string, ...params: unknown[]) => {
    let n = 0;
    return (await client.query(sql.replace(/\?/g, () => `$${++n}`), params)).rows as T[];
  };
  return withCount({
    engine: 'postgres',
    rows,
    columns: async (table) => (await rows<{ name: string }>(
      "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = ? ORDER BY ordinal_position", table,
    )).map((r) => r.name),
    close: () => client.end(),
  });
}
