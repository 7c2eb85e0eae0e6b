/**
 * Redaction of a token echoed in any spelling: each character as is, percent-encoded (hex in either case),
 * JSON-escaped (`\uXXXX` in either case, `\/`, `\"`, `\\`) or an HTML character reference, in any mix, and base64 of
 * any text holding it.
 * The spellings are generated at random (seeded, so a failure repeats) rather than listed.
 */
import { describe, expect, it } from 'vitest';
import { createOutputRedactor, redact, REDACTED } from '../../src/api/redact.ts';
import { seededRandom as rng } from '../support/seeded-random.ts';


const ALPHABET = [...'abcXYZ0189_-./+=~"\\:%', 'é', '€', '😀', 'ß'];
const SHORT: Record<string, string> = { '/': '\\/', '"': '\\"', '\\': '\\\\' };

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

function randomCase(rand: () => number, hex: string): string {
  return [...hex].map((d) => (rand() < 0.5 ? d.toUpperCase() : d.toLowerCase())).join('');
}

function randomToken(rand: () => number, ascii: boolean): string {
  const chars = ascii ? ALPHABET.filter((c) => /^[\x21-\x7e]$/.test(c)) : ALPHABET;
  // Always one of the characters the services escape, so every case exercises an escape.
  return 'T' + pick(rand, ['/', '+', '=']) + Array.from({ length: 10 + Math.floor(rand() * 20) }, () => pick(rand, chars)).join('');
}

/** The token with each character spelled at random: as is, percent-encoded, \uXXXX, or its short JSON escape. */
function randomSpelling(rand: () => number, token: string, ways: Array<'raw' | 'percent' | 'unicode' | 'short'>): string {
  return [...token]
    .map((c) => {
      const way = pick(rand, ways);
      if (way === 'percent') return [...Buffer.from(c, 'utf8')].map((b) => '%' + randomCase(rand, b.toString(16).padStart(2, '0'))).join('');
      if (way === 'unicode') {
        return Array.from({ length: c.length }, (_, i) => '\\u' + randomCase(rand, c.charCodeAt(i).toString(16).padStart(4, '0'))).join('');
      }
      if (way === 'short' && SHORT[c]) return SHORT[c];
      // Raw inside a JSON string: a quote or backslash must stay escaped for the body to parse.
      return ways.includes('short') && SHORT[c] && c !== '/' ? SHORT[c] : c;
    })
    .join('');
}

describe('redaction of generated spellings', () => {
  it('a token echoed inside a JSON string, each character raw, \\uXXXX (either case) or short-escaped: gone, and the body still parses', () => {
    const rand = rng(22);
    for (let i = 0; i < 500; i++) {
      const token = randomToken(rand, i % 2 === 0);
      const spelled = randomSpelling(rand, token, ['raw', 'unicode', 'short']);
      const body = `{"echo":"${spelled}","n":${i}}`;
      expect(JSON.parse(body).echo, `case ${i}`).toBe(token);
      const out = createOutputRedactor([token])(body);
      expect(out, `case ${i}: ${body}`).toBe(`{"echo":"${REDACTED}","n":${i}}`);
      expect(JSON.parse(out).echo).toBe(REDACTED);
    }
  });

  it('percent-encoded in a URL (upper, lower or mixed hex, some characters left as is): gone', () => {
    const rand = rng(4);
    for (let i = 0; i < 500; i++) {
      const token = randomToken(rand, i % 2 === 0);
      const spelled = randomSpelling(rand, token, ['raw', 'percent']);
      expect(redact(`GET /cb?t=${spelled}&x=1`, [token]), `case ${i}: ${spelled}`).toBe(`GET /cb?t=${REDACTED}&x=1`);
    }
  });

  it('as HTML character references (a proxy\'s error page: decimal, hex in either case, named), mixed with raw: gone', () => {
    const rand = rng(11);
    const NAMED: Record<string, string> = { '&': '&amp;', '"': '&quot;', '<': '&lt;', '>': '&gt;', "'": '&apos;' };
    for (let i = 0; i < 300; i++) {
      const token = randomToken(rand, i % 2 === 0) + pick(rand, ['&', '"', "'", '<']);
      const spelled = [...token].map((c) => {
        const code = c.codePointAt(0)!;
        return pick(rand, [c, `&#${code};`, `&#00${code};`, `&#x${randomCase(rand, code.toString(16))};`, `&#X${code.toString(16)};`, NAMED[c] ?? c]);
      }).join('');
      expect(redact(`<p>token ${spelled} refused</p>`, [token]), `case ${i}: ${spelled}`).toBe(`<p>token ${REDACTED} refused</p>`);
    }
  });

  it('every spelling mixed in one token, several times in one text: each occurrence gone', () => {
    const rand = rng(7);
    for (let i = 0; i < 300; i++) {
      const token = randomToken(rand, false);
      const a = randomSpelling(rand, token, ['raw', 'percent', 'unicode', 'short']);
      const b = randomSpelling(rand, token, ['raw', 'percent', 'unicode', 'short']);
      expect(redact(`<${a}> and <${b}>`, [token]), `case ${i}`).toBe(`<${REDACTED}> and <${REDACTED}>`);
    }
  });

  it('base64 of `Bearer <token>`, of the bare token (standard, URL-safe, padded or not) and of any text holding it', () => {
    const rand = rng(64);
    for (let i = 0; i < 300; i++) {
      const token = randomToken(rand, true);
      for (const text of [`Bearer ${token}`, token]) {
        const std = Buffer.from(text).toString('base64');
        for (const form of [std, std.replace(/=+$/, ''), Buffer.from(text).toString('base64url')]) {
          expect(redact(`auth=${form};`, [token]), `case ${i}: ${form}`).toBe(`auth=${REDACTED};`);
        }
      }
      // Anywhere in a longer encoded text: every alignment. At most the 3 characters mixing the token's bits
      // with its neighbours' stay, too few to tell a byte of it.
      const before = 'x'.repeat(Math.floor(rand() * 6));
      const encoded = Buffer.from(`${before}{"token":"${token}"}`).toString('base64');
      const out = redact(encoded, [token]);
      expect(out, `case ${i}`).toContain(REDACTED);
      const left = out.replace(REDACTED, '');
      expect(encoded.length - left.length).toBeGreaterThanOrEqual(Math.floor(((token.length - 2) * 4) / 3));
    }
  });

  it('text without the token is left alone, and a short token still spares whole outputs', () => {
    const text = '{"status":"ok","url":"https:\\/\\/x.example\\/a%2Fb","b64":"QmVhcmVyIHg="}';
    expect(redact(text, ['T/zz+never=here'])).toBe(text);
    expect(createOutputRedactor(['t/'])(text)).toBe(text);
  });
});
