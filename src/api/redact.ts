/** Keeps the API token out of everything netingest writes: error messages, body excerpts, stored bodies. */
import { shortened } from '../operations/storable-text.ts';

export const REDACTED = '[REDACTED]';

/** Longest body excerpt carried by an error, in characters. */
export const EXCERPT_MAX_CHARS = 300;

/**
 * Every form a secret can come back in: each character as is, percent-encoded, JSON-escaped or as an HTML character
 * reference, in any mix, hex in either case; and base64 (standard or URL-safe) of any text holding it, such as
 * `Bearer <token>`. One regex per set of secrets, so a body is scanned once, not once per spelling.
 */
export function secretPattern(secrets: readonly string[]): RegExp | null {
  const sorted = [...new Set(secrets.filter((s) => s !== ''))].sort((a, b) => b.length - a.length);
  if (sorted.length === 0) return null;
  // Alternatives are tried in order at each position: longer spellings first, so none is half-replaced.
  const base64 = [...new Set(sorted.flatMap(base64Forms))].sort((a, b) => b.length - a.length).map(escapeRegExp);
  const spelled = sorted.map((s) => [...s].map(charSpellings).join(''));
  return new RegExp([...base64, ...spelled].join('|'), 'g');
}

/** Shortest base64 run that is redacted: a shorter one (from a short test token) would match ordinary words. */
const MIN_BASE64_CHARS = 8;

/**
 * Base64 of the secret wherever it sits: for each of the three byte alignments, the characters that depend on its bytes
 * only; and the whole encodings of the secret and of `Bearer <secret>`, padding included, so no edge character is left.
 */
function base64Forms(secret: string): string[] {
  const bytes = Buffer.from(secret, 'utf8');
  const forms: string[] = [];
  for (const whole of [bytes, Buffer.concat([Buffer.from('Bearer '), bytes])]) forms.push(whole.toString('base64'));
  for (const offset of [0, 1, 2]) {
    const padded = Buffer.concat([Buffer.alloc(offset), bytes]);
    const complete = padded.subarray(0, padded.length - (padded.length % 3));
    // Characters mixing bits of the unknown bytes before the secret: none, 2 or 3.
    forms.push(complete.toString('base64').slice([0, 2, 3][offset]));
  }
  const all = forms.flatMap((f) => [f, f.replace(/=+$/, ''), f.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')]);
  return all.filter((f) => f.length >= MIN_BASE64_CHARS);
}

/** Built once per character: a group does not depend on the secret it is part of. */
const spellingGroups = new Map<string, string>();

/** A code point in every spelling it may be echoed in, as a regex group, longest first: a token ending in `\` or `%` (`\\`, `%25`) leaves no tail. */
function charSpellings(char: string): string {
  const built = spellingGroups.get(char);
  if (built !== undefined) return built;
  const units = Array.from({ length: char.length }, (_, i) => char.charCodeAt(i));
  const spellings = [
    units.map((u) => '\\\\u' + hexPattern(u, 4)).join(''),
    [...Buffer.from(char, 'utf8')].map((b) => '%' + hexPattern(b, 2)).join(''),
  ];
  // An HTML page (a proxy's error page) writes a character as a reference: `&#115;`, `&#x73;`, `&amp;`.
  const code = char.codePointAt(0)!;
  spellings.push(`&#0*${code};`, `&#[xX]0*${hexPattern(code, 1)};`);
  const named = HTML_NAMED[char];
  if (named !== undefined) spellings.push(named);
  const short = JSON_SHORT_ESCAPES[char];
  if (short !== undefined) spellings.push(escapeRegExp(short));
  spellings.push(escapeRegExp(char));
  const group = `(?:${spellings.join('|')})`;
  spellingGroups.set(char, group);
  return group;
}

/** JSON's two-character escapes, and `\/`, which JSON allows and PHP writes by default. */
const JSON_SHORT_ESCAPES: Record<string, string> = {
  '/': '\\/', '"': '\\"', '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t',
};

/** HTML's named references for the characters HTML escapes. */
const HTML_NAMED: Record<string, string> = { '&': '&amp;', '"': '&quot;', '<': '&lt;', '>': '&gt;', "'": '&apos;' };

/** A number as `digits` hex digits, each letter in either case: 0x2f is `2[fF]`. */
function hexPattern(value: number, digits: number): string {
  const hex = value.toString(16).padStart(digits, '0');
  return [...hex].map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d)).join('');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');
}

/** Replaces every occurrence of each secret, in every spelling of `secretPattern`, with `[REDACTED]`. */
export function redact(text: string, secrets: readonly string[]): string {
  return createRedactor(secrets)(text);
}

/** `redact` with the secrets' pattern built once, for the hot path. */
export function createRedactor(secrets: readonly string[]): (text: string) => string {
  const pattern = secretPattern(secrets);
  if (pattern === null) return (text) => text;
  return (text) => text.replace(pattern, REDACTED);
}

/** Shortest token redacted from whole outputs (bodies, logs, summary): a short test one would corrupt words ("status"). Errors redact any length. */
export const MIN_TOKEN_CHARS_FOR_OUTPUT_REDACTION = 8;

/** The one redactor of whole outputs (bodies, logs, summaries): only secrets long enough to be real tokens. */
export function createOutputRedactor(secrets: readonly string[]): (text: string) => string {
  return createRedactor(secrets.filter((s) => s.length >= MIN_TOKEN_CHARS_FOR_OUTPUT_REDACTION));
}

/** A one-line excerpt of a body for errors, cut to `maxChars`; redacted before the cut, so no token half can leak. */
export function bodyExcerpt(text: string, secrets: readonly string[], maxChars = EXCERPT_MAX_CHARS): string {
  // Bounded work on huge bodies: the excerpt only ever comes from the first few thousand characters.
  const head = redact(text, secrets).slice(0, maxChars * 8);
  // eslint-disable-next-line no-control-regex
  const line = head.replace(/[\s\u0000-\u001f\u007f]+/g, ' ').trim();
  // The ellipsis counts toward maxChars; a surrogate pair is not split.
  return line.length <= maxChars ? line : shortened(line, maxChars - 1);
}
