// client.call(spec, request): how a call is sent and how its answers are read come from the operation's spec
// alone, against a scripted node:http server on 127.0.0.1. The spec here is a made-up one built over search-jobs'
// contract, standing for a fourth operation: the client must send it as it says, not as any operation it knows.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/api/client.ts';
import type { ApiClient } from '../../src/api/types.ts';
import { UnexpectedResponseError } from '../../src/api/errors.ts';
import { searchJobs } from '../../src/operations/search-jobs.ts';
import { readStored, specOf } from '../../src/operations/index.ts';
import { OPERATIONS } from '../../src/spec/types.ts';
import { EMPTY_JOBS_PAGE } from './api-fixtures.ts';

const TOKEN = 'sk_test_call_spec_0123456789';

interface Seen {
  method: string;
  url: string;
  contentType: string | undefined;
  body: string;
}

let answer: { status: number; body: string } = { status: 200, body: JSON.stringify(EMPTY_JOBS_PAGE) };
const seen: Seen[] = [];
let server: Server;
let client: ApiClient;

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', contentType: req.headers['content-type'], body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = createApiClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/prefix`, token: TOKEN });
});

afterAll(async () => {
  await client?.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** A fourth operation as far as the client can tell: its own path, body and 404 rule, and a POST's method (by its name). */
const fourth = {
  ...searchJobs,
  name: 'similar-companies' as const,
  send: (request: { keywords?: string }) => ({ path: `/v9/api/fourth?k=${request.keywords ?? ''}`, body: JSON.stringify({ asked: request.keywords }), json: true }),
  notFound: { isAnswer: (body: Readonly<Record<string, unknown>> | null) => body?.['gone'] === true, shape: 'a JSON object with gone: true', ambiguous: false },
  lastPage: () => false,
};

describe('client.call(spec, request)', () => {
  it('sends the method of its operation (OPERATION_METHODS), the path, body and content type the spec gives, and reads the 200 through its contract', async () => {
    answer = { status: 200, body: JSON.stringify(EMPTY_JOBS_PAGE) };
    seen.length = 0;
    const result = await client.call(fourth, { keywords: 'x' });
    expect(seen).toEqual([{ method: 'POST', url: '/prefix/v9/api/fourth?k=x', contentType: 'application/json', body: '{"asked":"x"}' }]);
    expect(result.kind).toBe('ok');
    // lastPage is the spec's: this one never ends the list, where search-jobs' own rule would (an empty page).
    if (result.kind === 'ok') expect(result.lastPage).toBe(false);
    expect((await client.call(searchJobs, {})).kind === 'ok' && seen.at(-1)).toMatchObject({ method: 'GET', url: '/prefix/v1/api/search-jobs', body: '' });
  });

  it("takes a 404 as nothing found only when the spec's rule accepts its body", async () => {
    answer = { status: 404, body: '{"gone":true}' };
    expect(await client.call(fourth, {})).toMatchObject({ kind: 'not_found', message: null });
    // The same body is not search-jobs' "nothing found" (it has no message): a gateway's page, the run stops.
    await expect(client.call(searchJobs, {})).rejects.toBeInstanceOf(UnexpectedResponseError);
    answer = { status: 404, body: '{"message":"No jobs"}' };
    await expect(client.call(fourth, {})).rejects.toThrow(/a JSON object with gone: true/);
    expect(await client.call(searchJobs, {})).toMatchObject({ kind: 'not_found', message: 'No jobs' });
  });
});

describe("a task's request is read back once, through its operation's schema", () => {
  it('keeps the stored members in their stored order (the text sent and archived must not change)', () => {
    const text = '{"location":"germany","keywords":"a","start":10}';
    const request = readStored(specOf('search-jobs').request, text, 'request_json');
    expect(JSON.stringify(request)).toBe(text);
  });

  it('refuses a stored request that is not one of its operation', () => {
    for (const op of OPERATIONS) expect(() => readStored(specOf(op).request, '{"url":12,"start":"x"}', 'request_json')).toThrow(/not a request of this operation/);
    expect(() => readStored(specOf('post-details').request, 'not json', 'request_json')).toThrow(SyntaxError);
  });
});
