import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { BALANCE_PATH, OPERATION_METHODS, OPERATION_PATHS, OPERATIONS, type CreditCounters, type Operation } from '../spec/types.ts';
import { FAULT_ANSWERS, faultDrawer, type FaultName } from './faults.ts';
import { Operations, type Validated } from './operations.ts';
import { resolveOptions, type SandboxOptions, type SandboxOptionsInput } from './options.ts';
import { hash32, Prng } from './prng.ts';
import { RateLimiter, type RateRefusal, type RateWindow } from './rate-limiter.ts';

export { SANDBOX_DEFAULTS, type SandboxOptions, type SandboxOptionsInput } from './options.ts';

/** One request as the sandbox saw it. */
export interface LoggedRequest {
  /** 1, 2, 3… in arrival order. */
  seq: number;
  /** Arrival time, ms since the epoch (performance.timeOrigin + performance.now()). */
  at: number;
  method: string;
  /** Path without the query. */
  path: string;
  /** Decoded query parameters (the first value of a repeated name). */
  query: Record<string, string>;
  rawQuery: string;
  /** Header names in lower case; repeated headers joined with ', '. */
  headers: Record<string, string>;
  /** Parsed JSON body, the raw text when it is not JSON, or null when empty. */
  body: unknown;
  /** Status sent; 0 when the connection was dropped. */
  status: number;
  /** Credits charged for this request (0 unless a 200 or a slow 200). */
  charged: number;
  fault: FaultName | null;
}

/** Every operation's path and method, from the spec: an operation added there is routed with no line here. */
const ROUTES = new Map<string, { op: Operation; method: string }>(OPERATIONS.map((op) => [OPERATION_PATHS[op], { op, method: OPERATION_METHODS[op] }]));

const MAX_BODY_BYTES = 1024 * 1024;
const BEARER = /^\s*bearer\s+(\S+)\s*$/i;
const JSON_TYPE = 'application/json; charset=utf-8';
const UNAUTHORIZED_HEADERS = { 'www-authenticate': 'Bearer' };
const msg = (message: string): string => JSON.stringify({ message });

/** How one request is answered: status 0 drops the connection; delayMs comes on top of the configured latency. */
function answer(status: number, body: string | Buffer, headers?: Record<string, string>, fault: FaultName | null = null, charged = 0, delayMs = 0) {
  return { status, body, headers, fault, charged, delayMs };
}
type Decision = ReturnType<typeof answer>;

function write(res: ServerResponse, d: Decision): void {
  if (res.destroyed) return;
  const head = { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(d.body) };
  res.writeHead(d.status, d.headers ? { ...head, ...d.headers } : head);
  res.end(d.body);
}

/** Starts the emulator on `host:port` (127.0.0.1 and a free port by default); resolves to the running sandbox. */
export async function startSandbox(input: SandboxOptionsInput = {}) {
  const options = resolveOptions(input);
  const ledger = new CreditLedger(options.tokens);
  const suspended = new Set(options.suspendedTokens);
  const limiter = rateLimiterOf(options);
  const drawFault = faultDrawer(options.seed, options);
  const operations = new Operations(options);
  const latency = latencyDrawer(options);
  const keepEntries = options.logRequests || options.onRequest !== null;
  const requests: LoggedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let seq = 0;

  /** Writes a decided answer now or after its delay; delayed answers are cancelled by stop(). */
  const send = (res: ServerResponse, d: Decision): void => {
    const delayMs = latency() + d.delayMs;
    if (delayMs <= 0) return write(res, d);
    const timer = setTimeout(() => {
      timers.delete(timer);
      write(res, d);
    }, delayMs);
    timers.add(timer);
  };

  /** The request's token once its method, auth and the rate limit let it through, or the answer refusing it. */
  const admit = (req: IncomingMessage, method: string): string | Decision => {
    if (req.method !== method) return answer(405, msg('Method Not Allowed'), { allow: method });
    const auth = req.headers.authorization;
    const token = auth === undefined ? undefined : BEARER.exec(auth)?.[1];
    if (token === undefined) return answer(401, msg('Missing or malformed bearer token'), UNAUTHORIZED_HEADERS);
    if (suspended.has(token)) return answer(403, msg('Account suspended'));
    if (!ledger.has(token)) return answer(401, msg('Invalid token'), UNAUTHORIZED_HEADERS);
    const refusal = limiter?.tryAcquire(token, performance.now()) ?? null;
    if (refusal) return answer(429, msg('Too Many Requests'), { 'retry-after': String(retryAfterSeconds(refusal, options)) });
    return token;
  };

  /** The balance route: never charged, never faulted (so asking does not shift a seeded fault sequence). */
  const balance = (req: IncomingMessage): Decision => {
    const token = admit(req, 'GET');
    if (typeof token !== 'string') return token;
    // `uid` is a hash of seed and token, never the token itself.
    const uid = `u-${hash32(options.seed, `uid:${token}`).toString(16).padStart(8, '0')}`;
    return answer(200, JSON.stringify({ uid, team: 'sandbox', ...ledger.counters(token) }));
  };

  /** Everything but the I/O: route, auth, rate limit, validation, credits, faults, and the answer. */
  const decide = (req: IncomingMessage, path: string, query: URLSearchParams, bodyText: string): Decision => {
    if (path === BALANCE_PATH && options.balanceRoute) return balance(req);
    const route = ROUTES.get(path);
    if (!route) return answer(404, msg('Not Found'));
    const token = admit(req, route.method);
    if (typeof token !== 'string') return token;

    const answerOf = operations.validate[route.op](query, bodyText, req.headers['content-type']);
    if (typeof answerOf !== 'function') return answer(answerOf.status, answerOf.body);
    const cost = options.costs[route.op];
    if (!ledger.canPay(token, cost)) return answer(402, msg('Insufficient credits'));

    const fault = drawFault();
    if (fault === null || fault === 'slow') {
      // A slow answer is the real answer sent late, so it is charged like any 200.
      const delayMs = fault === 'slow' ? options.slowMs : 0;
      const outcome = answerOf();
      if (outcome.kind === 'error') return answer(outcome.status, outcome.body, undefined, fault, 0, delayMs);
      ledger.charge(token, cost);
      return answer(200, withCounters(outcome.open, ledger.counters(token)), undefined, fault, cost, delayMs);
    }
    const [status, body, headers] = FAULT_ANSWERS[fault](() => answerText(answerOf, ledger.counters(token)), options.hugeBytes);
    return answer(status, body, headers, fault);
  };

  const handle = (req: IncomingMessage, res: ServerResponse, at: number, bodyText: string): void => {
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = q === -1 ? target : target.slice(0, q);
    const rawQuery = q === -1 ? '' : target.slice(q + 1);
    const query = new URLSearchParams(rawQuery);
    const entry = keepEntries ? logEntry(++seq, at, req, path, rawQuery, query, bodyText) : null;
    if (entry && options.logRequests) requests.push(entry);
    const d = decide(req, path, query, bodyText);
    if (entry) {
      Object.assign(entry, { status: d.status, fault: d.fault, charged: d.charged });
      options.onRequest?.(entry);
    }
    if (d.status === 0) res.socket?.destroy();
    else send(res, d);
  };

  const server = createServer((req, res) => {
    const at = performance.timeOrigin + performance.now();
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
      req.resume();
      return handle(req, res, at, '');
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return send(res, answer(413, msg('Request body too large')));
      handle(req, res, at, Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', () => res.destroy());
  });
  server.keepAliveTimeout = 65_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;

  return {
    /** `http://127.0.0.1:<port>` */
    url: `http://${host}:${port}`,
    port,
    /** Every request in arrival order (stays empty when `logRequests` is false). */
    requests,
    /** Sets a token's total credits (a new token becomes valid); credits already used are kept. */
    setCredits: (token: string, total: number): void => ledger.setTotal(token, total),
    /** A token's counters as a 200 body would report them now; throws for an unknown token. */
    credits: (token: string): CreditCounters => ledger.counters(token),
    clearLog: () => {
      requests.length = 0;
    },
    /** Stops listening, cancels answers not yet sent and closes every socket. */
    stop: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export type Sandbox = Awaited<ReturnType<typeof startSandbox>>;

const SECOND_MS = 1000;
const MINUTE_MS = 60_000;

/** The limiter of the configured windows, or null when there is no rate limit. */
function rateLimiterOf(options: SandboxOptions): RateLimiter | null {
  const windows: RateWindow[] = [];
  if (options.rateLimitPerSecond !== null) windows.push({ limit: options.rateLimitPerSecond, windowMs: SECOND_MS });
  if (options.rateLimitPerMinute !== null) windows.push({ limit: options.rateLimitPerMinute, windowMs: MINUTE_MS });
  return windows.length === 0 ? null : new RateLimiter(windows);
}

/**
 * Retry-After of a 429: the configured seconds, or over the minute window the whole seconds until it admits a
 * request if that is longer (retrying after 1 s into a full minute window would only earn more 429s).
 */
function retryAfterSeconds(refusal: RateRefusal, options: SandboxOptions): number {
  if (refusal.window.windowMs < MINUTE_MS) return options.retryAfterSeconds;
  return Math.max(options.retryAfterSeconds, Math.ceil(refusal.waitMs / SECOND_MS));
}

/** A 200 body: the cached answer plus the token's counters as top-level members. */
function withCounters(open: Buffer, c: CreditCounters): Buffer {
  const tail = `,"total_credits":${c.total_credits},"credits_used":${c.credits_used},"credits_remaining":${c.credits_remaining}}`;
  return Buffer.concat([open, Buffer.from(tail, 'latin1')]);
}

/** The text the request would have got without a fault (what a truncated answer is cut from), uncharged. */
function answerText(answerOf: Exclude<Validated, { kind: 'error' }>, counters: CreditCounters): string {
  const outcome = answerOf();
  return outcome.kind === 'ok' ? withCounters(outcome.open, counters).toString('utf8') : outcome.body;
}

/** Each answer's added latency, from its own seeded stream so that latency does not shift the fault draws. */
function latencyDrawer(options: SandboxOptions): () => number {
  const { latencyMs } = options;
  if (!Array.isArray(latencyMs)) return () => latencyMs;
  const [min, max] = latencyMs;
  const rng = Prng.from(options.seed, 'latency');
  return () => min + rng.next() * (max - min);
}

/** Credits are kept in integer micro-credits so fractional costs (0.25) never drift. */
const MICRO = 1_000_000;

const toMicro = (credits: number): number => Math.round(credits * MICRO);
const fromMicro = (micro: number): number => micro / MICRO;

/** Per-token credit accounts: total, used, and whether a call can be paid. */
class CreditLedger {
  private readonly accounts = new Map<string, { totalMicro: number; usedMicro: number }>();

  constructor(tokens: Record<string, number>) {
    for (const [token, total] of Object.entries(tokens)) this.setTotal(token, total);
  }

  has(token: string): boolean {
    return this.accounts.has(token);
  }

  /** Sets a token's total credits, creating the account if needed; credits already used are kept. */
  setTotal(token: string, total: number): void {
    if (!(total >= 0 && Number.isFinite(total))) throw new RangeError(`credits must be a number >= 0, got ${total}`);
    const account = this.accounts.get(token);
    if (account) account.totalMicro = toMicro(total);
    else this.accounts.set(token, { totalMicro: toMicro(total), usedMicro: 0 });
  }

  canPay(token: string, cost: number): boolean {
    const account = this.accounts.get(token);
    return account !== undefined && account.totalMicro - account.usedMicro >= toMicro(cost);
  }

  /** Records a charge; the caller has checked canPay. */
  charge(token: string, cost: number): void {
    const account = this.accounts.get(token);
    if (account) account.usedMicro += toMicro(cost);
  }

  /** The counters as the service reports them; throws for an unknown token. */
  counters(token: string): CreditCounters {
    const account = this.accounts.get(token);
    if (!account) throw new Error('unknown sandbox token');
    return {
      total_credits: fromMicro(account.totalMicro),
      credits_used: fromMicro(account.usedMicro),
      credits_remaining: fromMicro(account.totalMicro - account.usedMicro),
    };
  }
}

/** Builds the log entry of a request whose answer is not decided yet (status 0, nothing charged). */
function logEntry(
  seq: number,
  at: number,
  req: IncomingMessage,
  path: string,
  rawQuery: string,
  params: URLSearchParams,
  bodyText: string,
): LoggedRequest {
  const query: Record<string, string> = {};
  for (const [name, value] of params) if (!(name in query)) query[name] = value;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  let body: unknown = null;
  if (bodyText !== '') {
    try {
      body = JSON.parse(bodyText);
    } catch {
      body = bodyText;
    }
  }
  return { seq, at, method: req.method ?? '', path, query, rawQuery, headers, body, status: 0, charged: 0, fault: null };
}
