/** The API client: one generic call per spec, on a keep-alive undici Agent (several times faster than global fetch). */
import { Agent } from 'undici';
import { ConfigError } from '../errors.ts';
import { DEFAULT_RETRY_AFTER_MS } from './errors.ts';
import { BALANCE_PATH, type CreditCounters } from '../spec/types.ts';
import { discard, readBody } from './body-reader.ts';
import { checkToken, parseBaseUrl } from './config.ts';
import { attempt, type Transport } from './http.ts';
import { createOutputRedactor } from './redact.ts';
import { creditsOf, parseJsonBody } from './schemas.ts';
import type { OperationSpec } from '../operations/operation-spec.ts';

export const CLIENT_DEFAULTS = {
  /** Longest a call may take: connecting, waiting for headers, and reading the whole body (milliseconds). */
  timeoutMs: 30_000,
  /** Largest response body accepted (bytes); a larger 200/404 body fails the item with ResponseTooLargeError. */
  maxBodyBytes: 8 * 1024 * 1024,
  /**
   * Largest 200 body over maxBodyBytes still read whole and kept (bytes), for `reprocess` to store without paying again.
   * Only twice the limit: a run holds `rate.concurrency` of them, each 3-4 times over (read, decoded, redacted, gzipped).
   */
  maxKeptBodyBytes: 16 * 1024 * 1024,
  /** Most keep-alive connections open to the API host at once; calls beyond it queue in the agent. */
  connections: 16,
  /** The wait after a 429 whose Retry-After is missing or garbage (milliseconds); tests shorten it. */
  retryAfterFallbackMs: DEFAULT_RETRY_AFTER_MS,
} as const;

/** The API's base URL and token, and any of CLIENT_DEFAULTS (maxKeptBodyBytes: at least maxBodyBytes). */
export type ClientOptions = { [K in keyof typeof CLIENT_DEFAULTS]?: number } & {
  /** `https://host[/prefix]`; plain http only to a loopback host (see parseBaseUrl). */
  baseUrl: string;
  /** Bearer token; sent only in the Authorization header and redacted from everything the client produces. */
  token: string;
};

/** Creates a client; call `close()` when done so the process can exit. */
export function createApiClient(options: ClientOptions) {
  const timeoutMs = positive('timeoutMs', options.timeoutMs ?? CLIENT_DEFAULTS.timeoutMs, false);
  const maxBodyBytes = positive('maxBodyBytes', options.maxBodyBytes ?? CLIENT_DEFAULTS.maxBodyBytes, true);
  const maxKeptBodyBytes = Math.max(maxBodyBytes, positive('maxKeptBodyBytes', options.maxKeptBodyBytes ?? CLIENT_DEFAULTS.maxKeptBodyBytes, true));
  const connections = positive('connections', options.connections ?? CLIENT_DEFAULTS.connections, true);
  const retryAfterFallbackMs = positive('retryAfterFallbackMs', options.retryAfterFallbackMs ?? CLIENT_DEFAULTS.retryAfterFallbackMs, false);
  const { origin, pathPrefix } = parseBaseUrl(options.baseUrl, 'The API base URL');
  const token = options.token;
  checkToken(token, 'The API token');

  const dispatcher = new Agent({ connections, connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
  // Shared by every call: undici only reads them. identity: bodies are read within a byte limit, and a
  // compressed one costs CPU to expand; http.ts still decodes gzip, deflate and br from a server that ignores it.
  const plain = {
    Authorization: `Bearer ${token}`,
    Accept: 'application/json',
    'Accept-Encoding': 'identity',
    'User-Agent': 'netingest/0.1.0',
  };
  const secrets = [token];
  const transport: Transport = {
    dispatcher, origin, pathPrefix, timeoutMs, maxBodyBytes, maxKeptBodyBytes, retryAfterFallbackMs, secrets,
    redactBody: createOutputRedactor(secrets),
    headers: { plain, json: { ...plain, 'Content-Type': 'application/json' } },
  };

  return {
    /** Sends `request` as `spec` says (method, path, body) and reads the answer through its contract. */
    // async, so that a request that cannot even be built (a caller bug) rejects like every other failure.
    call: async <Q, A>(spec: OperationSpec<Q, A>, request: Q) => attempt(transport, spec, request),
    /** The free credit check (readBalance): the account's counters, or null. Never rejects. */
    balance: (signal?: AbortSignal) => readBalance(transport, signal),
    /** Waits for calls in flight, then closes the keep-alive connections. */
    close: () => dispatcher.close(),
  };
}

function positive(name: string, value: number, integer: boolean): number {
  if (!(Number.isFinite(value) && value > 0 && (!integer || Number.isInteger(value)))) {
    throw new ConfigError(`${name} must be a positive ${integer ? 'integer' : 'number'} (got ${value}).`);
  }
  return value;
}

export const BALANCE_DEFAULTS = {
  /** Longest the check may take (capped by the client's own timeout): a run must not wait long for a courtesy. */
  timeoutMs: 5_000,
  /** Largest answer read: it holds five members. */
  maxBodyBytes: 64 * 1024,
} as const;

/** The balance by the free credit check `GET /v1/api/auth` (not in api.md): null, never a rejection, for all but a 200 with three finite counters. */
async function readBalance(t: Transport, signal?: AbortSignal): Promise<CreditCounters | null> {
  const timeoutMs = Math.min(t.timeoutMs, BALANCE_DEFAULTS.timeoutMs);
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const res = await t.dispatcher.request({
      origin: t.origin,
      path: t.pathPrefix + BALANCE_PATH,
      method: 'GET',
      headers: t.headers.plain,
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
