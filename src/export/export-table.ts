/**
 * `netingest export`: a table, a view or a read-only SELECT, streamed from SQLite (`iterate()` in raw mode)
 * to CSV or JSON Lines, into a file that appears whole or not at all, or to stdout. A large table is read and
 * encoded on worker threads instead (parallel-table-export.ts), producing the same bytes.
 */
import { UsageError } from '../errors.ts';
import { assertOutputIsNotInput } from './output-is-not-input.ts';
import { openForReading } from '../store/readers/open-for-reading.ts';
import { asQueryError } from '../store/readers/read-only-sql.ts';
import { userStatementColumns } from '../store/readers/user-statement.ts';
import { busyTimeoutMs, tableRows, type TableQuery, type TableRows } from '../store/readers/table-rows.ts';
import { assertEncoderOptions, encoderFor, type EncoderOptions, type ExportFormat } from './row-encoders.ts';
import { exportSources, findSource, parseSince } from './sources.ts';
import { writeRows, type OutputTarget, type WriteResult } from './write-output.ts';
import { assertOutputIsAFile } from './output-sink.ts';
import { verifiedBy, type PumpOptions } from './pump-rows.ts';
import { statementRows } from './statement-rows.ts';
import { exportTableInParallel, parallelRowidRange, type ParallelExportOptions } from './parallel-table-export.ts';
import { withReadSnapshot, type ReadSnapshot } from '../store/read-snapshot.ts';
import { locateDataset, type DatasetLocation } from '../store/locator.ts';

/** Options shared by exportTable() and exportSql(). */
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

/** Options of exportTable(). */
export interface ExportTableOptions extends ExportCommonOptions {
  /** A public table or view (see exportSources()). */
  table: string;
  /** Only rows whose updated_at (or last_seen_at) is at or after this date or ISO date-time. */
  since?: string | undefined;
  /** When and how a large table is exported on worker threads (see parallel-table-export.ts). */
  parallel?: ParallelExportOptions;
}

/** Options of exportSql(). */
export interface ExportSqlOptions extends ExportCommonOptions {
  /** One read-only statement returning rows. */
  sql: string;
  /** Longest the statement may run before it stops with QueryTimeoutError, in ms; 0 or undefined: no limit. */
  timeoutMs?: number | undefined;
}

/** What an export reports. */
export interface ExportResult extends WriteResult {
  columns: string[];
  /** Worker threads that read and encoded the rows; 0 when the main thread did. */
  workers: number;
}

export const EXPORT_DEFAULTS = { format: 'csv', bom: false, escapeFormulas: false } as const satisfies Partial<ExportCommonOptions>;

/** Exports every row of a table or view, in insertion (rowid) order for tables. */
export async function exportTable(options: ExportTableOptions): Promise<ExportResult> {
  const source = findSource(options.table);
  let since: string | undefined;
  if (options.since !== undefined) {
    if (source.seenAtColumn === null) {
      const able = exportSources().filter((s) => s.seenAtColumn !== null).map((s) => s.name);
      throw new UsageError(
        `--since: ${source.name} has no updated_at or last_seen_at column to filter on; --since works on ${able.join(', ')}`,
        'SINCE_UNSUPPORTED',
      );
    }
    since = parseSince(options.since);
  }
  const query: TableQuery = {
    table: source.name,
    kind: source.kind,
    since: since !== undefined ? { column: source.seenAtColumn!, value: since } : undefined,
  };
  const location = checkOutputPath(options);
  if (location.engine === 'postgres') {
    // Loaded here: a SQLite export loads neither pg nor its cursor. One streaming path: no worker threads.
    const { tableOnPostgres } = await import('./pg-readers.ts');
    return tableOnPostgres(location.url, query, options, (statement, snapshot) => writeStatement(statement, snapshot, options));
  }
  const database = openForReading(location.file);
  try {
    return await withReadSnapshot(database, async (snapshot) => {
      const target = verifiedBy(snapshot, options);
      const table = tableRows(snapshot, query);
      const range = source.kind === 'table' ? parallelRowidRange(snapshot, source.name, options.parallel) : null;
      if (range !== null) {
        const job = {
          source: { db: snapshot.file, table: source.name, since: query.since, busyTimeoutMs: busyTimeoutMs(snapshot) },
          columns: table.columns,
          format: options.format ?? EXPORT_DEFAULTS.format,
          bom: options.bom ?? EXPORT_DEFAULTS.bom,
          escapeFormulas: options.escapeFormulas ?? EXPORT_DEFAULTS.escapeFormulas,
          range,
        };
        const result = await exportTableInParallel(job, target, target, options.parallel);
        return { ...result, columns: table.columns };
      }
      return await exportRows(table, target);
    });
  } finally {
    database.close();
  }
}

/** Exports the rows of one read-only SELECT; statements that write are refused (WriteRefusedError). */
export async function exportSql(options: ExportSqlOptions): Promise<ExportResult> {
  const location = checkOutputPath(options);
  if (location.engine === 'postgres') {
    const { userStatementOnPostgres } = await import('./pg-readers.ts');
    return userStatementOnPostgres(location.url, options, (statement, snapshot) => writeStatement(statement, snapshot, options));
  }
  const database = openForReading(location.file);
  try {
    return await withReadSnapshot(database, async (snapshot) => {
      // Checked and described here; its rows come from a child process that can be stopped (statement-rows.ts).
      const columns = userStatementColumns(snapshot, options.sql);
      const rows = statementRows({ db: snapshot.file, sql: options.sql, signal: options.signal, timeoutMs: options.timeoutMs });
      try {
        return await writeStatement({ columns, rows }, snapshot, options);
      } finally {
        await rows.return(undefined);
      }
    });
  } catch (err) {
    throw asQueryError(err);
  } finally {
    database.close();
  }
}

/**
 * Refuses, before the database is opened, an --out that cannot be written or would replace the database; says
 * where the dataset is (`db`: a SQLite file or a postgres:// URL).
 */
function checkOutputPath(options: ExportCommonOptions): DatasetLocation {
  assertEncoderOptions(options.format ?? EXPORT_DEFAULTS.format, encoderOptions(options));
  const location = locateDataset({ db: options.db, env: {} });
  if (options.out === undefined) return location;
  assertOutputIsAFile(options.out);
  if (location.engine === 'sqlite') assertOutputIsNotInput(options.out, [{ path: location.file, what: 'database' }]);
  return location;
}

/** A statement's rows (either engine) encoded to the output, checked against the snapshot as they go. */
async function writeStatement(
  { columns, rows }: { columns: string[]; rows: AsyncIterable<unknown[]> },
  snapshot: ReadSnapshot,
  options: ExportCommonOptions,
): Promise<ExportResult> {
  const encoder = encoderFor(options.format ?? EXPORT_DEFAULTS.format, columns, encoderOptions(options));
  const target = verifiedBy(snapshot, options);
  const result = await writeRows(rows, encoder, target, target);
  return { ...result, columns, workers: 0 };
}

function encoderOptions(options: ExportCommonOptions): Required<Pick<EncoderOptions, 'bom' | 'escapeFormulas'>> {
  return {
    bom: options.bom ?? EXPORT_DEFAULTS.bom,
    escapeFormulas: options.escapeFormulas ?? EXPORT_DEFAULTS.escapeFormulas,
  };
}

async function exportRows({ columns, rows }: TableRows, options: ExportCommonOptions): Promise<ExportResult> {
  const encoder = encoderFor(options.format ?? EXPORT_DEFAULTS.format, columns, encoderOptions(options));
  const result = await writeRows(rows, encoder, options, options);
  return { ...result, columns, workers: 0 };
}
