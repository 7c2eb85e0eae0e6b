/** Which transport failures (connect, TLS, send, receive) are which ApiError, by undici's, Node's or OpenSSL's code. */
import { maxHeaderSize } from 'node:http';
import { NetworkError, TimeoutError, TlsError, type ApiError } from './errors.ts';
import type { ApiCallInfo } from './types.ts';

/** Code of the internal error raised when a body is still arriving when the call's time is up. */
export const BODY_DEADLINE_CODE = 'NETINGEST_BODY_DEADLINE';

/** Code of the internal error a call is aborted with when its whole exchange outlasts the timeout (see http.ts). */
export const CALL_DEADLINE_CODE = 'NETINGEST_CALL_DEADLINE';

/** Code of the internal error raised when a compressed body does not decompress (corrupt or cut short). */
export const BODY_DECODE_CODE = 'NETINGEST_BODY_DECODE';

/** Headers over undici's or llhttp's limit: a proxy or server misbehaving on this answer; a retry may not meet it. */
const HEADERS_OVERFLOW_CODES = new Set(['UND_ERR_HEADERS_OVERFLOW', 'HPE_HEADER_OVERFLOW']);

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
  BODY_DEADLINE_CODE,
  CALL_DEADLINE_CODE,
]);

const NETWORK_CODES = new Set([
  'UND_ERR_SOCKET',
  'UND_ERR_INFO',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'EHOSTDOWN',
  'EADDRNOTAVAIL',
]);

function codeOf(err: unknown): string | undefined {
  if (err instanceof AggregateError && err.errors.length > 0) return codeOf(err.errors[0]);
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** Certificate checks that fail with OpenSSL's verify code rather than an ERR_TLS_ or ERR_SSL_ one. */
const CERTIFICATE_CODES = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REVOKED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE',
  'HOSTNAME_MISMATCH',
]);

/** A TLS failure's reason in a few words: OpenSSL's messages carry an address, a library path and a newline. */
function tlsReason(err: unknown, code: string): string {
  const message = err instanceof Error ? err.message : '';
  const openssl = /SSL routines:[^:]*:([^:]+)/.exec(message)?.[1];
  const text = (openssl ?? message).replace(/\s+/g, ' ').trim();
  return text ? `${code}: ${text}` : code;
}

/** The ApiError for a transport failure; null for any other error (a bug, a closed client), which stops the run. */
export function errorForTransport(err: unknown, call: ApiCallInfo, timeoutMs: number): ApiError | null {
  const code = codeOf(err);
  if (code === undefined) return null;
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || CERTIFICATE_CODES.has(code)) {
    return new TlsError({ call, cause: err }, tlsReason(err, code));
  }
  if (TIMEOUT_CODES.has(code)) return new TimeoutError({ call, cause: err }, `no complete response within ${timeoutMs} ms (${code})`);
  if (HEADERS_OVERFLOW_CODES.has(code)) {
    return new NetworkError({ call, cause: err }, `the response headers are larger than the ${maxHeaderSize} bytes accepted (${code})`);
  }
  if (code === BODY_DECODE_CODE) {
    const reason = err instanceof Error && err.message ? err.message : 'corrupt data';
    return new NetworkError({ call, cause: err }, `the compressed response body does not decode (${reason})`);
  }
  if (NETWORK_CODES.has(code) || code.startsWith('HPE_')) {
    const reason = err instanceof Error && err.message ? `: ${err.message}` : '';
    return new NetworkError({ call, cause: err }, `connection failed (${code}${reason})`);
  }
  return null;
}
