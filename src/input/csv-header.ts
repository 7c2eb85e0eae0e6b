import { open } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { pipeline, type Readable } from 'node:stream';
import { parse, type CsvError, type Info } from 'csv-parse';
import { parse as parseSync } from 'csv-parse/sync';
import { InputFileError, describeFsError } from './input-error.ts';

/** Field delimiters recognized in input files. */
export const CSV_DELIMITERS = [',', ';', '\t'] as const;
export type CsvDelimiter = (typeof CSV_DELIMITERS)[number];

/** The header row of a CSV file. */
export interface CsvHeader {
  /** Column names, trimmed, in file order; a column with an empty name cannot be referenced. */
  columns: string[];
  delimiter: CsvDelimiter;
  /** 1-based line of the header row (blank lines before it are skipped). */
  line: number;
  /** True when the file starts with a UTF-8 byte-order mark (a writer of a file for the same people keeps it). */
  bom: boolean;
}

/** A header row longer than this (in characters) is rejected: it is almost surely not a CSV file. */
const MAX_HEADER_BYTES = 1024 * 1024;

/** Reads only the header row of `path`: skips a BOM and blank lines, detects the delimiter, trims the names. */
export async function readCsvHeader(path: string, options: { displayName?: string } = {}): Promise<CsvHeader> {
  const file = options.displayName ?? path;
  const { text, line, bom } = await peekHeaderLine(path, file);
  const delimiter = detectDelimiter(text);
  let rows: string[][];
  try {
    rows = parseSync(text, { delimiter, relax_quotes: true, relax_column_count: true }) as string[][];
  } catch (err) {
    throw new InputFileError(file, `line ${line}: cannot read the header row: ${(err as Error).message}`, { cause: err });
  }
  const columns = (rows[0] ?? []).map((name) => name.trim());
  if (columns.every((name) => name === '')) {
    throw new InputFileError(file, `line ${line}: the header row has no column names`);
  }
  // A name given twice is refused only where a job reads it (assertColumns): the others are just carried along.
  return { columns, delimiter, line, bom };
}

/** Picks the candidate delimiter seen most often outside quotes in the header line; comma on a tie or none. */
export function detectDelimiter(headerLine: string): CsvDelimiter {
  const counts = new Map<string, number>(CSV_DELIMITERS.map((d) => [d, 0]));
  let quoted = false;
  for (const ch of headerLine) {
    if (ch === '"') quoted = !quoted;
    else if (!quoted && counts.has(ch)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  }
  let best: CsvDelimiter = ',';
  for (const d of CSV_DELIMITERS) if ((counts.get(d) ?? 0) > (counts.get(best) ?? 0)) best = d;
  return best;
}

/** Throws a clear error when a required column is missing or named twice (which one to read?), listing the columns the file has. */
export function assertColumns(file: string, header: CsvHeader, required: readonly string[]): void {
  for (const name of required) {
    if (header.columns.indexOf(name) !== header.columns.lastIndexOf(name)) {
      throw new InputFileError(file, `line ${header.line}: column "${name}" appears twice in the header row`);
    }
    if (header.columns.includes(name)) continue;
    const available = header.columns.filter((c) => c !== '');
    const near = available.find((c) => c.toLowerCase() === name.toLowerCase());
    const hint = near === undefined ? '' : ` (did you mean "${near}"? names are case-sensitive)`;
    throw new InputFileError(
      file,
      `no column "${name}"${hint}; the header row (line ${header.line}) has: ${available.map((c) => `"${c}"`).join(', ')}`,
    );
  }
}

/** Reads the header record and no more: its text (a quoted newline kept), its line, and whether a BOM came first. */
async function peekHeaderLine(path: string, file: string): Promise<{ text: string; line: number; bom: boolean }> {
  const handle = await open(path, 'r').catch((err: NodeJS.ErrnoException) => {
    // A relative input.csv is read from the current directory, not the job file's: say where, for cron's sake.
    const where = err.code === 'ENOENT' && !isAbsolute(file) ? ` (looked for ${resolve(path)}: a relative input.csv is read from the current directory)` : '';
    throw new InputFileError(file, `cannot read input file: ${describeFsError(err)}${where}`, { cause: err });
  });
  try {
    // The byte order mark by hand: csv-parse's `bom` would decode a UTF-16 file that the rows' reader then refuses.
    const head = Buffer.alloc(3);
    await handle.read(head, 0, 3, 0).catch((err: unknown) => {
      throw new InputFileError(file, `cannot read input file: ${describeFsError(err)}`, { cause: err });
    });
    if (isUtf16(head)) throw new InputFileError(file, UTF16_MESSAGE);
    const bom = head.equals(UTF8_BOM);
    const { raw, line } = await firstRecord(handle.createReadStream({ start: bom ? 3 : 0, autoClose: false }), file);
    const text = raw.replace(/^[\r\n]+|[\r\n]+$/g, '');
    if (text.includes('\0')) throw new InputFileError(file, UTF16_MESSAGE);
    return { text, line, bom };
  } finally {
    await handle.close();
  }
}

/** The raw first record and its line; every delimiter splits fields here, so a quoted field after any is read as quoted. */
async function firstRecord(source: Readable, file: string): Promise<{ raw: string; line: number }> {
  const parser = pipeline(source, parse({
    delimiter: [...CSV_DELIMITERS],
    record_delimiter: ['\r\n', '\n', '\r'],
    raw: true,
    info: true,
    relax_quotes: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: MAX_HEADER_BYTES,
  }), () => {
    // Errors surface through the iterator below.
  });
  try {
    for await (const record of parser as AsyncIterable<{ raw: string; info: Info }>) {
      return { raw: record.raw, line: record.info.empty_lines + 1 };
    }
  } catch (err) {
    throw headerError(err, file);
  } finally {
    parser.destroy();
  }
  throw new InputFileError(file, 'input file is empty (expected a header row)');
}

/** csv-parse's error while reading the header, in the user's words. */
function headerError(err: unknown, file: string): InputFileError {
  const { code, empty_lines: blank = 0 } = err as CsvError & Partial<Info>;
  if (code === 'CSV_QUOTE_NOT_CLOSED') return new InputFileError(file, `line ${blank + 1}: the header row has a quote that is never closed`);
  if (code === 'CSV_MAX_RECORD_SIZE') {
    return new InputFileError(file, `line ${blank + 1}: no end of the header row within ${MAX_HEADER_BYTES} bytes; is this a CSV file?`);
  }
  return new InputFileError(file, `cannot read input file: ${describeFsError(err)}`, { cause: err });
}

// Excel's "Unicode Text" and PowerShell's `>` write UTF-16, whose header read as UTF-8 would be unreadable.
const UTF16_MESSAGE = 'the file is UTF-16, not UTF-8: save it as UTF-8 (in Excel: "CSV UTF-8")';
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** True when the buffer starts with a UTF-16 byte order mark (either byte order). */
function isUtf16(buf: Buffer): boolean {
  return (buf[0] === 0xff && buf[1] === 0xfe) || (buf[0] === 0xfe && buf[1] === 0xff);
}
