/**
 * The balance from the service's free credit check, `GET /v1/api/auth`: a courtesy outside api.md, so anything but a
 * 200 with three finite counters means "not offered" (null, never an error). Only the counters are kept.
 */
import { BALANCE_PATH, type CreditCounters } from '../spec/types.ts';
import { discard, readBody } from './body-reader.ts';
import type { Transport } from './http.ts';
import { creditsOf, parseJsonBody } from './schemas.ts';

export const BALANCE_DEFAULTS = {
  /** Longest the check may take (capped by the client's own timeout): a run must not wait long for a courtesy. */
  timeoutMs: 5_000,
  /** Largest answer read: it holds five members. */
  maxBodyBytes: 64 * 1024,
} as const;

/** Asks the balance; resolves to the counters, or null when the service does not offer them. Never rejects. */
export async function readBalance(t: Transport, headers: Record<string, string>, signal?: AbortSignal): Promise<CreditCounters | null> {
  const timeoutMs = Math.min(t.timeoutMs, BALANCE_DEFAULTS.timeoutMs);
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const res = await t.dispatcher.request({
      origin: t.origin,
      path: t.pathPrefix + BALANCE_PATH,
      method: 'GET',
      headers,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    if (res.statusCode !== 200) {
      discard(res.body);
      return null;
    }
    const body = await readBody(res, { limitBytes: BALANCE_DEFAULTS.maxBodyBytes, deadline: performance.now() + timeoutMs });
    return body.truncated || body.unsupported !== undefined ? null : creditsOf(parseJsonBody(body.text));
  } catch {
    return null;
  }
}
