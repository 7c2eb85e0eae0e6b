import { open, type FileHandle } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
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

/** Limits of the header peek. */
export const CSV_HEADER_LIMITS = {
  /** Bytes read per step while looking for the end of the header row. */
  chunkBytes: 64 * 1024,
  /** A header row longer than this is rejected: it is almost surely not a CSV file. */
  maxHeaderBytes: 1024 * 1024,
} as const;

const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

/**
 * Reads only the header row of `path` (never the whole file): skips a UTF-8 BOM and leading blank lines,
 * detects the delimiter unless given, and returns the trimmed column names.
 */
export async function readCsvHeader(
  path: string,
  options: { delimiter?: CsvDelimiter; displayName?: string } = {},
): Promise<CsvHeader> {
  const file = options.displayName ?? path;
  const { text, line, bom } = await peekHeaderLine(path, file);
  const delimiter = options.delimiter ?? detectDelimiter(text);
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
  const seen = new Set<string>();
  for (const name of columns) {
    if (name !== '' && seen.has(name)) {
      throw new InputFileError(file, `line ${line}: column "${name}" appears twice in the header row`);
    }
    seen.add(name);
  }
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

/** Throws a clear error when a required column is missing, listing the columns the file has. */
export function assertColumns(file: string, header: CsvHeader, required: readonly string[]): void {
  for (const name of required) {
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

/** Reads just enough bytes to hold the first non-blank line, honouring quotes (a header may hold a quoted newline). */
async function peekHeaderLine(path: string, file: string): Promise<{ text: string; line: number; bom: boolean }> {
  const handle = await openInput(path, file);
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    let scanFrom = 0;
    const scan: HeaderScan = { line: 1, start: -1, quoted: false };
    for (;;) {
      const chunk = await readChunk(handle, total, file);
      const eof = chunk.length === 0;
      if (!eof) {
        chunks.push(chunk);
        total += chunk.length;
      }
      const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      if (scanFrom === 0) scanFrom = firstByteToScan(all, file);
      const end = scanHeader(all, scanFrom, scan);
      if (end >= 0) return { text: headerText(all.subarray(scan.start, end), file), line: scan.line, bom: hasBom(all) };
      scanFrom = all.length;
      if (eof) return headerAtEnd(all, scan, file);
      if (total > CSV_HEADER_LIMITS.maxHeaderBytes) {
        throw new InputFileError(
          file,
          `line ${scan.line}: no end of the header row within ${CSV_HEADER_LIMITS.maxHeaderBytes} bytes; is this a CSV file?`,
        );
      }
    }
  } finally {
    await handle.close();
  }
}

async function openInput(path: string, file: string): Promise<FileHandle> {
  try {
    return await open(path, 'r');
  } catch (err) {
    // A relative input.csv is read from the current directory, not the job file's: say where it was looked for,
    // since a command started elsewhere (cron, another shell) misses a file that is there.
    const where = (err as NodeJS.ErrnoException).code === 'ENOENT' && !isAbsolute(file) ? ` (looked for ${resolve(path)}: a relative input.csv is read from the current directory)` : '';
    throw new InputFileError(file, `cannot read input file: ${describeFsError(err)}${where}`, { cause: err });
  }
}

/** The next bytes from `position` (none at the end of the file). */
async function readChunk(handle: FileHandle, position: number, file: string): Promise<Buffer> {
  const buf = Buffer.alloc(CSV_HEADER_LIMITS.chunkBytes);
  try {
    const { bytesRead } = await handle.read(buf, 0, buf.length, position);
    return buf.subarray(0, bytesRead);
  } catch (err) {
    throw new InputFileError(file, `cannot read input file: ${describeFsError(err)}`, { cause: err });
  }
}

/** Where the text starts: after a UTF-8 byte order mark; a UTF-16 one is refused. */
function firstByteToScan(all: Buffer, file: string): number {
  if (hasBom(all)) return 3;
  if (isUtf16(all)) throw new InputFileError(file, UTF16_MESSAGE);
  return 0;
}

/** How far the scan for the header row got: its line, its first byte (-1 before it), inside quotes or not. */
interface HeaderScan {
  line: number;
  start: number;
  quoted: boolean;
}

/** Scans `all` from `from`, blank lines before the header skipped: the offset where the header row ends, else -1. */
function scanHeader(all: Buffer, from: number, scan: HeaderScan): number {
  for (let i = from; i < all.length; i++) {
    const b = all[i]!;
    if (scan.start < 0) {
      if (b === LF || b === CR) {
        // CRLF is one line end.
        if (b === CR || all[i - 1] !== CR) scan.line++;
        continue;
      }
      scan.start = i;
    }
    if (b === QUOTE) scan.quoted = !scan.quoted;
    else if (!scan.quoted && (b === LF || b === CR)) return i;
  }
  return -1;
}

/** The header row of a file that ends without a line break after it. */
function headerAtEnd(all: Buffer, scan: HeaderScan, file: string): { text: string; line: number; bom: boolean } {
  if (scan.start < 0) throw new InputFileError(file, 'input file is empty (expected a header row)');
  if (scan.quoted) throw new InputFileError(file, `line ${scan.line}: the header row has a quote that is never closed`);
  return { text: headerText(all.subarray(scan.start), file), line: scan.line, bom: hasBom(all) };
}

// Excel's "Unicode Text" and Windows PowerShell's `>` write UTF-16: read as UTF-8, its header would be NUL bytes
// between letters, and the message quoting it unreadable.
const UTF16_MESSAGE = 'the file is UTF-16, not UTF-8: save it as UTF-8 (in Excel: "CSV UTF-8")';

/** True when the buffer starts with a UTF-16 byte order mark (either byte order). */
function isUtf16(buf: Buffer): boolean {
  return buf.length >= 2 && ((buf[0] === 0xff && buf[1] === 0xfe) || (buf[0] === 0xfe && buf[1] === 0xff));
}

/** The header row's text; NUL bytes in it mean UTF-16 without a byte order mark. */
function headerText(bytes: Buffer, file: string): string {
  if (bytes.includes(0)) throw new InputFileError(file, UTF16_MESSAGE);
  return bytes.toString('utf8');
}

/** True when the buffer starts with a UTF-8 byte order mark. */
function hasBom(buf: Buffer): boolean {
  return buf.length >= 3 && buf[0] === 0xef && buf[1] === 0xbb && buf[2] === 0xbf;
}
