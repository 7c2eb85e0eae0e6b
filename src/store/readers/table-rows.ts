/**
 * The rows of a table or view as `netingest export <table>` reads them (rowid order, `--since` on its seen-at column),
 * also by rowid range for the parallel export's workers. PostgreSQL's: pgTableRowsSql.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { openConnection } from '../connection.ts';
import { holdReadSnapshot, type SqliteSnapshot } from '../read-snapshot.ts';
import type { PgSnapshot } from '../pg/read-snapshot.ts';

/** Which rows: a table or view of export/sources.ts, and the --since filter. */
export interface TableQuery {
  table: string;
  kind: 'table' | 'view';
  /** Only rows whose `column` is at or after `value` (ISO-8601 UTC). */
  since?: { column: string; value: string } | undefined;
}

/**
 * Every row of `query` in the snapshot (raw), in insertion (rowid) order for a table, and their column names.
 * The rows start only when iterated: an iterator opened but never closed keeps the connection busy.
 */
export function tableRows(snapshot: SqliteSnapshot, query: TableQuery): { columns: string[]; rows: Iterable<unknown[]> } {
  const where = query.since !== undefined ? ` WHERE "${query.since.column}" >= ?` : '';
  const order = query.kind === 'table' ? ' ORDER BY rowid' : '';
  const stmt = snapshot.sqlite.prepare(`SELECT * FROM "${query.table}"${where}${order}`).raw(true) as BetterSqlite3.Statement<unknown[], unknown[]>;
  const params = query.since !== undefined ? [query.since.value] : [];
  return {
    columns: stmt.columns().map((c) => c.name),
    rows: { [Symbol.iterator]: () => stmt.iterate(...params) as IterableIterator<unknown[]> },
  };
}

/**
 * The table's smallest and largest rowid, null when empty. Two statements: SQLite answers a lone min() or max() of the
 * rowid from one end of the b-tree, but `SELECT min(rowid), max(rowid)` scans the whole table.
 */
export function rowidBounds(snapshot: SqliteSnapshot, table: string): { first: bigint; last: bigint } | null {
  const end = (fn: 'min' | 'max') =>
    snapshot.sqlite.prepare(`SELECT ${fn}(rowid) FROM "${table}"`).pluck().safeIntegers(true).get() as bigint | null;
  const first = end('min');
  const last = end('max');
  return first === null || last === null ? null : { first, last };
}

/** The table's row count; count(*) walks the smallest index. */
export function rowCount(snapshot: SqliteSnapshot, table: string): bigint {
  return snapshot.sqlite.prepare(`SELECT count(*) FROM "${table}"`).pluck().safeIntegers(true).get() as bigint;
}

/** What a worker opens its chunk reader on: plain data, handed to the thread. */
export interface ChunkSource {
  db: string;
  table: string;
  since: { column: string; value: string } | undefined;
  busyTimeoutMs: number;
}

/** SQLite page cache of a worker's connection (the default is 16 MB per connection). */
const CHUNK_READER_CACHE_KIB = 2048;

/** Opens `source.db` read-only on its own connection, one read transaction held for the reader's life: one snapshot. */
export function openChunkReader(source: ChunkSource) {
  // Not openForReading(): the main thread checked the file and schema, and a worker without drizzle starts faster and
  // lighter. openConnection() still, for a folder this user cannot write (read-without-shm.ts).
  const connection = openConnection(source.db, { readonly: true, busyTimeoutMs: source.busyTimeoutMs });
  const { sqlite } = connection;
  // Chunks are read once, in rowid order: a page cache beyond the b-tree's upper levels would only cost memory.
  sqlite.pragma(`cache_size = -${CHUNK_READER_CACHE_KIB}`);
  const snapshot = holdReadSnapshot(connection);
  const where = source.since ? ` AND "${source.since.column}" >= ?` : '';
  const stmt = sqlite.prepare(`SELECT * FROM "${source.table}" WHERE rowid BETWEEN ? AND ?${where} ORDER BY rowid`).raw(true);
  return {
    /** Reads the rows of a rowid range, one row at a time to `each`; the change check follows every range. */
    read(fromRowid: number, toRowid: number, each: (row: unknown[]) => void): void {
      const params: unknown[] = [fromRowid, toRowid];
      if (source.since !== undefined) params.push(source.since.value);
      // Checked before the rows leave: a database read without locks that changed meanwhile may have given wrong ones.
      snapshot.read(() => {
        for (const row of stmt.iterate(...params) as IterableIterator<unknown[]>) each(row);
      });
    },
  };
}

/**
 * PostgreSQL: the same rows, in primary-key order for a table (PostgreSQL has no rowid; for the tables keyed by
 * an id that is SQLite's rowid order, and `copy` inserts every table in key order). `$1` is the --since value.
 */
export async function pgTableRowsSql(snapshot: PgSnapshot, query: TableQuery): Promise<{ sql: string; params: string[] }> {
  const where = query.since !== undefined ? ` WHERE "${query.since.column}" >= $1` : '';
  const key = query.kind === 'table' ? await pgPrimaryKey(snapshot, query.table) : [];
  const order = key.length > 0 ? ` ORDER BY ${key.map((c) => `"${c}"`).join(', ')}` : '';
  return { sql: `SELECT * FROM "${query.table}"${where}${order}`, params: query.since !== undefined ? [query.since.value] : [] };
}

async function pgPrimaryKey(snapshot: PgSnapshot, table: string): Promise<string[]> {
  const found = await snapshot.client.query<{ name: string }>(
    `SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
     WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)`,
    [`"${table}"`],
  );
  return found.rows.map((r) => r.name);
}
