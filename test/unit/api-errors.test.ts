// Every outcome of one call, against a tiny scripted node:http server on 127.0.0.1 that answers exactly what
// each test needs (dropped sockets, slow bodies, huge bodies, HTTP-dates), with the real undici client.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { inspect } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTypedClient, type TypedClient } from '../support/typed-client.ts';
import {
  ApiError,
  ApiSchemaError,
  AuthError,
  CreditsExhaustedError,
  InvalidJsonError,
  NetworkError,
  RequestRejectedError,
  ResponseTooLargeError,
  ServerError,
  ThrottledError,
  TimeoutError,
  TlsError,
  UnexpectedResponseError,
} from '../../src/api/errors.ts';
import { errorAction } from './error-verb.ts';
import { EMPTY_JOBS_PAGE } from './api-fixtures.ts';

const TOKEN = 'sk_test_4f9c2a7e1b3d5f60aa';
const JOBS_OK = EMPTY_JOBS_PAGE;

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;
interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

let handler: Handler = (_req, res) => res.end();
const seen: Seen[] = [];
let connections = 0;
let server: Server;
let baseUrl: string;
let client: TypedClient;
const cleanups: Array<() => void> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      handler(req, res, body);
    });
  });
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = createTypedClient({ baseUrl, token: TOKEN, timeoutMs: 2000 });
});

afterEach(() => {
  for (const fn of cleanups.splice(0)) fn();
  seen.length = 0;
});

afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const reply =
  (status: number, body: string | object = '', headers: Record<string, string> = {}): Handler =>
  (_req, res) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(text);
  };

/** Awaits a rejection, checks it is an ApiError that nowhere carries the token, and returns it. */
async function failure(promise: Promise<unknown>): Promise<ApiError> {
  let caught: unknown = null;
  try {
    await promise;
  } catch (err) {
    caught = err;
  }
  if (!(caught instanceof ApiError)) throw new Error(`expected an ApiError, got ${inspect(caught)}`);
  for (const text of [caught.message, caught.bodyExcerpt, JSON.stringify(caught), inspect(caught, { depth: 6 }), String(caught.stack)]) {
    expect(text).not.toContain(TOKEN);
  }
  expect(caught.bodyExcerpt.length).toBeLessThanOrEqual(300);
  expect(caught.bodyExcerpt).not.toMatch(/[\r\n]/);
  expect(caught.call.latencyMs).toBeGreaterThanOrEqual(0);
  return caught;
}

describe('200 and the request as the server saw it', () => {
  it('returns data, exact raw text, credits and call info, keeping extra members', async () => {
    const body = `{\n  "success": true, "message": "Jobs — fetched ✓", "currentPage": 0, "numResults": 0, "results": [],
      "total_credits": 100, "credits_used": 0.25, "credits_remaining": 99.75, "newField": {"x": [1, 2]}\n}`;
    handler = reply(200, body);
    const result = await client.searchJobs({ keywords: 'data engineer', jobTypes: ['full time', 'contract'], start: 0 });
    if (result.kind !== 'ok') throw new Error('expected ok');
    expect(result.raw).toBe(body);
    expect(result.data.newField).toEqual({ x: [1, 2] });
    expect(result.data.message).toBe('Jobs — fetched ✓');
    expect(result.credits).toEqual({ total_credits: 100, credits_used: 0.25, credits_remaining: 99.75 });
    const path = '/v1/api/search-jobs?start=0&keywords=data%20engineer&jobTypes=full%20time,contract';
    expect(result.call).toMatchObject({ operation: 'search-jobs', method: 'GET', path, status: 200 });
    expect(seen[0]).toMatchObject({ method: 'GET', url: path, body: '' });
    expect(seen[0]?.headers).toMatchObject({ authorization: `Bearer ${TOKEN}`, accept: 'application/json' });
    expect(seen[0]?.headers['content-type']).toBeUndefined();
  });

  it('POSTs similar-companies as JSON with the bearer token; GETs post-details with the URL encoded', async () => {
    handler = reply(404, { error: true, message: 'No similar companies found' });
    const request = { url: 'network.com/company/acme', account: { location: ['germany'] }, page: 2, num: 5 };
    await client.similarCompanies(request);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/v1/api/similar-companies' });
    expect(JSON.parse(seen[0]?.body ?? '')).toEqual(request);
    expect(seen[0]?.headers).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      accept: 'application/json',
      'content-type': 'application/json',
      'user-agent': 'netingest/0.1.0',
    });
    handler = reply(404, {});
    await client.postDetails('https://www.network.com/posts/a_activity-1?x=1&y=2');
    expect(seen[1]).toMatchObject({ method: 'GET', url: '/v1/api/post-details?url=https%3A%2F%2Fwww.network.com%2Fposts%2Fa_activity-1%3Fx%3D1%26y%3D2' });
  });

  it('appends operation paths to a base URL path prefix', async () => {
    const prefixed = createTypedClient({ baseUrl: `${baseUrl}/gateway/`, token: TOKEN });
    handler = reply(200, JOBS_OK);
    try {
      const result = await prefixed.searchJobs({});
      expect(result.call.path).toBe('/gateway/v1/api/search-jobs');
      expect(seen[0]?.url).toBe('/gateway/v1/api/search-jobs');
    } finally {
      await prefixed.close();
    }
  });

  it('reuses keep-alive connections for consecutive calls', async () => {
    const fresh = createTypedClient({ baseUrl, token: TOKEN });
    handler = reply(200, JOBS_OK);
    const before = connections;
    try {
      for (let i = 0; i < 20; i++) await fresh.searchJobs({ start: i * 10 });
      // undici may open a second socket while the first finishes its response, then alternates between them.
      expect(connections - before).toBeLessThanOrEqual(2);
    } finally {
      await fresh.close();
    }
  });

  it('accepts a body with a byte-order mark', async () => {
    handler = reply(200, `\ufeff${JSON.stringify(JOBS_OK)}`);
    expect((await client.searchJobs({})).kind).toBe('ok');
  });

  it('redacts the token echoed in a 200 body from raw and data', async () => {
    handler = reply(200, { ...JOBS_OK, message: `authorized as ${TOKEN}` });
    const result = await client.searchJobs({});
    if (result.kind !== 'ok') throw new Error('expected ok');
    expect(result.raw).not.toContain(TOKEN);
    expect(result.data.message).toBe('authorized as [REDACTED]');
  });
});

describe('404 is a result, not an error', () => {
  it('reads each operation\'s 404 body shape', async () => {
    handler = reply(404, { error: true, message: 'No similar companies found' });
    expect(await client.similarCompanies({ url: 'network.com/company/x' })).toMatchObject({
      kind: 'not_found',
      message: 'No similar companies found',
      raw: '{"error":true,"message":"No similar companies found"}',
      call: { operation: 'similar-companies', method: 'POST', status: 404 },
    });
    handler = reply(404, { message: 'No results found for the query' });
    expect(await client.searchJobs({ keywords: 'x' })).toMatchObject({ kind: 'not_found', message: 'No results found for the query' });
    handler = reply(404, { success: false, message: 'Post not found' });
    expect(await client.postDetails('https://p/1')).toMatchObject({ kind: 'not_found', message: 'Post not found' });
  });

  it('takes a post-details 404 whose body is any JSON object as not found', async () => {
    handler = reply(404, { detail: 'gone' });
    expect(await client.postDetails('https://p/1')).toMatchObject({ kind: 'not_found', message: null, raw: '{"detail":"gone"}' });
    handler = reply(404, '\ufeff{"message":"gone"}');
    expect(await client.postDetails('https://p/1')).toMatchObject({ kind: 'not_found', message: 'gone' });
  });

  it('stops the run on a post-details 404 that is not a JSON object: a web server\'s page for a wrong API URL', async () => {
    for (const body of ['<html><body><h1>404 Not Found</h1></body></html>', '', 'Not Found', '[]', 'null', '"Not Found"']) {
      handler = reply(404, body, { 'content-type': body.startsWith('<') ? 'text/html' : 'application/json' });
      const err = await failure(client.postDetails('https://p/1'));
      expect(err, body).toBeInstanceOf(UnexpectedResponseError);
      expect(errorAction(err)).toBe('stop-run');
      expect(err.message).toMatch(/^post-details: a 404 whose body is not the API's \(a JSON object\): check the API URL/);
    }
  });

  it('stops the run on a similar-companies or search-jobs 404 that is not the spec\'s (a wrong API URL)', async () => {
    handler = reply(404, '<html><body>Cannot POST /v1/api/similar-companies</body></html>', { 'content-type': 'text/html' });
    const err = await failure(client.similarCompanies({ url: 'network.com/company/x' }));
    expect(err).toBeInstanceOf(UnexpectedResponseError);
    expect(errorAction(err)).toBe('stop-run');
    expect(err.message).toMatch(/check the API URL/);
    handler = reply(404, '');
    expect(await failure(client.searchJobs({}))).toBeInstanceOf(UnexpectedResponseError);
  });

  it("stops the run on a gateway's {\"message\":\"Not Found\"} for similar-companies, whose own 404 carries error: true", async () => {
    for (const body of [{ message: 'Not Found' }, { error: 'true', message: 'No similar companies found' }]) {
      handler = reply(404, body);
      const err = await failure(client.similarCompanies({ url: 'network.com/company/x' }));
      expect(err).toBeInstanceOf(UnexpectedResponseError);
      expect(err.message).toMatch(/a 404 whose body is not the API's \(a JSON object with error: true and a message\)/);
    }
  });
});

describe('error statuses', () => {
  it('401 and 403 are AuthError (stop-run) and never show the echoed token', async () => {
    handler = reply(401, { message: `invalid token ${TOKEN}` }, { 'www-authenticate': 'Bearer' });
    const e401 = await failure(client.searchJobs({}));
    expect(e401).toBeInstanceOf(AuthError);
    expect(e401).toMatchObject({ code: 'AUTH', call: { status: 401, operation: 'search-jobs' } });
    expect(e401.bodyExcerpt).toBe('{"message":"invalid token [REDACTED]"}');
    expect(errorAction(e401)).toBe('stop-run');
    handler = reply(403, { message: 'Account suspended' });
    const e403 = await failure(client.postDetails('https://p/1'));
    expect(e403).toBeInstanceOf(AuthError);
    expect(e403.message).toMatch(/suspended/);
  });

  it('402 is CreditsExhaustedError (stop-run)', async () => {
    handler = reply(402, { message: 'Insufficient credits' });
    const err = await failure(client.similarCompanies({ url: 'network.com/company/x' }));
    expect(err).toBeInstanceOf(CreditsExhaustedError);
    expect(err.code).toBe('OUT_OF_CREDITS');
    expect(errorAction(err)).toBe('stop-run');
  });

  it('429 is ThrottledError with Retry-After in seconds, as an HTTP-date, or the 5 s default', async () => {
    handler = reply(429, { message: 'slow down' }, { 'retry-after': '7' });
    const secs = await failure(client.searchJobs({}));
    expect(secs).toBeInstanceOf(ThrottledError);
    expect((secs as ThrottledError).retryAfterMs).toBe(7000);
    expect(errorAction(secs)).toBe('throttle');

    handler = reply(429, '', { 'retry-after': new Date(Date.now() + 3000).toUTCString() });
    const dated = (await failure(client.searchJobs({}))) as ThrottledError;
    // An HTTP-date has whole seconds: the wait is between 2 and 3 seconds from now.
    expect(dated.retryAfterMs).toBeGreaterThan(1500);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(3000);

    handler = reply(429, '');
    expect(((await failure(client.searchJobs({}))) as ThrottledError).retryAfterMs).toBe(5000);
  });

  it('500 and 503 are ServerError (retry), even with a huge error page', async () => {
    handler = reply(500, { error: true, message: `Internal Server Error for ${TOKEN}` });
    const e500 = await failure(client.searchJobs({}));
    expect(e500).toBeInstanceOf(ServerError);
    expect(errorAction(e500)).toBe('retry');
    handler = reply(503, `<html>${'unavailable '.repeat(200_000)}</html>`, { 'content-type': 'text/html' });
    const e503 = await failure(client.searchJobs({}));
    expect(e503).toBeInstanceOf(ServerError);
    expect(e503.code).toBe('SERVER_ERROR');
    expect(e503.bodyExcerpt.startsWith('<html>unavailable unavailable')).toBe(true);
  });

  it('400 is RequestRejectedError (fail-item)', async () => {
    handler = reply(400, { error: true, message: 'Body field `url` is required' });
    const err = await failure(client.similarCompanies({ url: '' }));
    expect(err).toBeInstanceOf(RequestRejectedError);
    expect(err.code).toBe('HTTP_4XX');
    expect(errorAction(err)).toBe('fail-item');
    expect(err.bodyExcerpt).toContain('is required');
  });

  it('a redirect stops the run (the API URL is wrong)', async () => {
    handler = reply(301, '', { location: 'https://elsewhere.example/v1/api/search-jobs' });
    const err = await failure(client.searchJobs({}));
    expect(err).toBeInstanceOf(UnexpectedResponseError);
    expect(errorAction(err)).toBe('stop-run');
  });
});

describe('broken 200 bodies', () => {
  it('truncated JSON is InvalidJsonError (retry)', async () => {
    const full = JSON.stringify(JOBS_OK);
    handler = reply(200, full.slice(0, full.length / 2));
    const err = await failure(client.searchJobs({}));
    expect(err).toBeInstanceOf(InvalidJsonError);
    expect(err.code).toBe('INVALID_JSON');
    expect(errorAction(err)).toBe('retry');
  });

  it('an HTML page with status 200 is InvalidJsonError, with a one-line excerpt', async () => {
    handler = reply(200, `<!DOCTYPE html>\n<html>\n<body><h1>Bad gateway</h1><p>${TOKEN}</p></body></html>\n`, { 'content-type': 'text/html' });
    const err = await failure(client.postDetails('https://p/1'));
    expect(err).toBeInstanceOf(InvalidJsonError);
    expect(err.bodyExcerpt).toBe('<!DOCTYPE html> <html> <body><h1>Bad gateway</h1><p>[REDACTED]</p></body></html>');
  });

  it('an empty 200 is InvalidJsonError', async () => {
    handler = reply(200, '');
    expect((await failure(client.searchJobs({}))).message).toMatch(/empty body/);
  });

  it('members missing or of another type are drift, not an error: the answer is read, a job without url set aside', async () => {
    const body = { ...JOBS_OK, numResults: 2, results: [{ title: 'x', posted_timestamp: '1730592000' }, { url: 'https://www.network.com/jobs/view/1' }] };
    handler = reply(200, body);
    const result = await client.searchJobs({ keywords: 'x' });
    if (result.kind !== 'ok') throw new Error(`expected ok, got ${result.kind}`);
    expect(result.setAside).toHaveLength(1);
    expect(result.data.results).toEqual([null, expect.objectContaining({ url: 'https://www.network.com/jobs/view/1', title: null })]);
    expect(result.drift.counts()).toContainEqual({ path: 'results[].posted_timestamp', kind: 'variant', count: 1, of: 2, detail: 'string read as integer' });
  });

  it('a shape no contract can read is ApiSchemaError naming the JSON path (fail-item), with credits and raw kept', async () => {
    const body = { ...JOBS_OK, numResults: 1, results: { title: 'x' } };
    handler = reply(200, body);
    const err = await failure(client.searchJobs({ keywords: 'x' }));
    expect(err).toBeInstanceOf(ApiSchemaError);
    expect(err.message).toContain('results: expected an array of records, received object');
    expect((err as ApiSchemaError).issues.map((i) => i.path)).toEqual(['results']);
    expect((err as ApiSchemaError).credits).toEqual({ total_credits: 100, credits_used: 0.25, credits_remaining: 99.75 });
    expect((err as ApiSchemaError).raw).toBe(JSON.stringify(body));
    expect(err.call).toMatchObject({ status: 200, path: '/v1/api/search-jobs?keywords=x' });
    expect(errorAction(err)).toBe('fail-item');
  });
});

describe('size limit', () => {
  it('refuses a body over maxBodyBytes announced by content-length, closing the stream', async () => {
    // None kept: a body announced over the kept bound is refused unread (the bound is the limit here).
    const small = createTypedClient({ baseUrl, token: TOKEN, maxBodyBytes: 1024, maxKeptBodyBytes: 1024 });
    let closedEarly: Promise<boolean> = Promise.resolve(false);
    handler = (_req, res) => {
      closedEarly = new Promise((resolve) => res.on('close', () => resolve(!res.writableFinished)));
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(4 * 1024 * 1024) });
      res.write(`{"padding":"${'x'.repeat(64 * 1024)}`);
    };
    try {
      const err = await failure(small.searchJobs({}));
      expect(err).toBeInstanceOf(ResponseTooLargeError);
      expect(err).toMatchObject({ code: 'BODY_TOO_LARGE', limitBytes: 1024, call: { status: 200 } });
      expect(errorAction(err)).toBe('fail-item');
      expect(await closedEarly).toBe(true);
    } finally {
      await small.close();
    }
  });

  it('stops reading a chunked body once it passes the limit', async () => {
    const small = createTypedClient({ baseUrl, token: TOKEN, maxBodyBytes: 100_000 });
    let written = 0;
    let closed!: Promise<void>;
    handler = (_req, res) => {
      closed = new Promise((resolve) => res.on('close', () => resolve()));
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = `${'y'.repeat(16 * 1024)}`;
      const pump = (): void => {
        while (!res.destroyed && written < 50 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end();
      };
      res.write('{"padding":"');
      pump();
    };
    try {
      const err = await failure(small.postDetails('https://p/1'));
      expect(err).toBeInstanceOf(ResponseTooLargeError);
      await closed;
      expect(written).toBeLessThan(50 * 1024 * 1024);
    } finally {
      await small.close();
    }
  });
});

describe('a paid body over the limit, kept', () => {
  it('is read whole, redacted as a stored body, when within maxKeptBodyBytes; cut and not carried past it; never for a 404', async () => {
    const small = createTypedClient({ baseUrl, token: TOKEN, maxBodyBytes: 1024, maxKeptBodyBytes: 64 * 1024 });
    const within = `{"padding":"${'x'.repeat(32 * 1024)}","echo":"${TOKEN}"}`;
    let status = 200;
    let body = within;
    handler = (_req, res) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body);
    };
    try {
      const kept = (await failure(small.searchJobs({}))) as ResponseTooLargeError;
      expect(kept).toBeInstanceOf(ResponseTooLargeError);
      expect(kept.raw).toBe(within.replace(TOKEN, '[REDACTED]'));
      // Not enumerable: logging the error does not dump the body.
      expect(Object.keys(kept)).not.toContain('raw');
      expect(kept.bodyExcerpt.length).toBeLessThanOrEqual(300);

      body = `{"padding":"${'x'.repeat(128 * 1024)}"}`;
      expect(((await failure(small.searchJobs({}))) as ResponseTooLargeError).raw).toBeNull();
      status = 404;
      body = within;
      expect(((await failure(small.searchJobs({}))) as ResponseTooLargeError).raw).toBeNull();
    } finally {
      await small.close();
    }
  });
});

describe('caller bugs', () => {
  it('a request that cannot be built rejects (not throws) with a plain error the runner treats as stop-run', async () => {
    const pending = client.searchJobs({ start: Number.POSITIVE_INFINITY });
    await expect(pending).rejects.toBeInstanceOf(TypeError);
    expect(errorAction(await pending.catch((e: unknown) => e))).toBe('stop-run');
    expect(seen).toHaveLength(0);
  });
});

describe('transport failures', () => {
  it('a connection dropped before any answer is NetworkError (retry) with no status', async () => {
    handler = (req) => req.socket.destroy();
    const err = await failure(client.similarCompanies({ url: 'network.com/company/x' }));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err).toMatchObject({ code: 'NETWORK', call: { status: null, operation: 'similar-companies' } });
    expect(errorAction(err)).toBe('retry');
  });

  it('a connection dropped in the middle of the body is NetworkError', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '5000' });
      res.write('{"success":true,');
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const err = await failure(client.searchJobs({}));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.call.status).toBe(200);
  });

  it('a refused connection is NetworkError', async () => {
    // Port 1: nothing listens, and no other test's server can be given it, as a just-closed port can.
    const dead = createTypedClient({ baseUrl: 'http://127.0.0.1:1', token: TOKEN });
    try {
      const err = await failure(dead.searchJobs({}));
      expect(err).toBeInstanceOf(NetworkError);
      expect(err.message).toContain('ECONNREFUSED');
    } finally {
      await dead.close();
    }
  });

  it('an https:// URL to a port that speaks plain http is TlsError (stop-run): one line naming the cause and the URL to check', async () => {
    const wrong = createTypedClient({ baseUrl: baseUrl.replace('http://', 'https://'), token: TOKEN });
    try {
      const err = await failure(wrong.postDetails('https://network.com/posts/x-activity-7100000000000000001'));
      expect(err).toBeInstanceOf(TlsError);
      expect(err.code).toBe('TLS');
      expect(errorAction(err)).toBe('stop-run');
      expect(err.call.status).toBeNull();
      expect(err.message).toMatch(/^post-details: secure \(TLS\) connection to the API failed \(ERR_SSL_WRONG_VERSION_NUMBER: wrong version number\)/);
      expect(err.message).toMatch(/check the API URL/);
      // OpenSSL's own text (addresses, source paths, a trailing newline) stays out of the message.
      expect(err.message).not.toMatch(/[\r\n]|openssl|ssl3_record/);
    } finally {
      await wrong.close();
    }
  });

  it('no headers within timeoutMs is TimeoutError (retry)', async () => {
    const quick = createTypedClient({ baseUrl, token: TOKEN, timeoutMs: 300 });
    handler = (_req, res) => cleanups.push(() => res.destroy());
    const started = Date.now();
    try {
      const err = await failure(quick.searchJobs({}));
      expect(err).toBeInstanceOf(TimeoutError);
      expect(err).toMatchObject({ code: 'TIMEOUT', call: { status: null } });
      expect(errorAction(err)).toBe('retry');
      expect(Date.now() - started).toBeLessThan(2500);
    } finally {
      await quick.close();
    }
  });

  it('a body still trickling in when timeoutMs is up is TimeoutError', async () => {
    const quick = createTypedClient({ baseUrl, token: TOKEN, timeoutMs: 400 });
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"success":true');
      // A chunk every 100 ms: no gap is long enough for an idle timer, only the total deadline catches it.
      const timer = setInterval(() => res.write(' '), 100);
      res.on('close', () => clearInterval(timer));
      cleanups.push(() => {
        clearInterval(timer);
        res.destroy();
      });
    };
    const started = Date.now();
    try {
      const err = await failure(quick.searchJobs({}));
      expect(err).toBeInstanceOf(TimeoutError);
      expect(err.call.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await quick.close();
    }
  });
});
