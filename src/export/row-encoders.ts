/** Rows to text. In CSV a NULL is an empty unquoted field and '' is `""`, so a reader looking at quoting tells them apart; blobs as base64. */
import { stringify, type Options as StringifyOptions } from 'csv-stringify/sync';
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

const EMPTY_QUOTED = { value: '', quoted_empty: true };
const CSV_OPTIONS: StringifyOptions = {
  // csv-stringify's quoted_empty would quote NULL too: only the empty string gets `""`.
  quoted_empty: false,
  cast: {
    string: (value: string) => (value === '' ? EMPTY_QUOTED : value),
    object: (value: object) => (Buffer.isBuffer(value) ? value.toString('base64') : JSON.stringify(value)),
  },
};

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

function csvOptions({ delimiter, escapeFormulas, keepText }: EncoderOptions): StringifyOptions {
  const out: StringifyOptions = delimiter === undefined ? { ...CSV_OPTIONS } : { ...CSV_OPTIONS, delimiter };
  if (!escapeFormulas && !keepText) return out;
  // Text only: a number (`-2`) goes through cast.number and stays a number.
  const quoted = (value: string) => (escapeFormulas && looksLikeFormula(value)) || (keepText && looksLikeLossyNumber(value));
  return { ...out, cast: { ...CSV_OPTIONS.cast, string: (value: string) => (value === '' ? EMPTY_QUOTED : quoted(value) ? `'${value}` : value) } };
}

/** CSV with a header row of `columns`. */
export function csvEncoder(columns: readonly string[], options: EncoderOptions = {}): RowEncoder {
  const rowOptions = csvOptions(options);
  const headerOptions = options.bom ? { ...rowOptions, bom: true } : rowOptions;
  return {
    header: () => stringify([columns as string[]], headerOptions),
    encode: (rows) => stringify(rows as unknown[][], rowOptions),
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
