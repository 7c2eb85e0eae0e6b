/** A body as text within a size limit (decoded bytes: zip bombs) and deadline, undoing compression sent unasked, in its declared charset. */
import { isUtf8 } from 'node:buffer';
import { TextDecoder } from 'node:util';
import type { Readable, Transform } from 'node:stream';
import type { Dispatcher } from 'undici';
import { createBrotliDecompress, createGunzip, createInflate, createInflateRaw } from 'node:zlib';
import { BODY_DECODE_CODE, BODY_DEADLINE_CODE } from './transport-errors.ts';

/** Bytes of a body cut at its limit that are decoded, for the error excerpt. */
const TRUNCATED_TEXT_BYTES = 16 * 1024;

const NO_CODINGS: readonly string[] = Object.freeze([]);

/** The content codings the reader undoes; `x-gzip` is gzip's old name (RFC 9110, 8.4.1.3). */
const DECODABLE = new Set(['gzip', 'x-gzip', 'deflate', 'br']);

export interface BodyText {
  text: string;
  /** True when the body was longer than the limit; `text` then holds only its first few kilobytes. */
  truncated: boolean;
  /** A body over the limit but within `keepBytes`: all of it, read to its end. */
  whole?: string;
  /** The first coding the reader cannot undo: the body was not read, and `text` says only how it came. */
  unsupported?: string;
}

export interface BodyLimits {
  /** Most (decompressed) bytes read as an answer. */
  limitBytes: number;
  /** A body over limitBytes but within this is still read to its end and returned whole, to be kept (0: none is). */
  keepBytes?: number;
  /** performance.now() past which reading fails with a BODY_DEADLINE_CODE error. */
  deadline: number;
}

/** Decoders by Content-Type as sent, null for UTF-8: a server sends one or two, so an answer costs one lookup and no allocation. */
const DECODERS = new Map<string, TextDecoder | null>();
/** Types remembered, at most: a server varying its Content-Type must not grow the map without end. */
const MAX_DECODERS = 32;
/** Single-byte encodings, whose real text past ASCII is hardly ever valid UTF-8 (unlike UTF-16's or Shift_JIS's). */
const SINGLE_BYTE = /^(?:ibm866|iso-8859-|koi8-|macintosh|windows-|x-mac-)/;
/**
 * windows-1252's 0x80-0x9F (WHATWG's index: `€` to `Ÿ`, five bytes as themselves), by hand: Node from 20.18.3 reads
 * them as Latin-1's C1 controls (nodejs/node#60888), and every Latin-1 label is this encoding.
 */
const CP1252_C1 = '\u20ac\x81\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\x8d\u017d\x8f\x90\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\x9d\u017e\u0178';

/**
 * The decoder of a Content-Type's charset (any label of the WHATWG Encoding standard); null, read as UTF-8, for UTF-8,
 * none, and a label it does not know: JSON is UTF-8 (RFC 8259), so that is the likeliest, and a paid answer is kept.
 */
function charsetDecoder(contentType: string | string[] | undefined): TextDecoder | null {
  if (contentType === undefined) return null;
  const header = typeof contentType === 'string' ? contentType : (contentType.at(-1) ?? '');
  let decoder = DECODERS.get(header);
  if (decoder === undefined) {
    decoder = decoderOf(header);
    if (DECODERS.size < MAX_DECODERS) DECODERS.set(header, decoder);
  }
  return decoder;
}

function decoderOf(contentType: string): TextDecoder | null {
  const label = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(contentType)?.[1];
  if (label === undefined) return null;
  try {
    const decoder = new TextDecoder(label);
    return decoder.encoding === 'utf-8' ? null : decoder;
  } catch {
    return null;
  }
}

/** The codings of a Content-Encoding header in the order the server applied them, without `identity`. */
export function contentCodings(header: string | string[] | undefined): readonly string[] {
  // The common case, once per answer on the run's busiest thread: no header, no arrays built.
  if (header === undefined) return NO_CODINGS;
  const text = Array.isArray(header) ? header.join(',') : header;
  return text.split(',').map((c) => c.trim().toLowerCase()).filter((c) => c !== '' && c !== 'identity');
}

/** Closes a body unread: closing the connection is cheaper than draining it. */
export function discard(body: Readable): void {
  body.on('error', () => undefined);
  body.destroy();
}

/** A body as text (charsetDecoder), the stream destroyed past `limitBytes`; bodyTimeout bounds each gap, the deadline the whole; an unknown coding: unread. */
export function readBody({ body, headers }: Pick<Dispatcher.ResponseData, 'body' | 'headers'>, limits: BodyLimits): Promise<BodyText> {
  const codings = contentCodings(headers['content-encoding']);
  const unsupported = codings.find((c) => !DECODABLE.has(c));
  if (unsupported !== undefined) {
    discard(body);
    return Promise.resolve({ text: `(a body compressed as '${unsupported}')`, truncated: false, unsupported });
  }
  const charset = charsetDecoder(headers['content-type']);
  const { deadline } = limits;
  // Content-Length as sent (of the compressed bytes when compressed).
  const declaredBytes = Number(headers['content-length'] ?? -1);
  const answerBytes = limits.limitBytes;
  let limitBytes = Math.max(answerBytes, limits.keepBytes ?? 0);
  // A body announced as too large to keep is refused without reading it whole, but its start is kept for the
  // excerpt that tells the user what was sent (a proxy page, a dump).
  const refused = declaredBytes > limitBytes;
  if (refused) limitBytes = Math.min(limitBytes, TRUNCATED_TEXT_BYTES);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Compressed bytes count too: a stream that decodes to nothing must not run on until the deadline.
    let rawSize = 0;
    let decoders: Transform[] = [];
    // Once failed or cut, chunks still queued in the body are dropped, and no decoder is made for them.
    let settled = false;
    const destroyAll = (): void => {
      settled = true;
      // destroy() makes undici emit an abort error, which lands in the settled promise's reject: ignored.
      body.destroy();
      for (const d of decoders) d.destroy();
    };
    const fail = (err: Error): void => {
      destroyAll();
      reject(err);
    };
    const cut = (): void => {
      destroyAll();
      // Only an excerpt is ever made of a cut body: decode its start, not megabytes.
      resolve({ text: decodeHead(chunks, charset), truncated: true });
    };
    const checkDeadline = (): void => {
      if (performance.now() > deadline) {
        fail(Object.assign(new Error('response body still arriving when the time was up'), { code: BODY_DEADLINE_CODE }));
      }
    };
    const onText = (chunk: Buffer): void => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > limitBytes) return cut();
      checkDeadline();
    };
    const onEnd = (): void => {
      if (refused) return resolve({ text: decodeHead(chunks, charset), truncated: true });
      // Read to its end, but over the answer limit: whole, to be kept, and only an excerpt to be shown.
      if (size > answerBytes) return resolve({ text: decodeHead(chunks, charset), truncated: true, whole: decode(chunks, charset) });
      resolve({ text: decode(chunks, charset), truncated: false });
    };
    body.on('error', fail);
    if (codings.length === 0) {
      body.on('data', onText);
      body.on('end', onEnd);
      return;
    }
    body.on('data', (chunk: Buffer) => {
      if (settled) return;
      rawSize += chunk.length;
      if (rawSize > limitBytes) return cut();
      checkDeadline();
      if (settled) return;
      if (decoders.length === 0) {
        // Made on the first byte, which tells zlib from raw deflate (and an empty body needs no decoding).
        decoders = decodersFor(codings, chunk[0]!, (err) =>
          fail(Object.assign(new Error(`${codings.join(', ')}: ${err.message}`), { code: BODY_DECODE_CODE, cause: err })),
        );
        const text = decoders[decoders.length - 1]!;
        text.on('data', onText);
        text.on('end', onEnd);
      }
      const first = decoders[0]!;
      if (!first.write(chunk)) {
        body.pause();
        first.once('drain', () => body.resume());
      }
    });
    body.on('end', () => (decoders.length === 0 ? onEnd() : decoders[0]!.end()));
  });
}

/**
 * One decompressor per coding, the last applied first. HTTP's `deflate` is a zlib stream, but some servers send raw
 * deflate: the outermost coding's first byte tells which (a zlib header's low nibble is 8), as browsers do.
 */
function decodersFor(codings: readonly string[], firstByte: number, onError: (err: Error) => void): Transform[] {
  const decoders = [...codings].reverse().map((coding, i): Transform => {
    if (coding === 'br') return createBrotliDecompress();
    if (coding === 'gzip' || coding === 'x-gzip') return createGunzip();
    return i > 0 || (firstByte & 0x0f) === 0x08 ? createInflate() : createInflateRaw();
  });
  for (const [i, decoder] of decoders.entries()) {
    decoder.on('error', onError);
    if (i > 0) decoders[i - 1]!.pipe(decoder);
  }
  return decoders;
}

function decode(chunks: Buffer[], charset: TextDecoder | null): string {
  return text(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks), charset);
}

/** The first TRUNCATED_TEXT_BYTES of the chunks as text (a character cut at the end decodes as U+FFFD). */
function decodeHead(chunks: Buffer[], charset: TextDecoder | null): string {
  const size = chunks.reduce((n, chunk) => n + chunk.length, 0);
  // Buffer.concat copies no more than the length it is given.
  return text(Buffer.concat(chunks, Math.min(size, TRUNCATED_TEXT_BYTES)), charset);
}

/**
 * Bytes that are UTF-8 are read as UTF-8 under a single-byte label too: servers label UTF-8 text with their default
 * (Tomcat's iso-8859-1), while Latin-1 text is valid UTF-8 only when each accent follows an `Ã`-like capital.
 */
function text(bytes: Buffer, charset: TextDecoder | null): string {
  if (charset === null || (SINGLE_BYTE.test(charset.encoding) && isUtf8(bytes))) return bytes.toString('utf8');
  if (charset.encoding !== 'windows-1252') return charset.decode(bytes);
  return bytes.toString('latin1').replace(/[\x80-\x9f]/g, (c) => CP1252_C1[c.charCodeAt(0) - 0x80]!);
}
