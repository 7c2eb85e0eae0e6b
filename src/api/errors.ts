/**
 * Every way an API call can fail; what the runner does about each is error-policy.ts's table. Messages and excerpts
 * never hold the token: excerpts are redacted first, and headers and requests never enter an error.
 */
import { NetingestError } from '../errors.ts';
import type { CreditCounters } from '../spec/types.ts';
import type { ApiCallInfo } from './types.ts';
import type { UnusableIssue } from '../operations/answer-contract.ts';

/** Every kind of API call failure, one per class below. */
export const API_ERROR_KINDS = [
  'AUTH',
  'OUT_OF_CREDITS',
  'THROTTLED',
  'SERVER_ERROR',
  'TIMEOUT',
  'NETWORK',
  'INVALID_JSON',
  'SCHEMA',
  'HTTP_4XX',
  'BODY_TOO_LARGE',
  'UNEXPECTED_RESPONSE',
  'TLS',
  'UNSUPPORTED_ENCODING',
] as const;
export type ApiErrorKind = (typeof API_ERROR_KINDS)[number];

/** What every ApiError is built from. */
export interface ApiErrorContext {
  call: ApiCallInfo;
  /** Redacted, single-line, at most 300 characters (see bodyExcerpt in redact.ts); '' when there was no body. */
  bodyExcerpt?: string;
  cause?: unknown;
}

/** Base of all API call failures: facts only, each class fixing its `kind`. */
export abstract class ApiError extends NetingestError {
  /** What happened; the same string as `code`, typed as the closed union. */
  readonly kind: ApiErrorKind;
  declare readonly code: ApiErrorKind;
  /** HTTP status, or null when no response arrived (as `call.status`). */
  readonly status: number | null;
  /** A 200 came (its body then failed): the service most likely charged the call. */
  readonly paid: boolean;
  readonly call: ApiCallInfo;
  readonly bodyExcerpt: string;
  /** What went wrong, without the operation and request the message adds (e.g. "connection failed (ECONNREFUSED)"). */
  readonly what: string;

  protected constructor(kind: ApiErrorKind, what: string, ctx: ApiErrorContext) {
    super(kind, describe(what, ctx), ctx.cause === undefined ? undefined : { cause: ctx.cause });
    this.kind = kind;
    this.status = ctx.call.status;
    this.paid = ctx.call.status === 200;
    this.call = ctx.call;
    this.bodyExcerpt = ctx.bodyExcerpt ?? '';
    this.what = what;
  }
}

function describe(what: string, { call, bodyExcerpt }: ApiErrorContext): string {
  const status = call.status === null ? '' : `, HTTP ${call.status}`;
  const body = bodyExcerpt ? `; body: ${bodyExcerpt}` : '';
  return `${call.operation}: ${what} (${call.method} ${call.path}${status})${body}`;
}

/** 401 or 403: the token is wrong, expired or the account is suspended; every further call would fail too. */
export class AuthError extends ApiError {
  constructor(ctx: ApiErrorContext) {
    super(
      'AUTH',
      ctx.call.status === 403
        ? 'the API refused access (account suspended or token not allowed): check the account and NETINGEST_API_TOKEN'
        : 'the API rejected the token: check NETINGEST_API_TOKEN or the file given to --token-file',
      ctx,
    );
  }
}

/** 402: the balance cannot pay for the call. */
export class CreditsExhaustedError extends ApiError {
  constructor(ctx: ApiErrorContext) {
    super('OUT_OF_CREDITS', 'the account has no credits left for this call', ctx);
  }
}

/** 429: rate-limited, with how long the service asked us to wait. */
export class ThrottledError extends ApiError {
  /** How long the service asked us to wait (from Retry-After; 5000 when it gave none). */
  readonly retryAfterMs: number;
  constructor(ctx: ApiErrorContext, retryAfterMs: number) {
    super('THROTTLED', `rate-limited by the API; retry after ${retryAfterMs} ms`, ctx);
    this.retryAfterMs = retryAfterMs;
  }
}

/** 5xx: the service failed. */
export class ServerError extends ApiError {
  constructor(ctx: ApiErrorContext) {
    super('SERVER_ERROR', 'the API failed with a server error', ctx);
  }
}

/** No complete response in time (connect, headers or body), or a 408 from the server. */
export class TimeoutError extends ApiError {
  constructor(ctx: ApiErrorContext, what = 'no complete response in time') {
    super('TIMEOUT', what, ctx);
  }
}

/** The connection failed: refused, reset, dropped mid-response, DNS failure, malformed HTTP. */
export class NetworkError extends ApiError {
  constructor(ctx: ApiErrorContext, what: string) {
    super('NETWORK', what, ctx);
  }
}

/** A 200 whose body is not JSON (truncated, or an HTML page from a proxy): usually transient. */
export class InvalidJsonError extends ApiError {
  constructor(ctx: ApiErrorContext, parseMessage: string) {
    super('INVALID_JSON', `the 200 response body is not valid JSON (${parseMessage})`, ctx);
  }
}

/** A 200 body its contract cannot read at all: paid and deterministic, so the body (`raw`) is kept for reprocess. Odd members are drift, not this. */
export class ApiSchemaError extends ApiError {
  readonly issues: readonly UnusableIssue[];
  /** Credit counters of the body when it still carries them as numbers (the call was paid for). */
  readonly credits: CreditCounters | null;
  /** The body, redacted as a stored 200 body is; not enumerable, so logging the error does not dump megabytes. */
  declare readonly raw: string;

  constructor(ctx: ApiErrorContext, issues: readonly UnusableIssue[], raw: string, credits: CreditCounters | null) {
    const first = issues[0];
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
    const what = first ? `response does not match the API's documented interface: ${first.path}: ${first.message}${more}` : "response does not match the API's documented interface";
    super('SCHEMA', what, ctx);
    this.issues = issues;
    this.credits = credits;
    Object.defineProperty(this, 'raw', { value: raw, enumerable: false });
  }
}

/** Another 4xx: the service refused this request (bad parameters); it would refuse it again. */
export class RequestRejectedError extends ApiError {
  constructor(ctx: ApiErrorContext) {
    super('HTTP_4XX', 'the API rejected the request', ctx);
  }
}

/** A body over `maxBodyBytes`; a 200 within `maxKeptBodyBytes` was read whole and is carried (`raw`) for reprocess. */
export class ResponseTooLargeError extends ApiError {
  readonly limitBytes: number;
  declare readonly raw: string | null;
  constructor(ctx: ApiErrorContext, limitBytes: number, raw: string | null = null) {
    super('BODY_TOO_LARGE', `the response body exceeds the limit of ${limitBytes} bytes`, ctx);
    this.limitBytes = limitBytes;
    Object.defineProperty(this, 'raw', { value: raw, enumerable: false });
  }
}

/** The paid body an error carries to be kept for reprocess, with its credit counters when readable; else null. */
export function keptBodyOf(err: unknown): { raw: string; credits: CreditCounters | null } | null {
  if (err instanceof ApiSchemaError) return { raw: err.raw, credits: err.credits };
  return err instanceof ResponseTooLargeError && err.raw !== null ? { raw: err.raw, credits: null } : null;
}

/** A status or body the spec does not describe (a redirect, a 2xx not 200, a gateway's 404): a misconfiguration all items would meet, not theirs. */
export class UnexpectedResponseError extends ApiError {
  constructor(ctx: ApiErrorContext, what: string) {
    super('UNEXPECTED_RESPONSE', `${what}: check the API URL (NETINGEST_API_URL or --api-url)`, ctx);
  }
}

/** The TLS connection failed (a bad certificate, https:// to a plain-http port): every call would fail the same way. */
export class TlsError extends ApiError {
  constructor(ctx: ApiErrorContext, reason: string) {
    super(
      'TLS',
      `secure (TLS) connection to the API failed (${reason}): check the API URL (NETINGEST_API_URL or --api-url: ` +
        'https:// to a port that speaks plain http?) and that the server\'s certificate is valid for its host',
      ctx,
    );
  }
}

/** A 200 or 404 in a coding the client cannot decode though it asks for none: a proxy's, on every (paid) answer: retrying each would pay for all. */
export class UnsupportedEncodingError extends ApiError {
  readonly encoding: string;
  constructor(ctx: ApiErrorContext, encoding: string) {
    super(
      'UNSUPPORTED_ENCODING',
      `the response is compressed as '${encoding}', which netingest cannot decode (it asks for none, and decodes ` +
        'gzip, deflate and br): check for a proxy between netingest and the API that compresses answers',
      ctx,
    );
    this.encoding = encoding;
  }
}

/** How an outage's failure reads in the run's stop message; which kinds count is error-policy.ts's table. */
export function outageSymptom(err: unknown): string {
  if (!(err instanceof ApiError)) return err instanceof Error ? err.message : String(err);
  switch (err.kind) {
    case 'NETWORK':
      return `the API is unreachable: ${err.what}`;
    case 'TIMEOUT':
      return `the API does not answer: ${err.what}`;
    case 'SERVER_ERROR':
      return `the API fails with HTTP ${err.status ?? '5xx'}${err.bodyExcerpt ? ` (body: ${err.bodyExcerpt})` : ''}`;
    case 'INVALID_JSON':
      return `the API answers with something that is not JSON: ${err.what}`;
    default:
      return `the API fails: ${err.what}`;
  }
}

/** Wait used when a 429 carries no usable Retry-After. */
export const DEFAULT_RETRY_AFTER_MS = 5000;

/**
 * Milliseconds to wait from a Retry-After value: delta seconds or an HTTP-date; negative waits become 0; none or
 * garbage, `fallbackMs`.
 */
export function parseRetryAfterMs(value: string | string[] | undefined, nowMs = Date.now(), fallbackMs = DEFAULT_RETRY_AFTER_MS): number {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return fallbackMs;
  if (/^-?\d+(\.\d+)?$/.test(text)) return Math.max(0, Math.round(Number(text) * 1000));
  const at = Date.parse(text);
  return Number.isNaN(at) ? fallbackMs : Math.max(0, at - nowMs);
}

/**
 * The error for a status other than 200 and 404 (results, unless their body is wrong, which http.ts decides); a 429
 * without a usable Retry-After waits `retryAfterFallbackMs`.
 */
export function errorForStatus(status: number, ctx: ApiErrorContext, retryAfter?: string | string[], retryAfterFallbackMs = DEFAULT_RETRY_AFTER_MS): ApiError {
  if (status === 401 || status === 403) return new AuthError(ctx);
  if (status === 402) return new CreditsExhaustedError(ctx);
  if (status === 429) return new ThrottledError(ctx, parseRetryAfterMs(retryAfter, Date.now(), retryAfterFallbackMs));
  if (status === 408) return new TimeoutError(ctx, 'the server timed out waiting for the request');
  if (status >= 500 && status <= 599) return new ServerError(ctx);
  if (status >= 400 && status <= 499) return new RequestRejectedError(ctx);
  if (status >= 300 && status <= 399) return new UnexpectedResponseError(ctx, `unexpected redirect (HTTP ${status})`);
  return new UnexpectedResponseError(ctx, `unexpected HTTP status ${status}`);
}
