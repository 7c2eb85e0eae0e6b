/** `netingest query "SELECT ..."`: one read-only statement streamed as an aligned table on a terminal, else as CSV. */
import { UsageError } from '../errors.ts';
import { tableEncoder, type TableLayoutOptions } from './table-format.ts';
import { verifiedBy, writeRows, type WriteResult } from './write-output.ts';
import { exportSql, type ExportSqlOptions } from './export-table.ts';
import { openStore } from '../store/open-store.ts';

export const QUERY_FORMATS = ['table', 'csv', 'jsonl'] as const;
export type QueryFormat = (typeof QUERY_FORMATS)[number];

/** A terminal or pipe the result is printed to. */
export type QueryStream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

/** Options of runQuery(): those of `export --sql`, and how the table is printed. */
export interface RunQueryOptions extends Omit<ExportSqlOptions, 'format' | 'stream'>, Omit<TableLayoutOptions, 'maxTableWidth'> {
  /** Default: 'table' when `stream` is a terminal (never with `out`), else 'csv'. */
  format?: QueryFormat | undefined;
  /** Where to print. Default process.stdout. */
  stream?: QueryStream;
  /** Rows read before the table layout is fixed (they set the column widths). */
  sampleRows?: number;
}

export const QUERY_DEFAULTS = { sampleRows: 200 } as const satisfies Partial<RunQueryOptions>;

/** Runs `options.sql` read-only and prints its rows; writes are refused with a WriteRefusedError. */
export async function runQuery(options: RunQueryOptions): Promise<WriteResult> {
  const stream = options.stream ?? process.stdout;
  const format: QueryFormat = options.format ?? (stream.isTTY && options.out === undefined ? 'table' : 'csv');
  // CSV and JSON Lines are written as `export --sql` writes them.
  if (format !== 'table') return exportSql({ ...options, format, stream });
  if (options.out !== undefined) throw new UsageError('--out writes csv or jsonl; the table is for a terminal');
  // CSV options with a table asked for by name are refused; the default table ignores them (piped, it is CSV).
  if (options.format === 'table' && options.escapeFormulas) {
    throw new UsageError('--escape-formulas is for CSV only; the table format shows values as stored, for reading on screen');
  }
  if (options.format === 'table' && options.bom) {
    throw new UsageError('--bom is for CSV only; the table format is for reading on screen, written without one');
  }
  const store = await openStore(options.db);
  return store.userStatement(options, async ({ columns, rows: source }, snapshot) => {
    const sample = await takeSample(source, options.sampleRows ?? QUERY_DEFAULTS.sampleRows);
    // As wide as the terminal, when it says (else TABLE_DEFAULTS.maxTableWidth).
    const encoder = tableEncoder(columns, sample, { ...options, maxTableWidth: stream.isTTY && stream.columns ? stream.columns : undefined });
    return writeRows(chain(sample, source), encoder, verifiedBy(snapshot, { ...options, stream }));
  });
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

async function* chain(sample: readonly unknown[][], source: AsyncIterator<unknown[]>): AsyncGenerator<unknown[]> {
  yield* sample;
  for (let next = await source.next(); !next.done; next = await source.next()) yield next.value;
}
