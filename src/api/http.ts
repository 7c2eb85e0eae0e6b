/** One attempt of one call, within the size and time limits, as an ApiResult or ApiError; retrying is the runner's. */
import type { Dispatcher } from 'undici';
import {
  errorForStatus,
  InvalidJsonError,
  ResponseTooLargeError,
  UnexpectedResponseError,
  UnsupportedEncodingError,
} from './errors.ts';
import { BODY_DECODE_CODE, CALL_DEADLINE_CODE, errorForTransport } from './transport-errors.ts';
import { contentCodings, readBody, type BodyText } from './body-reader.ts';
import { bodyExcerpt } from './redact.ts';
import { parseJsonBody, readUsableAnswer } from './schemas.ts';
import type { ApiCallInfo, ApiResult } from './types.ts';
import type { OperationSpec } from '../operations/operation-spec.ts';
import { OPERATION_METHODS } from '../spec/types.ts';

/** Most bytes read of a body that is only needed for an error excerpt (a 5xx page, a 401 message). */
const ERROR_BODY_MAX_BYTES = 64 * 1024;

/** What an attempt needs, fixed when the client is created. */
export interface Transport {
  dispatcher: Dispatcher;
  /** Scheme, host and port of the base URL. */
  origin: string;
  /** Path of the base URL without a trailing slash ('' for none); operation paths are appended to it. */
  pathPrefix: string;
  timeoutMs: number;
  maxBodyBytes: number;
  /** A 200 body over maxBodyBytes but within this is read whole, carried by its ResponseTooLargeError to be kept. */
  maxKeptBodyBytes: number;
  /** A 429's wait when its Retry-After is missing or garbage. */
  retryAfterFallbackMs: number;
  /** Kept out of error messages and excerpts. */
  secrets: readonly string[];
  /** Applied to 200/404 bodies before they are parsed and returned (identity when the token is too short). */
  redactBody: (text: string) => string;
  /** Headers of a call, by whether it carries `Content-Type: application/json`. */
  headers: Record<'plain' | 'json', Record<string, string>>;
}

/** Sends one request and resolves to its result; throws an ApiError (or, for a bug, the original error). */
export async function attempt<Q, A>(t: Transport, spec: OperationSpec<Q, A>, request: Q): Promise<ApiResult<A>> {
  const { json, body, path } = spec.send(request);
  const headers = json ? t.headers.json : t.headers.plain;
  const sent: Sent = { operation: spec.name, method: OPERATION_METHODS[spec.name], headers, body, path: t.pathPrefix + path, started: performance.now() };
  // undici's headersTimeout restarts on every informational (1xx) response, so a server sending `102
  // Processing` forever would hold the call for ever: this deadline covers the whole exchange.
  const deadline = new AbortController();
  const timer = setTimeout(() => {
    const late = new Error(`the call took longer than ${t.timeoutMs} ms`);
    deadline.abort(Object.assign(late, { code: CALL_DEADLINE_CODE }));
  }, t.timeoutMs);
  try {
    return await exchange(t, spec, request, sent, deadline.signal);
  } finally {
    clearTimeout(timer);
  }
}

interface Sent extends Pick<ApiCallInfo, 'operation' | 'method' | 'path'> {
  headers: Record<string, string>;
  body: string | null;
  started: number;
}

// Complexity 17: one exchange read top to bottom (send, status, body, answer), each outcome a line; split, the
// order in which a paid answer is told from a failure would be harder to follow.
// eslint-disable-next-line complexity -- see above
async function exchange<Q, A>(t: Transport, spec: OperationSpec<Q, A>, request: Q, sent: Sent, signal: AbortSignal): Promise<ApiResult<A>> {
  const { method, headers, body, path, started } = sent;
  let res: Dispatcher.ResponseData;
  try {
    res = await t.dispatcher.request({ origin: t.origin, path, method, headers, body, signal });
  } catch (err) {
    throw errorForTransport(err, callInfo(sent, null), t.timeoutMs) ?? err;
  }
  const status = res.statusCode;
  const isResult = status === 200 || status === 404;
  let received: BodyText;
  try {
    received = await readBody(res, {
      limitBytes: isResult ? t.maxBodyBytes : Math.min(t.maxBodyBytes, ERROR_BODY_MAX_BYTES),
      keepBytes: status === 200 ? t.maxKeptBodyBytes : 0,
      deadline: started + t.timeoutMs,
    });
  } catch (err) {
    // On another status the body is only an excerpt: one that does not decode must not turn a 401 or a 429
    // into a network failure to retry.
    if (isResult || (err as { code?: unknown } | null)?.code !== BODY_DECODE_CODE) {
      throw errorForTransport(err, callInfo(sent, status), t.timeoutMs) ?? err;
    }
    received = { text: `(a ${contentCodings(res.headers['content-encoding']).join(', ')} body that does not decode)`, truncated: false };
  }
  const call = callInfo(sent, status);
  // On another status the status says what went wrong; only the excerpt is missing.
  if (received.unsupported !== undefined && isResult) throw new UnsupportedEncodingError({ call }, received.unsupported);
  if (received.truncated && isResult) throw tooLarge(t, received, call);
  if (status === 200) return ok(t, spec, received.text, call, request);
  if (status === 404) return notFound(t, spec, received.text, call);
  throw errorForStatus(status, { call, bodyExcerpt: bodyExcerpt(received.text, t.secrets) }, res.headers['retry-after'], t.retryAfterFallbackMs);
}

/** A body over the limit; a paid 200's whole text, when read, is carried redacted as stored, for reprocess to keep. */
function tooLarge(t: Transport, received: BodyText, call: ApiCallInfo): ResponseTooLargeError {
  const kept = received.whole === undefined ? null : t.redactBody(received.whole);
  return new ResponseTooLargeError({ call, bodyExcerpt: bodyExcerpt(received.text, t.secrets) }, t.maxBodyBytes, kept);
}

function callInfo({ operation, method, path, started }: Sent, status: number | null): ApiCallInfo {
  return { operation, method, path, status, latencyMs: Math.round((performance.now() - started) * 1000) / 1000 };
}

function ok<Q, A>(t: Transport, spec: OperationSpec<Q, A>, text: string, call: ApiCallInfo, asked: Q): ApiResult<A> {
  const raw = t.redactBody(text);
  let parsed: unknown;
  try {
    parsed = parseJsonBody(raw);
  } catch (err) {
    const reason = raw.trim() === '' ? 'empty body' : err instanceof Error ? err.message : String(err);
    const excerpt = bodyExcerpt(raw, t.secrets);
    // V8 quotes the start of the input in its message: run it through the same redaction as the excerpt.
    throw new InvalidJsonError({ call, bodyExcerpt: excerpt }, bodyExcerpt(reason, t.secrets, 120));
  }
  const read = readUsableAnswer(spec, parsed, { call, raw, secrets: t.secrets }, asked);
  return { kind: 'ok', data: read.answer, raw, credits: read.credits, call, lastPage: read.lastPage, drift: read.drift, setAside: read.setAside };
}

/**
 * A 404 is "nothing found" only with the API's body (spec.notFound.isAnswer): a wrong URL's gateway 404, taken as one,
 * settles every task as not found for days; too strict a check costs one stopped run naming it (see not-found-only.ts).
 */
function notFound<Q, A>(t: Transport, spec: OperationSpec<Q, A>, text: string, call: ApiCallInfo): ApiResult<never> {
  const raw = t.redactBody(text);
  let body: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = raw.trim() === '' ? null : parseJsonBody(raw);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    // Not JSON: not the API's answer.
  }
  const message = typeof body?.message === 'string' ? body.message : null;
  if (!spec.notFound.isAnswer(body, message)) {
    const shape = spec.notFound.shape;
    throw new UnexpectedResponseError({ call, bodyExcerpt: bodyExcerpt(raw, t.secrets) }, `a 404 whose body is not the API's (${shape})`);
  }
  return { kind: 'not_found', message, raw, call };
}
