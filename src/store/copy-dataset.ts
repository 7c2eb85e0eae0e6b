/**
 * `netingest copy`: a SQLite dataset into an empty PostgreSQL one, each table streamed in key order (none held in
 * memory), in one transaction on the target. It holds the source's run lock, as prune and reprocess do: a run meanwhile
 * would pay for answers the copy leaves behind.
 */
import { existsSync } from 'node:fs';
import type BetterSqlite3 from 'better-sqlite3';
import type pg from 'pg';
import { UsageError } from '../errors.ts';
import { DatabaseError, DatabaseReadonlyError } from './errors.ts';
import { openDatabase, type Database } from './open.ts';
import { acquireRunLock, lockedError, runLockReads, type RunLock } from './run-lock.ts';
import { readSync } from './read-steps.ts';
import { decodeRawBody, pgBodyText } from './raw-body.ts';
import { storableJsonText, storableString } from '../operations/storable-text.ts';
import { isInt32 } from '../operations/answer-contract.ts';
import { connectionLostError, openPgStore, pgReadOnlyError, usingPgStore } from './pg/open.ts';
import { inPgTransaction } from './pg/transaction.ts';
import { holdExclusive } from './pg/dataset-lock.ts';
import { MAX_PARAMS } from './pg/pg-pipeline.ts';
import { primaryKeyOf, type ColumnKind, type TableDef } from './table-kit.ts';
import { DATASET_TABLES, type NormalizedTable } from './tables.ts';
import { fitsIndex, TABLE_WRITES } from './ingest/tables.ts';

/** Not copied: the source's run lock is the SQLite file's, and the new dataset has no run going on. */
export const NOT_COPIED: ReadonlySet<string> = new Set(['run_lock']);

/** The order tables are copied in: every table but NOT_COPIED, parents first (the definition's order). */
export const COPY_ORDER: readonly TableDef[] = DATASET_TABLES.filter((t) => !NOT_COPIED.has(t.name));

export const COPY_DEFAULTS = {
  /** Rows per INSERT at most (fewer for wide tables: PostgreSQL takes 65,535 parameters a statement). */
  batchRows: 500,
  /** An INSERT is sent once its values reach this many bytes, whatever its row count (raw bodies are large). */
  batchBytes: 4 * 1024 * 1024,
};
type CopyOptions = typeof COPY_DEFAULTS;

export interface CopyReport {
  /** Rows copied per table, in copy order. */
  tables: Array<{ table: string; rows: number }>;
  rows: number;
}

/** Serializes copies into one target: the second finds the first's rows and is refused. */
const COPY_LOCK_KEY = '7236281237890561';

interface ColumnPlan {
  name: string;
  convert: (value: unknown, row: Record<string, unknown>) => unknown;
}

/** Copies the SQLite dataset at `fromFile` into the empty PostgreSQL database at `toUrl`. */
export async function copyDataset(fromFile: string, toUrl: string, options: Partial<CopyOptions> = {}): Promise<CopyReport> {
  const opts = { ...COPY_DEFAULTS, ...options };
  if (!existsSync(fromFile)) throw new UsageError(`no database at ${fromFile}: nothing to copy (see --from)`);
  const { source, lock } = openSource(fromFile);
  try {
    return await usingPgStore(await openPgStore(toUrl), async (target) => {
      // Held exclusive, as reprocess holds it: a worker started on the target meanwhile would pay again for what the
      // copy brings, and its rows would make the copy fail.
      const hold = await holdExclusive(target.pool, target.shownUrl, 'netingest copy');
      // One snapshot of the source: a run writing meanwhile cannot tear the copy between tables.
      source.sqlite.exec('BEGIN');
      try {
        return await inPgTransaction(target.pool, (client) => copyTables(source.sqlite, client, target.shownUrl, opts));
      } finally {
        source.sqlite.exec('COMMIT');
        await hold.release();
      }
    });
  } finally {
    lock?.release();
    source.close();
  }
}

/** The source under its run lock (none on a read-only mount if no live run holds it), at this build's schema. */
function openSource(file: string): { source: Database; lock: RunLock | null } {
  let source: Database;
  try {
    source = openDatabase(file);
  } catch (err) {
    if (!(err instanceof DatabaseReadonlyError)) throw err;
    source = openDatabase(file, { readonly: true, upgradeOlderSchema: true });
    const held = readSync(source.sqlite, runLockReads());
    if (held?.alive) {
      source.close();
      throw lockedError(source.file, held);
    }
    return { source, lock: null };
  }
  try {
    return { source, lock: acquireRunLock(source) };
  } catch (err) {
    source.close();
    throw err;
  }
}

async function copyTables(sqlite: BetterSqlite3.Database, client: pg.PoolClient, shownUrl: string, opts: CopyOptions): Promise<CopyReport> {
  await client.query('SELECT pg_advisory_xact_lock($1)', [COPY_LOCK_KEY]);
  const holding: string[] = [];
  for (const { name } of COPY_ORDER) {
    // netingest_meta is filled by the migrations themselves.
    const filter = name === 'netingest_meta' ? ` WHERE key NOT IN ('schema_version', 'canonical_urls')` : '';
    const found = await client.query(`SELECT 1 FROM "${name}"${filter} LIMIT 1`);
    if (found.rowCount) holding.push(name);
  }
  // Copying into a dataset would mix two.
  if (holding.length > 0) {
    throw new UsageError(
      `${shownUrl} already holds data (in ${holding.join(', ')}): netingest copy only fills an empty database, ` +
        'so that nothing is mixed or paid twice; copy into a new database, or drop and recreate this one',
      'COPY_TARGET_NOT_EMPTY',
    );
  }
  const report: CopyReport = { tables: [], rows: 0 };
  for (const table of COPY_ORDER) {
    const rows = await copyTable(sqlite, client, shownUrl, table, opts);
    report.tables.push({ table: table.name, rows });
    report.rows += rows;
  }
  await setIdentitiesPastCopiedIds(client);
  return report;
}

async function copyTable(sqlite: BetterSqlite3.Database, client: pg.PoolClient, shownUrl: string, table: TableDef, opts: CopyOptions): Promise<number> {
  const columns = planColumns(table);
  const names = columns.map((c) => `"${c.name}"`).join(', ');
  const keyColumns = primaryKeyOf(table).map((c) => `"${c}"`);
  const isMeta = table.name === 'netingest_meta';
  const conflict = isMeta ? ' ON CONFLICT (key) DO UPDATE SET value = excluded.value' : '';
  const maxRows = Math.max(1, Math.min(opts.batchRows, Math.floor(MAX_PARAMS / columns.length)));
  const select = sqlite.prepare(`SELECT ${names} FROM "${table.name}" ORDER BY ${keyColumns.join(', ')}`);

  let batch: unknown[][] = [];
  let bytes = 0;
  let copied = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    const params: unknown[] = [];
    const tuples = batch.map((values) => `(${values.map((v) => `$${params.push(v)}`).join(', ')})`);
    try {
      await client.query(`INSERT INTO "${table.name}" (${names}) VALUES ${tuples.join(', ')}${conflict}`, params);
    } catch (err) {
      // A server gone is no row's fault; rows the server refused are named by table and place.
      const rows = `copying ${table.name} (rows ${copied + 1}-${copied + batch.length} in key order)`;
      throw connectionLostError(err, shownUrl) ?? pgReadOnlyError(err, shownUrl) ?? new DatabaseError('DB_WRITE_FAILED', shownUrl, `${rows}: ${(err as Error).message}`, { cause: err });
    }
    copied += batch.length;
    batch = [];
    bytes = 0;
  };
  for (const row of select.iterate() as IterableIterator<Record<string, unknown>>) {
    // Kept in the target as its own migrations set it.
    if (isMeta && row.key === 'schema_version') continue;
    const values = columns.map((c) => {
      try {
        return c.convert(row[c.name], row);
      } catch (err) {
        const key = keyColumns.map((k) => `${k}=${String(row[k.slice(1, -1)])}`).join(', ');
        throw new Error(`copying ${table.name} (${key}): ${c.name}: ${(err as Error).message}`, { cause: err });
      }
    });
    batch.push(values);
    bytes += values.reduce<number>((sum, v) => sum + (typeof v === 'string' || Buffer.isBuffer(v) ? v.length : 8), 0);
    if (batch.length >= maxRows || bytes >= opts.batchBytes) await flush();
  }
  await flush();
  return copied;
}

const textOf = (value: unknown) => (Buffer.isBuffer(value) ? value.toString('utf8') : value);

/** How a SQLite value of a column's kind becomes its PostgreSQL one; any other kind goes as it is. */
// A dataset written before the text rule (operations/storable-text.ts) may hold text PostgreSQL refuses: the
// rule applies to it on the way, as it would have to the answer.
const storableText = (value: unknown) => (typeof value === 'string' ? storableString(value).text : value);

const CONVERT: Partial<Record<ColumnKind, (value: unknown) => unknown>> = {
  text: (value) => storableText(textOf(value)),
  // JSON text: the text is the JSON value.
  json: (value) => (value === null || value === undefined ? null : storableJsonText(String(textOf(value)))),
  // As given: a number stays a number, a string a string (JSON-encoded so the server reads it as a JSON string).
  given: (value) => (value === null || value === undefined ? null : storableJsonText(JSON.stringify(textOf(value)))),
};

function planColumns({ name: tableName, columns }: TableDef): ColumnPlan[] {
  return Object.entries(columns).map(([name, column]) => {
    if (tableName === 'raw_responses' && name === 'body') {
      // gzip bodies become their text: PostgreSQL compresses large values itself, and raw_body() stays SQL.
      return { name, convert: (value, row) => pgBodyText(decodeRawBody(value, row.body_encoding)) };
    }
    if (tableName === 'raw_responses' && name === 'body_encoding') return { name, convert: () => null };
    const convert = CONVERT[column.spec.kind] ?? ((value: unknown) => value);
    const written = Object.hasOwn(TABLE_WRITES, tableName) ? TABLE_WRITES[tableName as NormalizedTable] : null;
    // An answer's values written before the contract's rules (NULL past 32 bits, or past what an index holds): the
    // rule applies on the way, or PostgreSQL would refuse the copy at that row.
    if (written && column.spec.kind === 'int') return { name, convert: (value) => (typeof value === 'number' && !isInt32(value) ? null : value) };
    if (written?.indexed.includes(name)) return { name, convert: (value) => fitsIndex(convert(value)) };
    return { name, convert };
  });
}

/** Sets each identity sequence past the largest copied id, so the next row the engine numbers is new. */
async function setIdentitiesPastCopiedIds(client: pg.PoolClient): Promise<void> {
  const identities = await client.query<{ table_name: string; column_name: string }>(
    "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' AND is_identity = 'YES'",
  );
  for (const { table_name: table, column_name: column } of identities.rows) {
    await client.query(
      `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE((SELECT max("${column}") FROM "${table}"), 1), (SELECT max("${column}") FROM "${table}") IS NOT NULL)`,
      [`"${table}"`, column],
    );
  }
}

/** Per column of `table`, how a value the SQLite store would write goes into PostgreSQL (the PostgreSQL row writer). */
export function pgValueConverters(table: string): Map<string, (value: unknown) => unknown> {
  const found = COPY_ORDER.find((t) => t.name === table);
  if (!found) throw new Error(`internal: no PostgreSQL table ${table}`);
  return new Map(planColumns(found).map((c) => [c.name, (value: unknown) => c.convert(value, {})]));
}
