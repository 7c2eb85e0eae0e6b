/**
 * How raw_responses keeps a body: gzip (`body_encoding = 'gzip'`, the bytes as a BLOB) when that is smaller,
 * else the text as received (`body_encoding` NULL, as every body an earlier netingest stored). gzip, not
 * brotli: at the levels that cost the writer no more time, both shrink the service's JSON to a quarter or
 * less (measured on sandbox answers: similar-companies 0.25, search-jobs 0.14, post-details 0.6), and gzip
 * is what every tool a user might pull a body out with can read.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import type BetterSqlite3 from 'better-sqlite3';

export type RawBodyEncoding = 'gzip';

/** A body as stored: the column value and its encoding. */
export interface StoredRawBody {
  body: string | Buffer;
  encoding: RawBodyEncoding | null;
}

/** Level 6 is zlib's default: level 9 saved under 2% more on these bodies at twice the time. */
const GZIP_LEVEL = 6;

export function encodeRawBody(text: string): StoredRawBody {
  const bytes = Buffer.from(text, 'utf8');
  const packed = gzipSync(bytes, { level: GZIP_LEVEL });
  return packed.length < bytes.length ? { body: packed, encoding: 'gzip' } : { body: text, encoding: null };
}

/** The text of a stored body, whichever way it was kept. */
export function decodeRawBody(body: unknown, encoding: unknown): string {
  if (encoding === 'gzip') return gunzipSync(asBuffer(body)).toString('utf8');
  if (encoding !== null && encoding !== undefined) throw new Error(`raw body stored with an unknown encoding (${String(encoding)})`);
  return typeof body === 'string' ? body : asBuffer(body).toString('utf8');
}

function asBuffer(body: unknown): Buffer {
  if (Buffer.isBuffer(body)) return body;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  throw new Error('raw body is neither text nor bytes');
}

/**
 * `raw_body(body, body_encoding)` in SQL, on every connection netingest opens (so `netingest query` can read
 * a kept body: `SELECT raw_body(body, body_encoding) FROM raw_responses`). A body it cannot decode gives NULL
 * rather than failing the whole statement.
 */
export function registerRawBodyFunction(sqlite: BetterSqlite3.Database): void {
  sqlite.function('raw_body', { deterministic: true }, (body: unknown, encoding: unknown) => {
    if (body === null) return null;
    try {
      return decodeRawBody(body, encoding);
    } catch {
      return null;
    }
  });
}
