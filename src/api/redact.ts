/**
 * Keeps the API token out of everything netingest writes: error messages, body excerpts, stored bodies.
 */

/** What a secret is replaced with. */
export const REDACTED = '[REDACTED]';

/** Longest body excerpt carried by an error, in characters. */
export const EXCERPT_MAX_CHARS = 300;

/**
 * The forms in which a secret can show up in text we receive: as is, percent-encoded (echoed in a URL) and
 * JSON-escaped (echoed inside a JSON string). Longest first, so a longer form is never half-replaced.
 */
export function secretForms(secret: string): string[] {
  if (secret === '') return [];
  const forms = new Set([secret, encodeURIComponent(secret), JSON.stringify(secret).slice(1, -1)]);
  return [...forms].sort((a, b) => b.length - a.length);
}

/** Replaces every occurrence of each secret (in every form of `secretForms`) with `[REDACTED]`. */
export function redact(text: string, secrets: readonly string[]): string {
  return createRedactor(secrets)(text);
}

/** `redact` with the secrets' forms worked out once, for the hot path. */
export function createRedactor(secrets: readonly string[]): (text: string) => string {
  const forms = [...new Set(secrets.flatMap(secretForms))].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const form of forms) {
      if (out.includes(form)) out = out.split(form).join(REDACTED);
    }
    return out;
  };
}

/**
 * Shortest token redacted from whole outputs that must stay intact: stored 200/404 bodies, log lines, the run
 * summary. A real bearer token is a long random string, so finding one there means it was echoed; a short test
 * token (the sandbox takes `t` or `tok`) would match ordinary words ("completed", "status") and corrupt the
 * output. Error messages and excerpts are redacted whatever the length.
 */
export const MIN_TOKEN_CHARS_FOR_OUTPUT_REDACTION = 8;

/** The one redactor of whole outputs (bodies, logs, summaries): only secrets long enough to be real tokens. */
export function createOutputRedactor(secrets: readonly string[]): (text: string) => string {
  const real = secrets.filter((s) => s.length >= MIN_TOKEN_CHARS_FOR_OUTPUT_REDACTION);
  return real.length > 0 ? createRedactor(real) : (text) => text;
}

/**
 * A short, single-line, redacted excerpt of a body for error messages: whitespace and control characters
 * collapse to one space and the result is cut to `maxChars` (an ellipsis marks the cut). Redaction happens
 * before the cut, so a token split by the cut cannot leak its first half.
 */
export function bodyExcerpt(text: string, secrets: readonly string[], maxChars = EXCERPT_MAX_CHARS): string {
  // Bounded work on huge bodies: the excerpt only ever comes from the first few thousand characters.
  const head = redact(text, secrets).slice(0, maxChars * 8);
  // eslint-disable-next-line no-control-regex
  const line = head.replace(/[\s\u0000-\u001f\u007f]+/g, ' ').trim();
  if (line.length <= maxChars) return line;
  let cut = maxChars - 1;
  // Do not split a surrogate pair.
  const last = line.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return `${line.slice(0, cut)}…`;
}
