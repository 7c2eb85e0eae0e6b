/**
 * `netingest query "SELECT ..."`: one read-only statement, printed as an aligned table on a terminal and as
 * CSV otherwise (or as asked), streamed row by row.
 */
import { UsageError } from '../errors.ts';
import { assertEncoderOptions, encoderFor, type EncoderOptions, type RowEncoder } from './row-encoders.ts';
import { tableEncoder, type TableLayoutOptions } from './table-format.ts';
import { verifiedBy, writeRows } from './write-output.ts';
import type { PumpOptions } from './export-options.ts';
import type { ExportSqlOptions } from './export-table.ts';
import type { ReadSnapshot } from '../store/read-snapshot.ts';
import type { StartedStatement } from '../store/dataset-store.ts';
import { openStore } from '../store/open-store.ts';

export const QUERY_FORMATS = ['table', 'csv', 'jsonl'] as const;
export type QueryFormat = (typeof QUERY_FORMATS)[number];

/** A terminal or pipe the result is printed to. */
export type QueryStream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

/**
 * Options of runQuery(): the dataset, statement, time limit and CSV options of `export --sql`'s, and how it is
 * printed. The CSV options are refused with an explicit 'table' or 'jsonl'; the table a terminal gets by default
 * takes them silently, showing values as stored (nothing on a screen runs them) and written without a BOM.
 */
export interface RunQueryOptions
  extends PumpOptions, Omit<TableLayoutOptions, 'maxTableWidth'>, Pick<ExportSqlOptions, 'db' | 'sql' | 'timeoutMs' | 'bom' | 'escapeFormulas'> {
  /** Default: 'table' when `stream` is a terminal, else 'csv'. */
  format?: QueryFormat | undefined;
  /** Where to print. Default process.stdout. */
  stream?: QueryStream;
  /** Rows read before the table layout is fixed (they set the column widths). */
  sampleRows?: number;
}

export const QUERY_DEFAULTS = { sampleRows: 200 } as const satisfies Partial<RunQueryOptions>;

/** Runs `options.sql` read-only and prints its rows; writes are refused with a WriteRefusedError. */
export async function runQuery(options: RunQueryOptions) {
  const stream = options.stream ?? process.stdout;
  const format: QueryFormat = options.format ?? (stream.isTTY ? 'table' : 'csv');
  const csvOptions: EncoderOptions = { escapeFormulas: options.escapeFormulas, bom: options.bom };
  if (options.format === 'table') assertNoCsvOptions(csvOptions);
  if (format !== 'table') assertEncoderOptions(format, csvOptions);
  const output = { stream, format, csvOptions };
  const store = await openStore(options.db);
  return store.userStatement(options, (statement, snapshot) => printRows(statement, snapshot, options, output));
}

/** The statement's rows, encoded as `format` to `stream`. */
async function printRows(
  statement: StartedStatement,
  snapshot: ReadSnapshot,
  options: RunQueryOptions,
  { stream, format, csvOptions }: { stream: QueryStream; format: QueryFormat; csvOptions: EncoderOptions },
) {
  const { columns, rows: source } = statement;
  let rows: AsyncIterable<readonly unknown[]> = source;
  let encoder: RowEncoder;
  try {
    if (format === 'table') {
      const sample = await takeSample(source, options.sampleRows ?? QUERY_DEFAULTS.sampleRows);
      // As wide as the terminal, when it says (else TABLE_DEFAULTS.maxTableWidth).
      encoder = tableEncoder(columns, sample, { ...options, maxTableWidth: stream.isTTY && stream.columns ? stream.columns : undefined });
      rows = chain(sample, source);
    } else {
      encoder = encoderFor(format, columns, csvOptions);
    }
    const result = await writeRows(rows, encoder, { stream }, verifiedBy(snapshot, options));
    return { ...result, columns, format };
  } finally {
    // Stops the reading in case the pump never started or stopped early.
    await statement.close();
  }
}

/**
 * Refuses the CSV-only options with a table asked for by name. The table a terminal gets by default takes them
 * silently: the same command line piped writes CSV, where they apply.
 */
function assertNoCsvOptions(options: EncoderOptions): void {
  if (options.escapeFormulas) {
    throw new UsageError('--escape-formulas is for CSV only; the table format shows values as stored, for reading on screen');
  }
  if (options.bom) throw new UsageError('--bom is for CSV only; the table format is for reading on screen, written without one');
}

async function takeSample(source: AsyncIterator<unknown[]>, size: number): Promise<unknown[][]> {
  const sample: unknown[][] = [];
  while (sample.length < size) {
    const next = await source.next();
    if (next.done) break;
    sample.push(next.value);
  }
  return sample;
}

/** The sampled rows, then the rest. */
async function* chain(sample: readonly unknown[][], source: AsyncIterator<unknown[]>): AsyncGenerator<unknown[]> {
  yield* sample;
  for (let next = await source.next(); !next.done; next = await source.next()) yield next.value;
}
