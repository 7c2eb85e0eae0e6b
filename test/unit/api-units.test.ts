// Pure parts of the API client: request encoding, Retry-After, the errors' facts and the policy they map to, redaction.
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  ApiSchemaError,
  AuthError,
  CreditsExhaustedError,
  errorForStatus,
  InvalidJsonError,
  NetworkError,
  parseRetryAfterMs,
  RequestRejectedError,
  ResponseTooLargeError,
  ServerError,
  ThrottledError,
  TimeoutError,
  UnexpectedResponseError,
  UnsupportedEncodingError,
  type ApiErrorContext,
} from '../../src/api/errors.ts';
import { errorAction } from './error-verb.ts';
import { bodyExcerpt, createOutputRedactor, createRedactor, redact, REDACTED } from '../../src/api/redact.ts';
import { postDetailsPath, searchJobsPath, similarCompaniesBody } from '../support/typed-client.ts';
import type { ApiCallInfo } from '../../src/api/types.ts';
import { NetingestError } from '../../src/errors.ts';
import { createLogger } from '../../src/runner/logger.ts';

const call = (status: number | null): ApiCallInfo => ({
  operation: 'search-jobs',
  method: 'GET',
  path: '/v1/api/search-jobs?keywords=x',
  status,
  latencyMs: 1.5,
});
const ctx = (status: number | null, bodyExcerpt = ''): ApiErrorContext => ({ call: call(status), bodyExcerpt });

describe('request encoding', () => {
  it('percent-encodes the whole post URL into the url parameter', () => {
    const url = 'https://www.network.com/posts/jane_activity-7123-abc?utm_source=a&x=1#frag ü';
    expect(postDetailsPath(url)).toBe(
      '/v1/api/post-details?url=https%3A%2F%2Fwww.network.com%2Fposts%2Fjane_activity-7123-abc%3Futm_source%3Da%26x%3D1%23frag%20%C3%BC',
    );
  });

  it('sends search-jobs parameters in spec order, spaces as %20, lists comma-joined', () => {
    const path = searchJobsPath({
      location: 'new york',
      workplaceTypes: ['on site', 'remote'],
      jobTypes: ['full time', 'part time'],
      companyIds: ['1441', '2002'],
      experienceLevels: ['internship', 'associate'],
      keywords: 'data engineer & ml',
      timePosted: 'past_24hrs',
      start: 10,
    });
    expect(path).toBe(
      '/v1/api/search-jobs?start=10&timePosted=past_24hrs&keywords=data%20engineer%20%26%20ml' +
        '&experienceLevels=internship,associate&companyIds=1441,2002&jobTypes=full%20time,part%20time' +
        '&workplaceTypes=on%20site,remote&location=new%20york',
    );
  });

  it('omits absent, empty-string and empty-list parameters but keeps start=0', () => {
    expect(searchJobsPath({ start: 0, keywords: '', experienceLevels: [], jobTypes: ['', 'contract'], location: undefined })).toBe(
      '/v1/api/search-jobs?start=0&jobTypes=contract',
    );
    expect(searchJobsPath({})).toBe('/v1/api/search-jobs');
  });

  it('encodes a comma inside a list item so it cannot split the item', () => {
    expect(searchJobsPath({ experienceLevels: ['a,b'] })).toBe('/v1/api/search-jobs?experienceLevels=a%2Cb');
  });

  it('refuses a non-finite start and a list parameter that is not an array (caller bugs)', () => {
    expect(() => searchJobsPath({ start: Number.NaN })).toThrow(TypeError);
    expect(() => searchJobsPath({ jobTypes: 'remote' as unknown as string[] })).toThrow(/jobTypes/);
  });

  it('serializes the similar-companies body as JSON, dropping undefined members', () => {
    expect(JSON.parse(similarCompaniesBody({ url: 'network.com/company/acme', account: {}, page: 1, num: undefined }))).toEqual({
      url: 'network.com/company/acme',
      account: {},
      page: 1,
    });
  });
});

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it('reads delta seconds', () => {
    expect(parseRetryAfterMs('120', now)).toBe(120_000);
    expect(parseRetryAfterMs(' 0 ', now)).toBe(0);
    expect(parseRetryAfterMs('1.5', now)).toBe(1500);
    expect(parseRetryAfterMs(['3', '9'], now)).toBe(3000);
  });
  it('reads an HTTP-date relative to now, past dates as 0', () => {
    expect(parseRetryAfterMs('Wed, 01 Jan 2025 00:00:42 GMT', now)).toBe(42_000);
    expect(parseRetryAfterMs('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0);
  });
  it('clamps negative seconds to 0 and defaults to 5000 ms when absent or unparseable', () => {
    expect(parseRetryAfterMs('-5', now)).toBe(0);
    expect(parseRetryAfterMs(undefined, now)).toBe(5000);
    expect(parseRetryAfterMs('', now)).toBe(5000);
    expect(parseRetryAfterMs('soon', now)).toBe(5000);
  });
  it('takes another fallback for a missing or unparseable value only (a client\'s retryAfterFallbackMs)', () => {
    expect(parseRetryAfterMs('soon', now, 200)).toBe(200);
    expect(parseRetryAfterMs(undefined, now, 200)).toBe(200);
    expect(parseRetryAfterMs('7', now, 200)).toBe(7000);
  });
});

describe('error classes and errorAction', () => {
  it('maps each status to one class, code and action', () => {
    const table: Array<[number, abstract new (...args: never[]) => unknown, string, string]> = [
      [400, RequestRejectedError, 'HTTP_4XX', 'fail-item'],
      [401, AuthError, 'AUTH', 'stop-run'],
      [402, CreditsExhaustedError, 'OUT_OF_CREDITS', 'stop-run'],
      [403, AuthError, 'AUTH', 'stop-run'],
      [408, TimeoutError, 'TIMEOUT', 'retry'],
      [422, RequestRejectedError, 'HTTP_4XX', 'fail-item'],
      [429, ThrottledError, 'THROTTLED', 'throttle'],
      [500, ServerError, 'SERVER_ERROR', 'retry'],
      [502, ServerError, 'SERVER_ERROR', 'retry'],
      [503, ServerError, 'SERVER_ERROR', 'retry'],
      [301, UnexpectedResponseError, 'UNEXPECTED_RESPONSE', 'stop-run'],
      [204, UnexpectedResponseError, 'UNEXPECTED_RESPONSE', 'stop-run'],
    ];
    for (const [status, cls, code, action] of table) {
      const err = errorForStatus(status, ctx(status));
      expect(err, String(status)).toBeInstanceOf(cls);
      expect(err).toBeInstanceOf(NetingestError);
      expect(err.code, String(status)).toBe(code);
      expect(err.kind, String(status)).toBe(code);
      expect(err.status).toBe(status);
      expect(err.paid).toBe(false);
      expect(errorAction(err), String(status)).toBe(action);
      expect(err.call.status).toBe(status);
      expect(err.message).toContain('GET /v1/api/search-jobs?keywords=x');
    }
  });

  it('gives the remaining classes their codes and actions', () => {
    expect(errorAction(new NetworkError(ctx(null), 'reset'))).toBe('retry');
    expect(new NetworkError(ctx(null), 'reset').code).toBe('NETWORK');
    expect(errorAction(new InvalidJsonError(ctx(200), 'x'))).toBe('retry');
    expect(new InvalidJsonError(ctx(200), 'x').code).toBe('INVALID_JSON');
    // A 200 whose body then failed was most likely charged; no response at all was not.
    expect(new InvalidJsonError(ctx(200), 'x').paid).toBe(true);
    expect(new NetworkError(ctx(null), 'reset').paid).toBe(false);
    expect(new NetworkError(ctx(null), 'reset').status).toBeNull();
    expect(errorAction(new ApiSchemaError(ctx(200), [], '{}', null))).toBe('fail-item');
    expect(new ApiSchemaError(ctx(200), [], '{}', null).code).toBe('SCHEMA');
    expect(errorAction(new ResponseTooLargeError(ctx(200), 10))).toBe('fail-item');
    expect(new ResponseTooLargeError(ctx(200), 10).code).toBe('BODY_TOO_LARGE');
    expect(new TimeoutError(ctx(null)).code).toBe('TIMEOUT');
    expect(errorAction(new UnsupportedEncodingError(ctx(200), 'zstd'))).toBe('stop-run');
    expect(new UnsupportedEncodingError(ctx(200), 'zstd').code).toBe('UNSUPPORTED_ENCODING');
  });

  it('carries Retry-After on ThrottledError', () => {
    const err = errorForStatus(429, ctx(429), '7');
    expect(err).toBeInstanceOf(ThrottledError);
    expect((err as ThrottledError).retryAfterMs).toBe(7000);
    expect((errorForStatus(429, ctx(429)) as ThrottledError).retryAfterMs).toBe(5000);
  });

  it('treats anything that is not an ApiError as a bug: stop the run', () => {
    expect(errorAction(new Error('boom'))).toBe('stop-run');
    expect(errorAction(new TypeError('x is undefined'))).toBe('stop-run');
    expect(errorAction('string thrown')).toBe('stop-run');
    expect(errorAction(undefined)).toBe('stop-run');
  });

  it('puts the excerpt and call into the message and the serialization', () => {
    const err = new ServerError(ctx(503, 'upstream down'));
    expect(err.message).toBe('search-jobs: the API failed with a server error (GET /v1/api/search-jobs?keywords=x, HTTP 503); body: upstream down');
    const json = JSON.parse(JSON.stringify(err));
    // Facts only: what the runner does about it is the policy table's (src/runner/error-policy.ts).
    expect(json).toMatchObject({ code: 'SERVER_ERROR', kind: 'SERVER_ERROR', status: 503, paid: false, bodyExcerpt: 'upstream down', call: call(503) });
    expect(json).not.toHaveProperty('action');
    expect(err.name).toBe('ServerError');
  });

  it('keeps a schema error body off the serialization (not enumerable) but readable', () => {
    const err = new ApiSchemaError(ctx(200), [{ path: 'a', message: 'b' }], '{"big":"body"}', null);
    expect(err.raw).toBe('{"big":"body"}');
    expect(JSON.stringify(err)).not.toContain('big');
  });
});

describe('redaction', () => {
  const token = 'tk_live_9f8e7d6c5b4a';

  it('replaces every occurrence, also percent-encoded and JSON-escaped forms', () => {
    expect(redact(`a ${token} b ${token}`, [token])).toBe(`a ${REDACTED} b ${REDACTED}`);
    const odd = 'ab/c"d+e=';
    expect(redact(`q=${encodeURIComponent(odd)}`, [odd])).toBe(`q=${REDACTED}`);
    expect(redact(JSON.stringify({ echo: odd }), [odd])).toBe(`{"echo":"${REDACTED}"}`);
  });

  it('handles several secrets, overlapping ones and no secret at all', () => {
    expect(redact('xx abcdef yy abc', ['abc', 'abcdef'])).toBe(`xx ${REDACTED} yy ${REDACTED}`);
    expect(redact('nothing here', [''])).toBe('nothing here');
    expect(redact('nothing here', [])).toBe('nothing here');
    expect(createRedactor([token])(`Bearer ${token}`)).toBe(`Bearer ${REDACTED}`);
  });

  it('whole outputs (bodies, log lines, summaries) lose a real token but are never corrupted by a short one', () => {
    const text = `Run 1: completed; status ok; echo ${token}`;
    expect(createOutputRedactor([token])(text)).toBe(`Run 1: completed; status ok; echo ${REDACTED}`);
    for (const short of ['t', 'tok', 'status', 'complet']) expect(createOutputRedactor([short])(text)).toBe(text);
  });

  it('the logger follows the same rule, in text and JSON lines', () => {
    const lines = (secret: string, format: 'text' | 'json') => {
      let out = '';
      const stream = { write: (s: string) => ((out += s), true) } as unknown as NodeJS.WritableStream;
      createLogger({ stream, format, secrets: [secret] }).info('run finished', { status: 'completed', echo: `${token}"` });
      return out;
    };
    const json = lines('status', 'json');
    expect(JSON.parse(json)).toMatchObject({ msg: 'run finished', status: 'completed' });
    expect(lines('status', 'text')).toContain('status=completed');
    // The echo ends in a quote, so the JSON line holds the token escaped: redacted in that form too.
    const withQuote = `${token}"`;
    for (const format of ['text', 'json'] as const) {
      const out = lines(withQuote, format);
      expect(out).not.toContain(token);
      expect(out).toContain(REDACTED);
    }
    expect(JSON.parse(lines(withQuote, 'json'))).toMatchObject({ status: 'completed', echo: REDACTED });
  });

  it('makes excerpts single-line, at most 300 characters, redacted before cutting', () => {
    const text = `line one\r\n\tline two\u0000 ${'x'.repeat(1000)}`;
    const ex = bodyExcerpt(text, []);
    expect(ex.startsWith('line one line two x')).toBe(true);
    expect(ex.length).toBeLessThanOrEqual(300);
    expect(ex).not.toMatch(/[\r\n\t\u0000]/);
    // The token straddles the 300-character cut: no prefix of it may survive.
    const straddle = `${'y'.repeat(290)}${token}${'z'.repeat(50)}`;
    const cut = bodyExcerpt(straddle, [token]);
    expect(cut.length).toBeLessThanOrEqual(300);
    expect(cut).not.toContain(token.slice(0, 6));
    expect(bodyExcerpt('', [token])).toBe('');
  });

  it('never leaves the token in an error built from an echoing body', () => {
    const err = new AuthError({ call: call(401), bodyExcerpt: bodyExcerpt(`{"message":"invalid token ${token}"}`, [token]) });
    for (const text of [err.message, err.bodyExcerpt, JSON.stringify(err), inspect(err), String(err.stack)]) {
      expect(text).not.toContain(token);
    }
    expect(err.bodyExcerpt).toContain(REDACTED);
  });
});
