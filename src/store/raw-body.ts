/**
 * A body is kept gzipped (`body_encoding = 'gzip'`, a BLOB) from 2 KiB, else as text (NULL, as older builds kept all).
 * gzip, not brotli: at the same writer time both shrink JSON alike, and every tool reads gzip. Level 1 keeps nearly
 * level 6's ratio in half the time; a small post would barely shrink, for a fixed cost per call.
 */
import { gunzipSync, gzipSync } from 'node:zlib';
import type BetterSqlite3 from 'better-sqlite3';

export type RawBodyEncoding = 'gzip';

export interface StoredRawBody {
  body: string | Buffer;
  encoding: RawBodyEncoding | null;
}

const GZIP_LEVEL = 1;
/** Bodies shorter than this (in UTF-16 units, close to bytes for JSON) are kept as text. */
const GZIP_FROM_LENGTH = 2048;

export function encodeRawBody(text: string): StoredRawBody {
  if (text.length < GZIP_FROM_LENGTH) return { body: text, encoding: null };
  const bytes = Buffer.from(text, 'utf8');
  const packed = gzipSync(bytes, { level: GZIP_LEVEL });
  return packed.length < bytes.length ? { body: packed, encoding: 'gzip' } : { body: text, encoding: null };
}

/**
 * A body as PostgreSQL's text column takes it: a raw NUL (a JSON body cannot hold one, only a body kept unread for its
 * size can) as U+FFFD. Refused, the paid answer could not be kept at all, and its run would fail every night.
 */
export function pgBodyText(text: string): string {
  return text.includes('\u0000') ? text.replaceAll('\u0000', '\ufffd') : text;
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
 * `raw_body(body, body_encoding)` in SQL on every connection netingest opens, so `netingest query` can read a kept
 * body; one it cannot decode gives NULL rather than failing the whole statement.
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
