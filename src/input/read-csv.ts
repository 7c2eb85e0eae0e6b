import { createReadStream } from 'node:fs';
import { Readable, pipeline } from 'node:stream';
import { parse, type CsvError, type Parser } from 'csv-parse';
import { readCsvHeader, type CsvHeader } from './csv-header.ts';
import { InputFileError, describeFsError } from './input-error.ts';

/** A well-formed data row: `line` is the 1-based line where the record starts in the file. */
export interface CsvRecordItem {
  line: number;
  /** Values by column name, untrimmed; columns with an empty name are left out. */
  record: Record<string, string>;
  /** Fields past the header's columns holding a value: the row is read without them and the caller warns. */
  extraFields?: number;
  /** The row's fields, when the header names a column twice (`record` holds the last's value): enrich writes each. */
  fields?: string[];
  /** Last line of the record, when a quoted field spans several lines (a stray quote, when a URL cell holds them). */
  lastLine?: number;
}

/** A malformed row (too few fields, an unclosed quote...): not fatal, the caller records it and goes on. */
export interface CsvErrorItem {
  line: number;
  /** Last line of the record, when it spans several lines (the lines after `line` were not read as rows). */
  lastLine?: number;
  error: string;
  /** The row's own fields, when it was parsed into fields (of the wrong count), for the user to fix it from. */
  fields?: string[];
}

export type CsvItem = CsvRecordItem | CsvErrorItem;

export interface ReadCsvOptions {
  /** How the file is named in messages; default: `path` as given. */
  displayName?: string;
  /** The header, when the caller already read it with readCsvHeader. */
  header?: CsvHeader;
  /** Bytes per read from the file; default 64 KiB (small values are for tests of chunk boundaries). */
  readChunkBytes?: number;
}

/** The row's values under the header's named columns as written (a malformed row's own fields, null where none), to fix it from. */
export function inputValues(item: CsvItem, columns: readonly string[]): (string | null)[] {
  return columns.flatMap((name, i) => {
    if (name === '') return [];
    return [item.fields?.[i] ?? ('error' in item ? null : (item.record[name] ?? ''))];
  });
}

/**
 * Streams the data rows of a UTF-8 CSV file with a header row, in flat memory. Malformed rows are yielded as error
 * items in file order; blank rows are skipped. An unusable file throws InputFileError first.
 */
export async function* readCsv(path: string, options: ReadCsvOptions = {}): AsyncGenerator<CsvItem, void, undefined> {
  const file = options.displayName ?? path;
  const header = options.header ?? (await readCsvHeader(path, { displayName: file }));
  const named = header.columns.filter((c) => c !== '');
  const keepFields = new Set(named).size < named.length;

  let segment: Segment | undefined = {
    source: createReadStream(path, { highWaterMark: options.readChunkBytes ?? 64 * 1024 }),
    firstLine: 1,
    hasHeader: true,
  };
  while (segment) {
    const { rows, skips } = openSegment(segment, header);
    const cursor = new LineCursor(segment.firstLine);
    let records = 0; // records taken from the parser, header included
    let nextSkip = 0;
    let skipHeader = segment.hasHeader;
    let unclosed: { line: number; raw: string } | undefined;
    // A skipped (malformed) record is reported where csv-parse met it, between the records around it. The hot path of
    // every plan pays one comparison a row: this generator is only made while csv-parse has dropped records.
    const skipped = function* (recordsBefore: number): Generator<CsvErrorItem> {
      while (nextSkip < skips.length && skips[nextSkip]!.recordsBefore <= recordsBefore) {
        const skip = skips[nextSkip++]!;
        const line = cursor.advance(skip.raw);
        if (skip.unclosedQuote) unclosed = { line, raw: skip.raw };
        else yield malformed(line, cursor.lastLine, skip.message);
      }
    };
    try {
      for await (const row of rows) {
        if (nextSkip < skips.length) yield* skipped(records);
        records += 1;
        const line = cursor.advance(row.raw);
        if (skipHeader) {
          skipHeader = false;
          continue;
        }
        const item = toItem(line, cursor.lastLine, row.record, header.columns, keepFields);
        if (item) yield item;
      }
    } catch (err) {
      throw new InputFileError(file, `cannot read input file: ${describeFsError(err)}`, { cause: err });
    } finally {
      rows.destroy();
      segment.source.destroy();
    }
    yield* skipped(Infinity);
    segment = undefined;
    if (unclosed) {
      // csv-parse swallowed the rest of the file into the open field: resume on the next line.
      yield { line: unclosed.line, error: 'a quoted field starting on this line is never closed (unbalanced ")' };
      const rest = afterFirstLine(unclosed.raw);
      if (rest.trim() !== '') segment = { source: Readable.from([rest]), firstLine: unclosed.line + 1, hasHeader: false };
    }
  }
}

/** A stretch of CSV text parsed in one go: the file, or what follows a quote that was never closed. */
interface Segment {
  source: Readable;
  firstLine: number;
  hasHeader: boolean;
}

/** A record csv-parse dropped, and how many records it had emitted before (to keep file order). */
interface Skip {
  recordsBefore: number;
  raw: string;
  message: string;
  unclosedQuote: boolean;
}

/** Starts csv-parse on a segment; malformed records are collected in `skips` as the parser meets them. */
function openSegment(segment: Segment, header: CsvHeader): { rows: Readable & AsyncIterable<{ record: string[]; raw: string }>; skips: Skip[] } {
  const skips: Skip[] = [];
  // No on_record hook: csv-parse builds a full info object for every record when one is set.
  const parser: Parser = parse({
    delimiter: header.delimiter,
    // Explicit, so a file with mixed line endings does not leave a stray \r in fields.
    record_delimiter: ['\r\n', '\n', '\r'],
    bom: true,
    raw: true,
    relax_quotes: true,
    relax_column_count: true,
    skip_empty_lines: true,
    skip_records_with_error: true,
    on_skip: (err: CsvError | undefined, raw: string | undefined) => {
      skips.push({
        recordsBefore: parser.info.records,
        raw: raw ?? '',
        message: err?.message ?? 'malformed row',
        unclosedQuote: err?.code === 'CSV_QUOTE_NOT_CLOSED',
      });
      return undefined;
    },
  });
  const rows = pipeline(segment.source, parser, () => {
    // Errors surface through the async iterator of `rows`.
  });
  return { rows: rows as Readable & AsyncIterable<{ record: string[]; raw: string }>, skips };
}

/** Maps a parsed row onto the header; undefined for a blank row (only whitespace and delimiters). */
function toItem(line: number, lastLine: number, fields: string[], columns: string[], keepFields: boolean): CsvItem | undefined {
  if (fields.every((field) => field.trim() === '')) return undefined;
  let extraFields = 0;
  for (let i = columns.length; i < fields.length; i++) if (fields[i]!.trim() !== '') extraFields += 1;
  // Too few fields, or too many in a record over several lines: a stray quote more likely than a clear row.
  if (fields.length < columns.length || (extraFields > 0 && lastLine > line)) {
    return { ...malformed(line, lastLine, `expected ${columns.length} fields as in the header row, found ${fields.length}`), fields };
  }
  const record: Record<string, string> = Object.create(null) as Record<string, string>;
  for (let i = 0; i < columns.length; i++) {
    const name = columns[i]!;
    if (name !== '') record[name] = fields[i]!;
  }
  // Fields past the header's columns are left out; those holding a value are counted, for a warning.
  const item: CsvRecordItem = extraFields === 0 ? { line, record } : { line, record, extraFields };
  if (keepFields) item.fields = fields;
  if (lastLine > line) item.lastLine = lastLine;
  return item;
}

/** A malformed record; one over several lines (likely a stray quote) names the lines it swallowed, or they would vanish unseen. */
function malformed(line: number, lastLine: number, message: string): CsvErrorItem {
  if (lastLine <= line) return { line, error: message };
  return { line, lastLine, error: overSeveralLines(line, lastLine, message) };
}

/** What is wrong with a record read over lines `line`-`lastLine`, saying which lines it swallowed. */
export function overSeveralLines(line: number, lastLine: number, message: string): string {
  const swallowed = lastLine === line + 1 ? `line ${lastLine} was` : `lines ${line + 1}-${lastLine} were`;
  return `lines ${line}-${lastLine} were read as one record (a quoted field seems unclosed there): ${message}; ${swallowed} not read as rows of their own`;
}

/** The text after the first line of `raw` (leading blank lines skipped). */
function afterFirstLine(raw: string): string {
  const match = /^[\r\n]*[^\r\n]*(\r\n|\r|\n)/.exec(raw);
  return match ? raw.slice(match[0].length) : '';
}

/** Line numbers over records' raw text: csv-parse's `info.lines` miscounts quoted CRLFs; a CRLF split over two records counts once. */
export class LineCursor {
  /** Line on which the next unconsumed character sits. */
  private next: number;
  private afterCR = false;
  /** Line of the last character of the record consumed last (its own final line break not counted). */
  lastLine: number;

  constructor(firstLine = 1) {
    this.next = firstLine;
    this.lastLine = firstLine;
  }

  /** Consumes one record's raw text and returns the line of its first character (blank lines before it skipped). */
  advance(raw: string): number {
    const n = raw.length;
    let i = 0;
    // Blank lines csv-parse skipped come first in the raw text.
    for (; i < n; i++) {
      const c = raw.charCodeAt(i);
      if (c === 10) {
        if (!this.afterCR) this.next++;
        this.afterCR = false;
      } else if (c === 13) {
        this.next++;
        this.afterCR = true;
      } else break;
    }
    if (i === n) {
      this.lastLine = this.next;
      return this.next;
    }
    const start = this.next;
    // The rest holds the record's own line breaks (usually just the final one): counted with native scans.
    let breaks = 0;
    for (let k = raw.indexOf('\r', i); k !== -1; k = raw.indexOf('\r', k + 1)) breaks++;
    for (let k = raw.indexOf('\n', i); k !== -1; k = raw.indexOf('\n', k + 1)) {
      if (raw.charCodeAt(k - 1) !== 13) breaks++;
    }
    this.next += breaks;
    const last = raw.charCodeAt(n - 1);
    this.afterCR = last === 13;
    // The record's terminating break, when it has one, ends its last line rather than starting another.
    this.lastLine = last === 10 || last === 13 ? this.next - 1 : this.next;
    return start;
  }
}
