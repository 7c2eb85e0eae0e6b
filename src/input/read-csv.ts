import { createReadStream } from 'node:fs';
import { Readable, pipeline } from 'node:stream';
import { parse, type CsvError, type Options as CsvParseOptions } from 'csv-parse';
import { assertColumns, readCsvHeader, type CsvDelimiter, type CsvHeader } from './csv-header.ts';
import { InputFileError, describeFsError } from './input-error.ts';
import { LineCursor } from './line-cursor.ts';

/** A well-formed data row: `line` is the 1-based line where the record starts in the file. */
export interface CsvRecordItem {
  line: number;
  /** Values by column name, untrimmed; columns with an empty name are left out. */
  record: Record<string, string>;
}

/** A malformed row (wrong number of fields, unclosed quote): not fatal, the caller records it and goes on. */
export interface CsvErrorItem {
  line: number;
  error: string;
}

export type CsvItem = CsvRecordItem | CsvErrorItem;

/** Options of readCsv; every member is optional. */
export interface ReadCsvOptions {
  /** Field delimiter; default: detected from the header row among comma, semicolon and tab. */
  delimiter?: CsvDelimiter;
  /** Columns that must exist; a missing one throws InputFileError listing the available columns. */
  requireColumns?: readonly string[];
  /** How the file is named in messages; default: `path` as given. */
  displayName?: string;
  /** The header, when the caller already read it with readCsvHeader. */
  header?: CsvHeader;
  /** Bytes per read from the file; default 64 KiB (small values are for tests of chunk boundaries). */
  readChunkBytes?: number;
}

/** True when the item is a malformed row rather than a record. */
export function isCsvError(item: CsvItem): item is CsvErrorItem {
  return 'error' in item;
}

/**
 * Streams the data rows of a UTF-8 CSV file with a header row (BOM optional; delimiter `,` `;` or tab; quoted
 * fields may hold delimiters, quotes and newlines). Memory stays flat however large the file. Malformed rows are
 * yielded as `{ line, error }` items in file order; blank rows are skipped. A missing, unreadable or empty file,
 * or a missing required column, throws InputFileError before the first item.
 */
export async function* readCsv(path: string, options: ReadCsvOptions = {}): AsyncGenerator<CsvItem, void, undefined> {
  const file = options.displayName ?? path;
  const header = options.header ?? (await readCsvHeader(path, { delimiter: options.delimiter, displayName: file }));
  if (options.requireColumns) assertColumns(file, header, options.requireColumns);

  let segment: Segment | undefined = {
    source: createReadStream(path, { highWaterMark: options.readChunkBytes ?? 64 * 1024 }),
    firstLine: 1,
    hasHeader: true,
  };
  while (segment) {
    segment = yield* readSegment(segment, header, file);
  }
}

/** A stretch of CSV text parsed in one go: the file, or what follows a quote that was never closed. */
interface Segment {
  source: Readable;
  firstLine: number;
  hasHeader: boolean;
}

/** What csv-parse hands us per record, after our on_record hook. */
interface ParsedRow {
  line: number;
  fields: string[];
  /** Malformed rows reported by csv-parse before this one, kept here so that items stay in file order. */
  errorsBefore: CsvErrorItem[] | undefined;
}

/**
 * Parses one segment, yielding its items; resolves to the segment that must be parsed next when a quote was
 * left open: csv-parse then swallows the rest of the file into one field, and we resume on the next line so
 * that one stray quote does not lose every row after it.
 */
async function* readSegment(segment: Segment, header: CsvHeader, file: string): AsyncGenerator<CsvItem, Segment | undefined, undefined> {
  const cursor = new LineCursor(segment.firstLine);
  let pending: CsvErrorItem[] = [];
  let unclosed: { line: number; raw: string } | undefined;
  // csv-parse's types assume on_record keeps the record shape; ours wraps it (raw: true passes { record, raw }).
  const options: CsvParseOptions<unknown, unknown> = {
    delimiter: header.delimiter,
    // Explicit, so a file with mixed line endings does not leave a stray \r in fields.
    record_delimiter: ['\r\n', '\n', '\r'],
    bom: true,
    raw: true,
    relax_quotes: true,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    on_record: (value) => {
      const ext = value as { record: string[]; raw: string };
      const row: ParsedRow = { line: cursor.advance(ext.raw), fields: ext.record, errorsBefore: undefined };
      if (pending.length > 0) {
        row.errorsBefore = pending;
        pending = [];
      }
      return row;
    },
    on_skip: (err: CsvError | undefined, raw: string | undefined) => {
      const line = cursor.advance(raw ?? '');
      if (err?.code === 'CSV_QUOTE_NOT_CLOSED') unclosed = { line, raw: raw ?? '' };
      else pending.push({ line, error: err?.message ?? 'malformed row' });
      return undefined;
    },
  };
  const parser = parse(options as CsvParseOptions);
  const rows = pipeline(segment.source, parser, () => {
    // Errors surface through the iterator below.
  }) as AsyncIterable<ParsedRow> & Readable;

  let skipHeader = segment.hasHeader;
  try {
    for await (const row of rows) {
      if (row.errorsBefore) yield* row.errorsBefore;
      if (skipHeader) {
        skipHeader = false;
        continue;
      }
      const item = toItem(row, header.columns);
      if (item) yield item;
    }
  } catch (err) {
    throw new InputFileError(file, `cannot read input file: ${describeFsError(err)}`, { cause: err });
  } finally {
    rows.destroy();
    segment.source.destroy();
  }
  yield* pending;
  if (!unclosed) return undefined;
  yield { line: unclosed.line, error: 'a quoted field starting on this line is never closed (unbalanced ")' };
  const rest = afterFirstLine(unclosed.raw);
  if (rest.trim() === '') return undefined;
  return { source: Readable.from([rest]), firstLine: unclosed.line + 1, hasHeader: false };
}

/** Maps a parsed row onto the header; undefined for a blank row (only whitespace and delimiters). */
function toItem(row: ParsedRow, columns: string[]): CsvItem | undefined {
  const { fields, line } = row;
  if (fields.every((f) => f.trim() === '')) return undefined;
  if (fields.length < columns.length) {
    return { line, error: `expected ${columns.length} fields as in the header row, found ${fields.length}` };
  }
  // Trailing empty fields (a delimiter at the end of the row) are harmless; anything else is a shifted row.
  for (let i = columns.length; i < fields.length; i++) {
    if (fields[i]!.trim() !== '') {
      return { line, error: `expected ${columns.length} fields as in the header row, found ${fields.length}` };
    }
  }
  const record: Record<string, string> = Object.create(null) as Record<string, string>;
  for (let i = 0; i < columns.length; i++) {
    const name = columns[i]!;
    if (name !== '') record[name] = fields[i]!;
  }
  return { line, record };
}

/** The text after the first line of `raw` (leading blank lines skipped). */
function afterFirstLine(raw: string): string {
  const match = /^[\r\n]*[^\r\n]*(\r\n|\r|\n)/.exec(raw);
  return match ? raw.slice(match[0].length) : '';
}
