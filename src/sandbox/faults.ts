import { Prng } from './prng.ts';

/** The injectable faults by logged name and the option setting each rate, in the order one draw checks them. */
export const FAULTS = [
  ['server_error', 'serverErrorRate'],
  ['unavailable', 'unavailableRate'],
  ['drop', 'dropRate'],
  ['truncate', 'truncateRate'],
  ['slow', 'slowRate'],
  ['html', 'htmlRate'],
  ['wrong_shape', 'wrongShapeRate'],
  ['huge', 'hugeRate'],
] as const;

export type FaultName = (typeof FAULTS)[number][0];

/** Fault injection rates, each a probability in 0..1 drawn per request from the seeded PRNG. */
export type FaultRates = Record<(typeof FAULTS)[number][1], number>;

/** Draws at most one fault per request from a seeded stream, so a run with the same requests repeats. */
export function faultDrawer(seed: number, rates: FaultRates): () => FaultName | null {
  const prng = Prng.from(seed, 'faults');
  const active = FAULTS.map(([name, key]): [FaultName, number] => [name, rates[key]]).filter(([, r]) => r > 0);
  // No draw is made when every rate is 0.
  if (active.length === 0) return () => null;
  return () => {
    const r = prng.next();
    let edge = 0;
    for (const [name, rate] of active) {
      edge += rate;
      if (r < edge) return name;
    }
    return null;
  };
}

/** An HTML error page such as a proxy in front of the service would send with status 200. */
const HTML_ERROR_PAGE =
  '<!DOCTYPE html>\n<html><head><title>Service temporarily unavailable</title></head>\n' +
  '<body><h1>Something went wrong</h1><p>The upstream service did not answer. Please try again later.</p></body></html>\n';

/** What a fault answers: status (0 drops the connection), body and extra headers. */
export type FaultAnswer = [status: number, body: string | Buffer, headers?: Record<string, string>];

/** Each fault's answer (slow is none: the real answer sent late); `real` makes the body the request would have got. */
export const FAULT_ANSWERS: Record<Exclude<FaultName, 'slow'>, (real: () => string, hugeBytes: number) => FaultAnswer> = {
  server_error: () => [500, JSON.stringify({ error: true, message: 'Internal Server Error' })],
  unavailable: () => [503, JSON.stringify({ error: true, message: 'Service Unavailable' })],
  drop: () => [0, ''],
  truncate: (real) => [200, truncated(real())],
  html: () => [200, HTML_ERROR_PAGE, { 'content-type': 'text/html; charset=utf-8' }],
  // Valid JSON that matches none of the documented 200 shapes.
  wrong_shape: () => [200, JSON.stringify({ status: 'ok', result: [{ id: 1, value: 'unexpected' }], data: 'n/a' })],
  huge: (_real, hugeBytes) => [200, hugeBody(hugeBytes)],
};

let hugeCache: { bytes: number; body: Buffer } | null = null;

/** A JSON-looking body of exactly `bytes` bytes, built once per size: it is large, so it is cached. */
function hugeBody(bytes: number): Buffer {
  if (hugeCache?.bytes === bytes) return hugeCache.body;
  const head = Buffer.from('{"success":true,"message":"","padding":"');
  const tail = Buffer.from('"}');
  const body = Buffer.alloc(Math.max(bytes, head.length + tail.length), 'x');
  head.copy(body, 0);
  tail.copy(body, body.length - tail.length);
  hugeCache = { bytes, body };
  return body;
}

/** The first half of a body, cut at a character boundary so it is still UTF-8 but no longer JSON. */
function truncated(body: string): string {
  let cut = Math.max(1, Math.floor(body.length / 2));
  const code = body.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1; // never split a surrogate pair
  return body.slice(0, cut);
}
