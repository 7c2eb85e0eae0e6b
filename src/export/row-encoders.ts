/** Rows to text. In CSV a NULL is an empty unquoted field and '' is `""`, so a reader looking at quoting tells them apart; blobs as base64. */
import { UsageError } from '../errors.ts';

/** Output formats of `export` and `enrich`. */
export const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Encodes a header and batches of rows for one output format. */
export interface RowEncoder {
  /** The text written before the first row ('' when the format has no header). */
  header(): string;
  /** The text of a batch of rows, each an array of values in column order. */
  encode(rows: readonly (readonly unknown[])[]): string;
  /** The text written after the last row, given the row count (optional). */
  footer?(rows: number): string;
}

/** A string field's text before quoting; '' stays '' and is written `""` (NULL is an empty unquoted field). */
type StringCast = (value: string) => string;
const AS_STORED: StringCast = (value) => value;

/**
 * A field as csv-stringify 6 writes it (the bytes of earlier releases): quoted when it holds a quote, the delimiter
 * or a line break. Quotes are doubled with split/join: csv-stringify's replaceAll builds a string of two pieces per
 * quote, and a 13 KB raw body holds ~1,700 of them: 10x the time, and batches that exhaust a 64 MB heap.
 */
function csvField(value: unknown, delimiter: string, cast: StringCast): string {
  if (value === '') return '""';
  const text = fieldText(value, cast);
  if (text.includes('"')) return `"${text.split('"').join('""')}"`;
  return text.includes('\n') || text.includes('\r') || holdsDelimiter(text, delimiter) ? `"${text}"` : text;
}

/** As csv-stringify sees it: a delimiter of several characters may also start in the field's tail (`a:` + `::`). */
function holdsDelimiter(text: string, delimiter: string): boolean {
  return text.includes(delimiter) || (delimiter.length > 1 && (text + delimiter).indexOf(delimiter) < text.length);
}

/** csv-stringify's casts: NULL and false empty, true 1, a Date its milliseconds, a blob base64, an object JSON. */
function fieldText(value: unknown, cast: StringCast): string {
  if (value === null || value === undefined) return '';
  switch (typeof value) {
    case 'string':
      return cast(value);
    case 'boolean':
      return value ? '1' : '';
    case 'object':
      if (value instanceof Date) return String(value.getTime());
      return Buffer.isBuffer(value) ? value.toString('base64') : JSON.stringify(value);
    default:
      return String(value as number | bigint);
  }
}

/** How an encoder writes; every member is optional. */
export interface EncoderOptions {
  /** CSV only: start with a UTF-8 BOM; without one Excel reads the local code page and garbles non-ASCII text. */
  bom?: boolean;
  /**
   * CSV only: text a spreadsheet would run as a formula (see looksLikeFormula; the values come from a third-party API)
   * gets a leading `'`; numbers are left alone. Off by default: a program would read changed values.
   */
  escapeFormulas?: boolean;
  /** CSV only: the field delimiter. Default `,`. */
  delimiter?: string;
  /** CSV only: a `'` before text a spreadsheet would make a lossy number (see looksLikeLossyNumber). Default false. */
  keepText?: boolean;
}

/**
 * Text a spreadsheet reads as a number, quoted or not, losing part: a leading `+` or zero, more than 15 digits, or
 * a day or month then a number (a staff range `1-10`, `11-50`), which Excel makes a date (10 Jan, Nov 1950).
 */
export function looksLikeLossyNumber(value: string): boolean {
  return /^(\+\d+|0\d+|\d{16,}|(?:[1-9]|[12]\d|3[01])[-/]\d{1,4})$/.test(value);
}

/**
 * Text a spreadsheet would run as a formula: `=` `+` `-` `@` (or full-width forms) after blanks it skips (`\s`), or a
 * leading tab or CR (csv-stringify's escape_formulas checks the first character only).
 */
export function looksLikeFormula(value: string): boolean {
  return /^(?:[\t\r]|\s*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20])/.test(value);
}

function stringCast({ escapeFormulas, keepText }: EncoderOptions): StringCast {
  if (!escapeFormulas && !keepText) return AS_STORED;
  // Text only: a number (`-2`) is not a string and stays a number.
  const quoted = (value: string) => (escapeFormulas && looksLikeFormula(value)) || (keepText && looksLikeLossyNumber(value));
  return (value) => (quoted(value) ? `'${value}` : value);
}

/** CSV with a header row of `columns`. */
export function csvEncoder(columns: readonly string[], options: EncoderOptions = {}): RowEncoder {
  const delimiter = options.delimiter ?? ',';
  const cast = stringCast(options);
  const record = (row: readonly unknown[]) => row.map((value) => csvField(value, delimiter, cast)).join(delimiter) + '\n';
  return {
    header: () => (options.bom ? '\uFEFF' : '') + record(columns),
    encode(rows) {
      let out = '';
      for (const row of rows) out += record(row);
      return out;
    },
  };
}

/** One JSON object per line in column order; repeated names get `_2`, `_3` so no value is lost; bigints exact. */
export function jsonlEncoder(columns: readonly string[]): RowEncoder {
  const keys = uniqueKeys(columns);
  const prefixes = keys.map((key, i) => (i === 0 ? '{' : ',') + JSON.stringify(key) + ':');
  return {
    header: () => '',
    encode(rows) {
      let out = '';
      for (const row of rows) {
        let line = '';
        for (let i = 0; i < prefixes.length; i++) line += prefixes[i] + jsonValue(row[i]);
        out += (prefixes.length === 0 ? '{' : line) + '}\n';
      }
      return out;
    },
  };
}

/** The encoder of `format` for `columns`, its options checked by assertEncoderOptions before anything was read. */
export function encoderFor(format: ExportFormat, columns: readonly string[], options: EncoderOptions = {}): RowEncoder {
  return format === 'jsonl' ? jsonlEncoder(columns) : csvEncoder(columns, options);
}

/** Refuses options the format has no use for, before anything is read or written. */
export function assertEncoderOptions(format: ExportFormat, options: EncoderOptions): void {
  // A JSON Lines reader would take the mark for part of the first object.
  if (options.bom && format !== 'csv') throw new UsageError('--bom is for CSV only; JSON Lines is written without one');
  // A JSON string is never read as a formula, and a quote added to it would be a changed value.
  if (options.escapeFormulas && format !== 'csv') {
    throw new UsageError('--escape-formulas is for CSV only; JSON Lines values are written as they are stored');
  }
  if (options.delimiter !== undefined && format !== 'csv') throw new UsageError('--delimiter is for CSV only');
  if (options.keepText && format !== 'csv') throw new UsageError('--excel is for CSV only; JSON Lines values are written as they are stored');
}

function jsonValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      // SQLite stores no NaN/Infinity as numbers, but JSON.stringify would turn them into null silently.
      return Number.isFinite(value) ? String(value) : JSON.stringify(String(value));
    case 'bigint':
      return value.toString();
    case 'boolean':
      return value ? 'true' : 'false';
    default:
      return Buffer.isBuffer(value) ? JSON.stringify(value.toString('base64')) : JSON.stringify(value);
  }
}

function uniqueKeys(columns: readonly string[]): string[] {
  const seen = new Map<string, number>();
  return columns.map((name) => {
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    let key = count === 1 ? name : `${name}_${count}`;
    while (count > 1 && seen.has(key)) key = `${key}_`;
    if (count > 1) seen.set(key, 1);
    return key;
  });
}
