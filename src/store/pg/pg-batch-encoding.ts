/**
 * A synced batch's messages (pg-synced-batch.ts) encoded into one buffer, written to the socket at once: node-postgres
 * serializes each message on its own (a fresh buffer each, a Bind's grown by copying as its values go in, then
 * copied again) and writes it on its own (four writes a statement, forty a group commit). Here each value's bytes
 * are counted, one buffer is taken for the batch and each value written into it once. The messages are the
 * extended protocol's as node-postgres sends them: Close, Parse (no parameter types given), Bind (text values; a
 * Buffer binary, as node-postgres does), Describe of the unnamed portal, Execute with no row limit, one Sync.
 */

/** One statement's messages: a Close of a doubtful name first, a Parse when not prepared, then Bind/Describe/Execute. */
export interface EncodedStatement {
  /** The prepared name ('' unnamed). */
  name: string;
  /** Sent as Parse when set: the statement is not prepared on the connection yet. */
  parse?: string;
  /** A name to close before its Parse (prepared or not, nobody knows after a failed batch). */
  close?: boolean;
  values: ReadonlyArray<string | Buffer | null>;
}

const CSTRING = (s: string) => Buffer.byteLength(s) + 1;

/** The batch's size in bytes, and each value's byte length in order (null: 0), for encodeBatch to write them. */
function measure(statements: readonly EncodedStatement[]): { size: number; lengths: number[] } {
  const lengths: number[] = [];
  let size = 5; // Sync
  for (const s of statements) {
    const name = CSTRING(s.name);
    if (s.close) size += 1 + 4 + 1 + name;
    if (s.parse !== undefined) size += 1 + 4 + name + CSTRING(s.parse) + 2;
    size += 1 + 4 + 1 + name + 2 + 2 * s.values.length + 2 + 4 * s.values.length + 4; // Bind without the values' bytes
    for (const v of s.values) {
      const n = v === null ? 0 : typeof v === 'string' ? Buffer.byteLength(v) : v.length;
      lengths.push(n);
      size += n;
    }
    size += 7 + 10; // Describe portal, Execute
  }
  return { size, lengths };
}

/** The batch's bytes: every statement's messages in order, then one Sync. */
export function encodeBatch(statements: readonly EncodedStatement[]): Buffer {
  const { size, lengths } = measure(statements);
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  let k = 0;
  const int32 = (n: number) => (at = out.writeInt32BE(n, at));
  const int16 = (n: number) => (at = out.writeInt16BE(n, at));
  const cstring = (s: string) => {
    at += out.write(s, at, 'utf8');
    out[at++] = 0;
  };
  const header = (code: number, length: number) => {
    out[at++] = code;
    int32(length);
  };
  for (const s of statements) {
    const name = CSTRING(s.name);
    if (s.close) {
      header(0x43, 4 + 1 + name); // 'C'
      out[at++] = 0x53; // 'S': a prepared statement
      cstring(s.name);
    }
    if (s.parse !== undefined) {
      header(0x50, 4 + name + CSTRING(s.parse) + 2); // 'P'
      cstring(s.name);
      cstring(s.parse);
      int16(0);
    }
    const start = at;
    header(0x42, 0); // 'B', its length filled in below
    out[at++] = 0; // the unnamed portal
    cstring(s.name);
    int16(s.values.length);
    for (const v of s.values) int16(Buffer.isBuffer(v) ? 1 : 0);
    int16(s.values.length);
    for (const v of s.values) {
      const n = lengths[k++]!;
      if (v === null) int32(-1);
      else {
        int32(n);
        at += typeof v === 'string' ? out.write(v, at, 'utf8') : v.copy(out, at);
      }
    }
    int16(1);
    int16(0); // every result column as text
    out.writeInt32BE(at - start - 1, start + 1);
    header(0x44, 6); // 'D'
    out[at++] = 0x50; // 'P': the portal
    out[at++] = 0;
    header(0x45, 9); // 'E'
    out[at++] = 0;
    int32(0); // no row limit
  }
  header(0x53, 4); // 'S'
  if (at !== size) throw new Error(`internal: a batch of ${size} bytes written as ${at}`);
  return out;
}
