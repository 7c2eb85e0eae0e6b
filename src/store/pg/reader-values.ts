/**
 * PostgreSQL's values as SQLite holds them, so export and query print the same on both: ISO timestamps, JSON as text,
 * int8 past 2^53 as bigint, booleans as 0/1, dates as text (node-postgres's own: Date, parsed JSON, int8 as a string).
 */
import pg from 'pg';

const OID = pg.types.builtins;

/** `types` for a node-postgres query or pg-query-stream (text format). */
export const READER_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (text: string) => unknown {
    if (format === 'binary') return pg.types.getTypeParser(oid, format);
    return PARSERS.get(oid) ?? pg.types.getTypeParser(oid, 'text');
  },
};

/** The store's own readers' `types`: READER_TYPES with counts and ids as numbers, as better-sqlite3 gives them. */
export const STORE_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary'): (text: string) => unknown {
    if (format !== 'binary' && (oid === OID.INT8 || oid === OID.NUMERIC)) return Number;
    return READER_TYPES.getTypeParser(oid, format);
  },
};

const PARSERS = new Map<number, (text: string) => unknown>([
  [OID.TIMESTAMPTZ, isoTimestamp],
  [OID.JSONB, jsonValue],
  [OID.JSON, jsonValue],
  [OID.INT8, BigInt],
  [OID.NUMERIC, numericValue],
  [OID.BOOL, (text) => (text === 't' ? 1 : 0)],
  [OID.DATE, (text) => text],
  [OID.TIMESTAMP, (text) => text],
]);

/** `2026-11-22 13:45:00.123456+00` (the pool is UTC) as SQLite's `2026-11-22T13:45:00.123Z`; other offsets via Date. */
export function isoTimestamp(text: string): string {
  const m = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d+))?\+00$/.exec(text);
  if (m) return `${m[1]}T${m[2]}.${(m[3] ?? '').padEnd(3, '0').slice(0, 3)}Z`;
  const date = new Date(text.replace(' ', 'T').replace(/([+-]\d{2})$/, '$1:00'));
  return Number.isNaN(date.getTime()) ? text : date.toISOString();
}

/** JSON object or array as compact text (in jsonb's key order), string or number as that value, null as `null`. */
function jsonValue(text: string): unknown {
  const value: unknown = JSON.parse(text);
  if (value === null) return 'null';
  if (typeof value === 'object') return JSON.stringify(value);
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) return BigInt(text.trim());
  return value;
}

/** sum() of integers is numeric on PostgreSQL: an integer stays exact (bigint), a fraction is a number. */
function numericValue(text: string): unknown {
  return /^-?\d+$/.test(text) ? BigInt(text) : Number(text);
}
