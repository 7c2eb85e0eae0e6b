// Answers a well-behaved API would not send but a proxy, CDN or broken server in front of it might: oversized
// headers (from a raw node:net server, since node:http refuses to write them) and compressed bodies (from a
// node:http server that ignores Accept-Encoding: identity), with the real undici client.
import { maxHeaderSize, createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { brotliCompressSync, createGzip, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTypedClient, type TypedClient } from '../support/typed-client.ts';
import {
  AuthError,
  NetworkError,
  outageSymptom,
  ResponseTooLargeError,
  ServerError,
  ThrottledError,
  UnsupportedEncodingError,
} from '../../src/api/errors.ts';
import { errorAction } from './error-verb.ts';
import { policyOf } from '../../src/runner/error-policy.ts';
import { EMPTY_JOBS_PAGE } from './api-fixtures.ts';

const TOKEN = 'sk_test_transport_91c3e0aa';
const JOBS_OK = JSON.stringify(EMPTY_JOBS_PAGE);

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.end();
let lastHeaders: IncomingMessage['headers'] = {};
let server: Server;
let client: TypedClient;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    lastHeaders = req.headers;
    req.resume();
    req.on('end', () => handler(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  client = createTypedClient({ baseUrl, token: TOKEN, timeoutMs: 5000 });
});

afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const compressed =
  (status: number, encoding: string, body: Buffer): Handler =>
  (_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-encoding': encoding, 'content-length': body.length });
    res.end(body);
  };

describe('oversized response headers', () => {
  it('are a NetworkError (retry, counted as an outage symptom) naming the cause, not a bug that stops the run', async () => {
    const raw = createNetServer((socket) => {
      socket.on('error', () => undefined);
      socket.once('data', () => {
        socket.write(
          `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nset-cookie: ${'a'.repeat(maxHeaderSize + 1024)}\r\n` +
            `content-length: ${Buffer.byteLength(JOBS_OK)}\r\n\r\n${JOBS_OK}`,
        );
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve));
    const overflowing = createTypedClient({ baseUrl: `http://127.0.0.1:${(raw.address() as AddressInfo).port}`, token: TOKEN });
    try {
      const err = await overflowing.searchJobs({}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NetworkError);
      expect(errorAction(err)).toBe('retry');
      expect((err as NetworkError).message).toMatch(
        new RegExp(`^search-jobs: the response headers are larger than the ${maxHeaderSize} bytes accepted \\(UND_ERR_HEADERS_OVERFLOW\\)`),
      );
      expect(policyOf(err).outage).toBe(true);
      expect(outageSymptom(err)).toMatch(/headers are larger/);
    } finally {
      await overflowing.close();
      await new Promise((resolve) => raw.close(resolve));
    }
  });
});

describe('the charset a Content-Type declares', () => {
  /** A search-jobs page whose message is `message`, as `bytes` would write it: Latin-1 for one byte per character. */
  const page = (message: string, bytes: (json: string) => Buffer = (json) => Buffer.from(json, 'latin1')) =>
    bytes(JSON.stringify({ ...EMPTY_JOBS_PAGE, message }));
  const typed =
    (contentType: string, body: Buffer, status = 200): Handler =>
    (_req, res) =>
      res.writeHead(status, { 'content-type': contentType }).end(body);

  it('reads a body in any charset the WHATWG Encoding standard names, compressed or not', async () => {
    const cases: Array<[string, Buffer, string]> = [
      ['application/json; charset=ISO-8859-1', page('Grüße'), 'Grüße'],
      ['application/json; charset=windows-1251', page('\u00cc\u00ee\u00f1\u00ea\u00e2\u00e0'), 'Москва'],
      ['application/json; charset=iso-8859-2', page('\u00a3\u00f3d\u00bc'), 'Łódź'],
      // 0x80-0x9F: windows-1252's, for every Latin-1 label (Node's own decoder reads them as C1 controls).
      ['application/json; charset=us-ascii', page(String.fromCharCode(...Array.from({ length: 32 }, (_, i) => 0x80 + i))), '€\x81‚ƒ„…†‡ˆ‰Š‹Œ\x8dŽ\x8f\x90‘’“”•–—˜™š›œ\x9džŸ'],
    ];
    for (const [contentType, body, message] of cases) {
      handler = typed(contentType, body);
      expect(await client.searchJobs({}), contentType).toMatchObject({ kind: 'ok', data: { message } });
      handler = (_req, res) => res.writeHead(200, { 'content-type': contentType, 'content-encoding': 'gzip' }).end(gzipSync(body));
      expect(await client.searchJobs({}), `${contentType}, gzip`).toMatchObject({ kind: 'ok', data: { message } });
    }
  });

  it("reads a 404's message in its charset", async () => {
    handler = typed('application/json; charset=latin1', Buffer.from(JSON.stringify({ error: true, message: 'Keine ähnlichen Firmen' }), 'latin1'), 404);
    expect(await client.similarCompanies({ url: 'network.com/company/x' })).toMatchObject({ kind: 'not_found', message: 'Keine ähnlichen Firmen' });
  });

  it('reads UTF-8 as UTF-8 under an unknown label or a Latin-1 label its bytes do not fit', async () => {
    const utf8 = (json: string) => Buffer.from(json, 'utf8');
    for (const contentType of ['application/json; charset=x-unknown', 'application/json; charset=iso-8859-1', 'application/json; charset=utf-8', 'text/plain']) {
      handler = typed(contentType, page('Grüße 🚀', utf8));
      expect(await client.searchJobs({}), contentType).toMatchObject({ kind: 'ok', data: { message: 'Grüße 🚀' } });
    }
  });
});

describe('compressed bodies', () => {
  it('asks for none', async () => {
    handler = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JOBS_OK);
    await client.searchJobs({});
    expect(lastHeaders['accept-encoding']).toBe('identity');
    await client.postDetails('https://p/1').catch(() => undefined);
    expect(lastHeaders['accept-encoding']).toBe('identity');
  });

  it('decodes gzip, x-gzip, deflate (zlib and raw), br and a list of codings sent anyway', async () => {
    const json = Buffer.from(JOBS_OK);
    const cases: Array<[string, Buffer]> = [
      ['gzip', gzipSync(json)],
      ['X-Gzip', gzipSync(json)],
      ['deflate', deflateSync(json)],
      ['deflate', deflateRawSync(json)],
      ['br', brotliCompressSync(json)],
      ['deflate, identity, gzip', gzipSync(deflateSync(json))],
    ];
    for (const [encoding, body] of cases) {
      handler = compressed(200, encoding, body);
      const result = await client.searchJobs({});
      expect(result, encoding).toMatchObject({ kind: 'ok', raw: JOBS_OK, credits: { credits_used: 0.25 } });
    }
  });

  it('decodes a compressed 404', async () => {
    handler = compressed(404, 'gzip', gzipSync(JSON.stringify({ error: true, message: 'No similar companies found' })));
    expect(await client.similarCompanies({ url: 'network.com/company/x' })).toMatchObject({
      kind: 'not_found',
      message: 'No similar companies found',
    });
  });

  it('counts decompressed bytes against maxBodyBytes: a small body that expands to 8 MiB stops at the limit', async () => {
    const bomb = gzipSync(Buffer.concat([Buffer.from('{"padding":"'), Buffer.alloc(8 * 1024 * 1024, 'x')]));
    // Eight times the limit decompressed, a small fraction of it sent (64 MiB cost seconds of gzip to build).
    expect(bomb.length).toBeLessThan(64 * 1024);
    const small = createTypedClient({ baseUrl, token: TOKEN, maxBodyBytes: 1024 * 1024 });
    handler = compressed(200, 'gzip', bomb);
    try {
      const err = await small.searchJobs({}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ResponseTooLargeError);
      expect(errorAction(err)).toBe('fail-item');
      expect((err as ResponseTooLargeError).bodyExcerpt).toMatch(/^\{"padding":"xxxx/);
    } finally {
      await small.close();
    }
  });

  it('stops an endless compressed stream at the limit and closes the connection', async () => {
    // 4 MiB decompressed is a few KiB sent; as many compressed bytes would take gigabytes of input (and of memory),
    // past timeoutMs. 10 s, not less: this process gzips the stream too, and at load 10-12 that took over 3 s.
    const small = createTypedClient({ baseUrl, token: TOKEN, maxBodyBytes: 4 * 1024 * 1024, timeoutMs: 10_000 });
    let closed!: Promise<void>;
    handler = (_req, res) => {
      closed = new Promise((resolve) => res.on('close', () => resolve()));
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      const endless = new Readable({ read: () => void endless.push(Buffer.alloc(64 * 1024, ' ')) });
      const gzip = createGzip();
      endless.pipe(gzip).pipe(res);
      res.on('close', () => {
        endless.destroy();
        gzip.destroy();
      });
    };
    try {
      expect(await small.searchJobs({}).catch((e: unknown) => e)).toBeInstanceOf(ResponseTooLargeError);
      await closed;
    } finally {
      await small.close();
    }
  });

  it('a body that does not decode is a NetworkError (retry) naming the coding', async () => {
    const cut = gzipSync(Buffer.from(JOBS_OK));
    for (const body of [Buffer.from('{"not":"gzip"}'), cut.subarray(0, cut.length - 12)]) {
      handler = compressed(200, 'gzip', body);
      const err = await client.searchJobs({}).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NetworkError);
      expect(errorAction(err)).toBe('retry');
      expect((err as NetworkError).message).toMatch(/^search-jobs: the compressed response body does not decode \(gzip: /);
    }
  });

  it('a body that does not decode on another status keeps the status error: a 401 still stops the run, a 429 throttles', async () => {
    const garbage = Buffer.from('{"message":"not gzip at all"}');
    handler = compressed(401, 'gzip', garbage);
    const auth = await client.searchJobs({}).catch((e: unknown) => e);
    expect(auth).toBeInstanceOf(AuthError);
    expect(errorAction(auth)).toBe('stop-run');
    expect((auth as AuthError).bodyExcerpt).toBe('(a gzip body that does not decode)');
    handler = (_req, res) => {
      res.writeHead(429, { 'content-encoding': 'gzip', 'content-length': garbage.length, 'retry-after': '7' });
      res.end(garbage);
    };
    const throttled = await client.searchJobs({}).catch((e: unknown) => e);
    expect(throttled).toBeInstanceOf(ThrottledError);
    expect((throttled as ThrottledError).retryAfterMs).toBe(7000);
  });

  it('an unknown coding on a 200 stops the run: every answer would come so, each one paid for', async () => {
    handler = compressed(200, 'zstd', Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0]));
    const err = await client.postDetails('https://p/1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedEncodingError);
    expect(err).toMatchObject({ code: 'UNSUPPORTED_ENCODING', encoding: 'zstd', call: { status: 200 } });
    expect(errorAction(err)).toBe('stop-run');
    expect((err as UnsupportedEncodingError).message).toMatch(/compressed as 'zstd', which netingest cannot decode.*proxy/);
  });

  it('an unknown coding on a 5xx keeps the status error, with no unreadable excerpt', async () => {
    handler = compressed(503, 'compress', Buffer.from([0x1f, 0x9d, 0x90, 0x7b]));
    const err = await client.searchJobs({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect((err as ServerError).bodyExcerpt).toBe("(a body compressed as 'compress')");
  });
});
