/**
 * A stored message as the report shows it: short, and with what could be a secret masked, whatever wrote it
 * (a password in a database URL, a bearer token, a token or key in a query string).
 */

/** Longest sample, in characters. */
export const SAMPLE_MAX_CHARS = 200;

const MASK = '[REDACTED]';

const SECRETS: ReadonlyArray<[RegExp, string]> = [
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]*@/gi, `$1${MASK}@`],
  [/\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${MASK}`],
  [/([?&;\s](?:token|api[_-]?key|key|password|secret|access_token)=)[^&\s"']+/gi, `$1${MASK}`],
];

/** `text` shortened to SAMPLE_MAX_CHARS, secrets masked first (so no half of one is left at the cut). */
export function redactSample(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRETS) out = out.replace(pattern, replacement);
  return out.length > SAMPLE_MAX_CHARS ? `${out.slice(0, SAMPLE_MAX_CHARS - 1)}…` : out;
}
