import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { OPERATION_PATHS, type CreditCounters, type Operation } from '../spec/types.ts';
import { CreditLedger } from './credit-ledger.ts';
import {
  FaultInjector, HTML_ERROR_PAGE, SERVER_ERROR_BODY, UNAVAILABLE_BODY, WRONG_SHAPE_BODY, hugeBody, truncated,
  type FaultName,
} from './faults.ts';
import { resolveOptions, type SandboxOptions, type SandboxOptionsInput } from './options.ts';
import { Operations, type Outcome, type ValidRequest } from './operations.ts';
import { Prng } from './prng.ts';
import { RateLimiter } from './rate-limiter.ts';

export { SANDBOX_DEFAULTS, type SandboxOptions, type SandboxOptionsInput } from './options.ts';

/** One request as the sandbox saw it. */
export interface LoggedRequest {
  seq: number;
  /** Arrival time, ms since the epoch (performance.timeOrigin + performance.now()). */
  at: number;
  method: string;
  /** Path without the query. */
  path: string;
  /** Decoded query parameters (first value of a repeated name). */
  query: Record<string, string>;
  rawQuery: string;
  /** Header names in lower case. */
  headers: Record<string, string>;
  /** Parsed JSON body, the raw text when it is not JSON, or null when empty. */
  body: unknown;
  /** Status sent; 0 when the connection was dropped. */
  status: number;
  /** Credits charged for this request. */
  charged: number;
  fault: FaultName | null;
}

/** A running sandbox. */
export interface Sandbox {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** Every request in arrival order (empty when `logRequests` is false). */
  requests: LoggedRequest[];
  /** Sets a token's total credits (creating the token if unknown); credits already used are kept. */
  setCredits(token: string, total: number): void;
  /** A token's counters as a 200 body would report them; throws for an unknown token. */
  credits(token: string): CreditCounters;
  /** Empties `requests`. */
  clearLog(): void;
  /** Stops listening and closes every socket. */
  stop(): Promise<void>;
}

const ROUTES = new Map<string, { op: Operation; method: string }>([
  [OPERATION_PATHS['similar-companies'], { op: 'similar-companies', method: 'POST' }],
  [OPERATION_PATHS['post-details'], { op: 'post-details', method: 'GET' }],
  [OPERATION_PATHS['search-jobs'], { op: 'search-jobs', method: 'GET' }],
]);

const MAX_BODY_BYTES = 1024 * 1024;
const BEARER = /^\s*bearer\s+(\S+)\s*$/i;
const JSON_TYPE = 'application/json; charset=utf-8';
const msg = (message: string): string => JSON.stringify({ message });

/** Starts the emulator on `host:port` (127.0.0.1, a free port by default). */
export async function startSandbox(input: SandboxOptionsInput = {}): Promise<Sandbox> {
  const options = resolveOptions(input);
  const ledger = new CreditLedger(options.tokens);
  const suspended = new Set(options.suspendedTokens);
  const limiter = options.rateLimitPerSecond === null ? null : new RateLimiter(options.rateLimitPerSecond);
  const faults = new FaultInjector(options.seed, options);
  const operations = new Operations(options.seed, options.notFoundRate);
  const latency = latencyDrawer(options);
  const requests: LoggedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let seq = 0;

  const send = (res: ServerResponse, status: number, body: string | Buffer, headers: Record<string, string> = {}): void => {
    const delayMs = latency();
    const write = (): void => {
      if (res.destroyed) return;
      res.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body), ...headers });
      res.end(body);
    };
    if (delayMs <= 0) write();
    else later(delayMs, write);
  };

  const later = (ms: number, fn: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      fn();
    }, ms);
    timers.add(timer);
  };

  const handle = (req: IncomingMessage, res: ServerResponse, at: number, bodyText: string): void => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const rawQuery = q === -1 ? '' : url.slice(q + 1);
    const query = new URLSearchParams(rawQuery);
    const entry: LoggedRequest | null = options.logRequests ? logEntry(++seq, at, req, path, rawQuery, query, bodyText) : null;
    if (entry) requests.push(entry);
    const finish = (status: number, body: string | Buffer, headers?: Record<string, string>, fault: FaultName | null = null): void => {
      if (entry) {
        entry.status = status;
        entry.fault = fault;
      }
      send(res, status, body, headers);
    };

    const route = ROUTES.get(path);
    if (!route) return finish(404, msg('Not Found'));
    if (req.method !== route.method) return finish(405, msg('Method Not Allowed'), { allow: route.method });

    const auth = req.headers.authorization;
    const token = auth === undefined ? undefined : BEARER.exec(auth)?.[1];
    if (token === undefined) return finish(401, msg('Missing or malformed bearer token'), { 'www-authenticate': 'Bearer' });
    if (suspended.has(token)) return finish(403, msg('Account suspended'));
    if (!ledger.has(token)) return finish(401, msg('Invalid token'), { 'www-authenticate': 'Bearer' });
    if (limiter && !limiter.tryAcquire(token, performance.now())) {
      return finish(429, msg('Too Many Requests'), { 'retry-after': String(options.retryAfterSeconds) });
    }

    const valid = operations.validate(route.op, { query, bodyText, contentType: req.headers['content-type'] });
    if ('kind' in valid) return finish(valid.status, valid.body);
    const cost = options.costs[route.op];
    if (!ledger.canPay(token, cost)) return finish(402, msg('Insufficient credits'));

    const fault = faults.draw();
    if (fault === null || fault === 'slow') {
      const outcome = operations.answer(valid);
      if (outcome.kind === 'error') return finish(outcome.status, outcome.body, undefined, fault);
      ledger.charge(token, cost);
      if (entry) entry.charged = cost;
      const body = withCounters(outcome.open, ledger.counters(token));
      if (fault === null) return finish(200, body);
      if (entry) {
        entry.status = 200;
        entry.fault = fault;
      }
      return later(options.slowMs, () => send(res, 200, body));
    }
    return injectFault(fault, res, entry, finish, () => fullText(operations, valid, ledger.counters(token)));
  };

  const injectFault = (
    fault: FaultName,
    res: ServerResponse,
    entry: LoggedRequest | null,
    finish: (status: number, body: string | Buffer, headers?: Record<string, string>, fault?: FaultName | null) => void,
    answerText: () => string,
  ): void => {
    switch (fault) {
      case 'server_error':
        return finish(500, SERVER_ERROR_BODY, undefined, fault);
      case 'unavailable':
        return finish(503, UNAVAILABLE_BODY, undefined, fault);
      case 'drop':
        if (entry) {
          entry.status = 0;
          entry.fault = fault;
        }
        res.socket?.destroy();
        return;
      case 'truncate':
        return finish(200, truncated(answerText()), undefined, fault);
      case 'html':
        return finish(200, HTML_ERROR_PAGE, { 'content-type': 'text/html; charset=utf-8' }, fault);
      case 'wrong_shape':
        return finish(200, WRONG_SHAPE_BODY, undefined, fault);
      case 'huge':
        return finish(200, hugeBody(options.hugeBytes), undefined, fault);
      case 'slow':
        return;
    }
  };

  const server = createServer({ keepAlive: true }, (req, res) => {
    const at = performance.timeOrigin + performance.now();
    const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
    if (!hasBody) {
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
      if (size > MAX_BODY_BYTES) return send(res, 413, msg('Request body too large'));
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
    url: `http://${host}:${port}`,
    port,
    requests,
    setCredits: (token, total) => ledger.setTotal(token, total),
    credits: (token) => ledger.counters(token),
    clearLog: () => {
      requests.length = 0;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** A 200 body: the cached answer plus this token's counters as top-level members. */
function withCounters(open: string, c: CreditCounters): string {
  return `${open},"total_credits":${c.total_credits},"credits_used":${c.credits_used},"credits_remaining":${c.credits_remaining}}`;
}

/** The text the request would have got without a fault (for truncation), uncharged. */
function fullText(operations: Operations, request: ValidRequest, counters: CreditCounters): string {
  const outcome: Outcome = operations.answer(request);
  return outcome.kind === 'ok' ? withCounters(outcome.open, counters) : outcome.body;
}

/** Draws each answer's added latency from its own seeded stream, so latency does not shift fault draws. */
function latencyDrawer(options: SandboxOptions): () => number {
  const { latencyMs } = options;
  if (!Array.isArray(latencyMs)) return () => latencyMs;
  const [min, max] = latencyMs;
  const rng = Prng.from(options.seed, 'latency');
  return () => min + rng.next() * (max - min);
}

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
