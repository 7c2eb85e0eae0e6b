// The client against the real sandbox (src/sandbox): each operation's request as the sandbox logged it, each
// 200 body validated, each 404, and the sandbox's auth, credit and rate-limit answers mapped to the right errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTypedClient, type TypedClient } from '../support/typed-client.ts';
import {
  ApiSchemaError,
  AuthError,
  CreditsExhaustedError,
  InvalidJsonError,
  NetworkError,
  ResponseTooLargeError,
  ServerError,
  ThrottledError,
  UnexpectedResponseError,
} from '../../src/api/errors.ts';
import { errorAction } from './error-verb.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';

const TOKEN = 'contract-token-7d41c0';
let sandbox: Sandbox;
let client: TypedClient;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, seed: 7, tokens: { [TOKEN]: 1000, 'poor-token-0000': 0 }, suspendedTokens: ['suspended-0000'], notFoundRate: 0,
    costs: { 'similar-companies': 1, 'post-details': 1, 'search-jobs': 0.25 } });
  client = createTypedClient({ baseUrl: sandbox.url, token: TOKEN });
});

afterAll(async () => {
  await client.close();
  await sandbox.stop();
});

const lastRequest = () => {
  const entry = sandbox.requests.at(-1);
  if (!entry) throw new Error('the sandbox logged no request');
  return entry;
};

describe('similar-companies', () => {
  it('POSTs the JSON body with bearer, Accept and Content-Type, and gets a validated page with credits', async () => {
    const request = {
      url: 'www.network.com/company/acme-robotics',
      account: { location: ['germany', 'france'], employeeSize: { type: 'RANGE', range: [{ start: 11, end: 50 }] } },
      page: 1,
      num: 2,
    };
    const result = await client.similarCompanies(request);
    const seen = lastRequest();
    expect(seen).toMatchObject({ method: 'POST', path: '/v1/api/similar-companies', rawQuery: '', body: request, status: 200 });
    expect(seen.headers).toMatchObject({
      authorization: `Bearer ${TOKEN}`,
      accept: 'application/json',
      'content-type': 'application/json',
    });
    if (result.kind !== 'ok') throw new Error(`expected ok, got ${result.kind}`);
    expect(result.data.success).toBe(true);
    expect(result.data.data!.content!.length).toBeGreaterThan(0);
    expect(result.data.data!.content!.length).toBeLessThanOrEqual(2);
    expect(result.data).toMatchObject({ page: 1, num: 2 });
    expect(JSON.parse(result.raw)).toEqual(result.data);
    expect(result.credits).toEqual(sandbox.credits(TOKEN));
    expect(result.call).toMatchObject({ operation: 'similar-companies', method: 'POST', path: '/v1/api/similar-companies', status: 200 });
  });

  it('answers not_found for a company without data, uncharged', async () => {
    const before = sandbox.credits(TOKEN);
    const result = await client.similarCompanies({ url: 'www.network.com/company/notfound-inc', page: 1, num: 2 });
    expect(result).toMatchObject({ kind: 'not_found', call: { status: 404 } });
    expect(result.kind === 'not_found' && result.message).toMatch(/no similar companies/i);
    expect(sandbox.credits(TOKEN)).toEqual(before);
  });

  it("stops the run on the sandbox's own 404 for an unknown path (a wrong API URL), not taking it as no data", async () => {
    const misrouted = createTypedClient({ baseUrl: `${sandbox.url}/proxy`, token: TOKEN });
    try {
      const err = await misrouted.similarCompanies({ url: 'www.network.com/company/acme-robotics' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnexpectedResponseError);
      expect(errorAction(err)).toBe('stop-run');
      expect(lastRequest()).toMatchObject({ path: '/proxy/v1/api/similar-companies', status: 404 });
    } finally {
      await misrouted.close();
    }
  });
});

describe('post-details', () => {
  const url = 'https://www.network.com/posts/jane-doe_launch-day-activity-7212345678901234567-AbCd?utm_source=share&lang=dé';

  it('GETs with the post URL percent-encoded in `url`, no body, and validates the post', async () => {
    const result = await client.postDetails(url);
    const seen = lastRequest();
    expect(seen).toMatchObject({ method: 'GET', path: '/v1/api/post-details', rawQuery: `url=${encodeURIComponent(url)}`, body: null });
    expect(seen.query).toEqual({ url });
    expect(seen.headers).toMatchObject({ authorization: `Bearer ${TOKEN}`, accept: 'application/json' });
    if (result.kind !== 'ok') throw new Error(`expected ok, got ${result.kind}`);
    expect(result.data.PostId).toMatch(/^activity-\d+$/);
    expect(typeof result.data.engagement!.reactions).toBe('number');
    expect(result.credits).toEqual(sandbox.credits(TOKEN));
    expect(result.call.path).toBe(`/v1/api/post-details?url=${encodeURIComponent(url)}`);
  });

  it('answers not_found for a post without data, with a JSON object the client takes as the API\'s', async () => {
    const result = await client.postDetails('https://www.network.com/posts/notfound_activity-1');
    expect(result).toMatchObject({ kind: 'not_found', call: { operation: 'post-details', status: 404 } });
    expect(JSON.parse(result.raw)).toMatchObject({ message: expect.any(String) });
  });
});

describe('search-jobs', () => {
  it('sends every parameter as the spec says and validates the jobs with fractional credits', async () => {
    const result = await client.searchJobs({
      start: 0,
      timePosted: 'past_week',
      keywords: 'data engineer',
      experienceLevels: ['entry level', 'associate'],
      jobTypes: ['full time', 'part time'],
      workplaceTypes: ['on site', 'remote', 'hybrid'],
      location: 'germany',
    });
    const seen = lastRequest();
    expect(seen.method).toBe('GET');
    expect(seen.path).toBe('/v1/api/search-jobs');
    expect(seen.rawQuery).toBe(
      'start=0&timePosted=past_week&keywords=data%20engineer&experienceLevels=entry%20level,associate' +
        '&jobTypes=full%20time,part%20time&workplaceTypes=on%20site,remote,hybrid&location=germany',
    );
    expect(seen.query).toMatchObject({ keywords: 'data engineer', jobTypes: 'full time,part time' });
    expect(seen.headers.authorization).toBe(`Bearer ${TOKEN}`);
    if (result.kind !== 'ok') throw new Error(`expected ok, got ${result.kind}`);
    expect(result.data.numResults).toBe(result.data.results!.length);
    expect(result.credits).toEqual(sandbox.credits(TOKEN));
    expect(Number.isInteger(result.credits!.credits_used)).toBe(false);
  });

  it('leaves out empty parameters and answers not_found for a query without results', async () => {
    const result = await client.searchJobs({ keywords: 'notfound', experienceLevels: [], location: '', companyIds: ['1441'] });
    expect(lastRequest().rawQuery).toBe('keywords=notfound&companyIds=1441');
    expect(result).toMatchObject({ kind: 'not_found', call: { status: 404 } });
    expect(result.kind === 'not_found' && result.message).toMatch(/no results/i);
  });
});

describe('the sandbox\'s refusals map to the right errors', () => {
  it('an unknown token is AuthError, a suspended one too, and neither token leaks', async () => {
    for (const token of ['wrong-token-1234', 'suspended-0000']) {
      const other = createTypedClient({ baseUrl: sandbox.url, token });
      try {
        await expect(other.postDetails('https://www.network.com/posts/x_activity-1')).rejects.toSatisfy((err: unknown) => {
          return err instanceof AuthError && errorAction(err) === 'stop-run' && !JSON.stringify(err).includes(token) && !err.message.includes(token);
        });
      } finally {
        await other.close();
      }
    }
  });

  it('a balance that cannot pay is CreditsExhaustedError', async () => {
    const poor = createTypedClient({ baseUrl: sandbox.url, token: 'poor-token-0000' });
    try {
      await expect(poor.searchJobs({ keywords: 'engineer' })).rejects.toBeInstanceOf(CreditsExhaustedError);
    } finally {
      await poor.close();
    }
  });

  it('a rate limit is ThrottledError carrying the sandbox\'s Retry-After', async () => {
    const limited = await startSandbox({ port: 0, seed: 7, tokens: { [TOKEN]: 1000 }, rateLimitPerSecond: 1, retryAfterSeconds: 2, notFoundRate: 0 });
    const c = createTypedClient({ baseUrl: limited.url, token: TOKEN });
    try {
      const outcomes = await Promise.allSettled([c.searchJobs({ keywords: 'a' }), c.searchJobs({ keywords: 'b' }), c.searchJobs({ keywords: 'c' })]);
      const throttled = outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason);
      expect(throttled.length).toBeGreaterThan(0);
      for (const err of throttled) {
        expect(err).toBeInstanceOf(ThrottledError);
        expect((err as ThrottledError).retryAfterMs).toBe(2000);
      }
    } finally {
      await c.close();
      await limited.stop();
    }
  });
});

describe('the sandbox\'s injected faults map to the right errors', () => {
  const cases = [
    ['serverErrorRate', ServerError, 'retry'],
    ['unavailableRate', ServerError, 'retry'],
    ['dropRate', NetworkError, 'retry'],
    ['truncateRate', InvalidJsonError, 'retry'],
    ['htmlRate', InvalidJsonError, 'retry'],
    ['wrongShapeRate', ApiSchemaError, 'fail-item'],
    ['hugeRate', ResponseTooLargeError, 'fail-item'],
  ] as const;
  for (const [rate, cls, action] of cases) {
    it(`${rate} = 1 gives ${cls.name} (${action})`, async () => {
      const faulty = await startSandbox({ port: 0, seed: 7, tokens: { [TOKEN]: 1000 }, notFoundRate: 0, [rate]: 1, hugeBytes: 9 * 1024 * 1024 });
      const c = createTypedClient({ baseUrl: faulty.url, token: TOKEN });
      try {
        const err: unknown = await c.searchJobs({ keywords: 'engineer' }).then(
          () => null,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(cls);
        expect(errorAction(err)).toBe(action);
      } finally {
        await c.close();
        await faulty.stop();
      }
    });
  }
});
