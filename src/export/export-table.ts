/**
 * `netingest export`: a table, view or read-only SELECT streamed to CSV or JSON Lines, into a file that appears whole
 * or not at all, or to stdout. A large SQLite table is read on worker threads instead, with the same bytes.
 */
import { UsageError } from '../errors.ts';
import { assertOutputIsNotInput } from './output-is-not-input.ts';
import type { TableQuery } from '../store/readers/table-rows.ts';
import { assertEncoderOptions, encoderFor, type ExportFormat } from './row-encoders.ts';
import { exportSources, findSource, parseSince } from './sources.ts';
import { verifiedBy, writeOutput, writeRows, type OutputTarget, type Rows, type WriteResult } from './write-output.ts';
import { assertOutputIsAFile } from './output-sink.ts';
import { encodedChunks, parallelRowidRange } from './parallel-table-export.ts';
// The options' types from their own module: the package's public types must not reach the drivers' (src/index.ts).
import { PARALLEL_EXPORT_DEFAULTS, type ParallelExportOptions, type PumpOptions } from './export-options.ts';
import type { ReadSnapshot } from '../store/read-snapshot.ts';
import type { DatasetStore, TableStatement } from '../store/dataset-store.ts';
import { openStore } from '../store/open-store.ts';

export interface ExportCommonOptions extends OutputTarget, PumpOptions {
  /** The dataset, opened read-only: a SQLite file, or a postgres:// URL (streamed, never in parallel). */
  db: string;
  /** Output format. Default 'csv' (header row, RFC 4180 quoting, UTF-8). */
  format?: ExportFormat;
  /** CSV only: start with a UTF-8 byte-order mark, for Excel. Default false. */
  bom?: boolean;
  /** CSV only: a `'` before text a spreadsheet would run as a formula (see EncoderOptions). Default false. */
  escapeFormulas?: boolean;
}

export interface ExportTableOptions extends ExportCommonOptions {
  /** A public table or view (see exportSources()). */
  table: string;
  /** Only rows whose updated_at (or last_seen_at) is at or after this date or ISO date-time. */
  since?: string | undefined;
  /** When and how a large table is exported on worker threads (see parallel-table-export.ts). */
  parallel?: ParallelExportOptions;
}

export interface ExportSqlOptions extends ExportCommonOptions {
  /** One read-only statement returning rows. */
  sql: string;
  /** Longest the statement may run before it stops with QueryTimeoutError, in ms; 0 or undefined: no limit. */
  timeoutMs?: number | undefined;
}

export interface ExportResult extends WriteResult {
  columns: string[];
  /** Worker threads that read and encoded the rows; 0 when the main thread did. */
  workers: number;
}

export const EXPORT_DEFAULTS = { format: 'csv', bom: false, escapeFormulas: false } as const satisfies Partial<ExportCommonOptions>;

/** Exports every row of a table or view, in insertion (rowid) order for tables. */
export async function exportTable(options: ExportTableOptions): Promise<ExportResult> {
  const source = findSource(options.table);
  if (options.since !== undefined && source.seenAtColumn === null) {
    const able = exportSources().filter((s) => s.seenAtColumn !== null).map((s) => s.name);
    throw new UsageError(
      `--since: ${source.name} has no updated_at or last_seen_at column to filter on; --since works on ${able.join(', ')}`,
      'SINCE_UNSUPPORTED',
    );
  }
  const query: TableQuery = {
    table: source.name,
    kind: source.kind,
    since: options.since !== undefined ? { column: source.seenAtColumn!, value: parseSince(options.since) } : undefined,
  };
  const store = await checkOutputPath(options);
  return store.tableRows(query, options, (table, snapshot) => writeTable(table, snapshot, options));
}

/** The table's rows, on worker threads when it is large and can be read by rowid range, else as they stream. */
async function writeTable(table: TableStatement, snapshot: ReadSnapshot, options: ExportTableOptions): Promise<ExportResult> {
  const parallel = { ...PARALLEL_EXPORT_DEFAULTS, ...options.parallel };
  const range = table.chunks ? parallelRowidRange(table.chunks, parallel) : null;
  if (table.chunks === undefined || range === null) return writeStatement(table, snapshot, options);
  const { columns } = table;
  const format = options.format ?? EXPORT_DEFAULTS.format;
  const read = { source: table.chunks.source, columns, format, escapeFormulas: options.escapeFormulas ?? EXPORT_DEFAULTS.escapeFormulas };
  const chunks = encodedChunks(read, range, parallel, options.signal);
  // The header, with the BOM, is encoded on this thread; the workers encode the rows alike.
  const result = await writeOutput(verifiedBy(snapshot, options), chunks, encoderFor(format, columns, options));
  return { ...result, columns, workers: parallel.workers };
}

/** Exports the rows of one read-only SELECT; statements that write are refused (WriteRefusedError). */
export async function exportSql(options: ExportSqlOptions): Promise<ExportResult> {
  const store = await checkOutputPath(options);
  return store.userStatement(options, (statement, snapshot) => writeStatement(statement, snapshot, options));
}

/** Refuses, before any row is read, an --out that cannot be written or would replace the database. */
async function checkOutputPath(options: ExportCommonOptions): Promise<DatasetStore> {
  assertEncoderOptions(options.format ?? EXPORT_DEFAULTS.format, options);
  const store = await openStore(options.db);
  if (options.out === undefined) return store;
  assertOutputIsAFile(options.out);
  assertOutputIsNotInput(options.out, store.files.map((path) => ({ path, what: 'database' })));
  return store;
}

/** A statement's rows encoded to the output, checked against the snapshot as they go. */
async function writeStatement({ columns, rows }: { columns: string[]; rows: Rows }, snapshot: ReadSnapshot, options: ExportCommonOptions): Promise<ExportResult> {
  const encoder = encoderFor(options.format ?? EXPORT_DEFAULTS.format, columns, options);
  const result = await writeRows(rows, encoder, verifiedBy(snapshot, options));
  return { ...result, columns, workers: 0 };
}
