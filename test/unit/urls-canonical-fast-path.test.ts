import { describe, expect, it } from 'vitest';
import {
  canonicalCompanyUrl,
  canonicalJobUrl,
  canonicalPostUrl,
  canonicalUrl,
  parseFast,
  withoutFastPath,
} from '../../src/urls/canonical.ts';

// The fast path of the canonical-URL functions skips the WHATWG parser for common shapes; it must give exactly
// what the parser path gives, and leave everything unusual to the parser.

const FUNCTIONS = { canonicalUrl, canonicalCompanyUrl, canonicalPostUrl, canonicalJobUrl };

/** True when the input is read by the fast path (and so must give what the parser gives). */
const takesFastPath = (input: string): boolean => parseFast(input) !== undefined;

/** What each function returns for the input, with and without the fast path; empty when they agree. */
function differences(input: string): string[] {
  const out: string[] = [];
  for (const [name, fn] of Object.entries(FUNCTIONS)) {
    const fast = JSON.stringify(fn(input, 'network.com'));
    const slow = JSON.stringify(withoutFastPath(() => fn(input, 'network.com')));
    if (fast !== slow) out.push(`${name}(${JSON.stringify(input)}): fast ${fast}, parser ${slow}`);
  }
  return out;
}

function expectSameBothWays(input: string): void {
  expect(differences(input)).toEqual([]);
}

const PREFIXES = ['', 'https://', 'http://', 'HTTPS://', 'HtTp://', '//', 'ftp://', 'https:/', 'https:', 'www.', 'https://www.', 'WWW.', 'https://www.www.', 'https://user:pw@', 'https://user@'];
const HOSTS = [
  'network.com',
  'Network.COM',
  'de.network.com',
  'm.network.com',
  'api.network.com',
  'network.com.evil.com',
  'www.com',
  'network.com.',
  'network..com',
  '.network.com',
  'network',
  '-a-.com',
  'ab--cd.com',
  'a_b.com',
  'xn--bcher-kva.example',
  'XN--abc.com',
  'xn--abc.com',
  'bücher.example',
  '127.0.0.1',
  '1.2.3.4.5',
  '1.2.3.a',
  'a.0x1f',
  'a.1e',
  'a.123',
  'network.com:8443',
  'network.com:443',
  'network.com:',
  '[::1]',
  'a'.repeat(70) + '.com',
];
const PATHS = [
  '',
  '/',
  '/company/acme',
  '/company/Acme-Corp/',
  '/Company/ACME',
  '/COMPANY/a.b',
  '/company/acme/about/',
  '/company//acme',
  '//company/acme',
  '/company/',
  '/company/.',
  '/company/..',
  '/company/./x',
  '/company/acme/..',
  '/company/acme/../..',
  '/company/acme/./about',
  '/company/.acme',
  '/company/acme.',
  '/company/...',
  '/company/%2e',
  '/company/%2E%2E/x',
  '/company/soci%c3%a9t%c3%a9',
  '/company/Société',
  '/company/%E0%A4%A',
  '/company/a%2Fb',
  '/company/a\\b',
  '/company/a|b',
  '/company/a^b',
  '/company/a`b',
  '/company/a{b}',
  '/company/a"b',
  '/company/a<b>',
  "/company/a'b",
  '/company/a!$&()*+,;=b',
  '/company/a@b',
  '/company/a:b',
  '/company/a~b_c',
  '/company/a\tb',
  '/company/a\u0001b',
  '/company/K',
  '/company/\u212A',
  '/company/İ',
  '/in/someone',
  '/posts/jane-doe_Great-News-activity-7123456789012345678-AbCd',
  '/posts/jane-doe_Great-News-activity-7123456789012345678-AbCd/',
  '/feed/update/urn:li:activity:7123456789012345678/',
  '/embed/feed/update/urn:li:share:7123',
  '/pulse/some-article-title',
  '/posts',
  '/x/y/activity',
  '/in/jane/recent-activity/all/',
  '/feed/update/urn:li:ugcPost:7123',
  '/jobs/view/Engineer-at-Acme-3812345678/',
  '/jobs/view/3812345678/apply',
  '/jobs/search',
];
const SUFFIXES = ['', '?trk=x', '#top', '?a=1#b', '?', '#', '?q=a b', '?q=\u00e9', '?q=\uD800', '?q=x\u0001', '/?utm_source=share', '\u0000'];

describe('canonical URLs: fast path against the parser', () => {
  it('gives the same result for every combination of tricky prefixes, hosts and paths, with each suffix', () => {
    let fast = 0;
    let n = 0;
    const diffs: string[] = [];
    for (const prefix of PREFIXES) {
      for (const host of HOSTS) {
        for (const path of PATHS) {
          // Every combination bare, and with one of the suffixes in turn.
          for (const suffix of ['', SUFFIXES[n++ % SUFFIXES.length]!]) {
            const input = prefix + host + path + suffix;
            if (takesFastPath(input)) fast++;
            diffs.push(...differences(input));
          }
        }
      }
    }
    expect(diffs.slice(0, 20)).toEqual([]);
    // The fast path is really exercised (not a comparison of the parser with itself).
    expect(fast).toBeGreaterThan(1000);
  });

  it('gives the same result for every suffix on the common shapes', () => {
    for (const input of ['https://www.network.com/company/Acme', 'network.com/posts/a-activity-1/', 'https://network.com/jobs/view/1']) {
      for (const suffix of SUFFIXES) expectSameBothWays(input + suffix);
    }
  });

  it.each([
    '  https://network.com/company/acme  ',
    ' network.com/company/acme',
    'network.com/company/acme\n',
    'network.com/company/acme\u00a0',
    '',
    '   ',
    'acme corp',
    'mailto:someone@network.com',
    'javascript:alert(1)',
    'https://network.com/company/acme' + '/x'.repeat(1010),
    'network.com/company/' + 'a'.repeat(2048),
    'https://network.com\\company\\acme',
    'https://network.com/company/acme?x=' + 'y'.repeat(3000),
    'https://network.com/company/acme#frag/with/slashes',
    'https://network.com?/company/acme',
    'https://network.com#/company/acme',
    'network.com/company/acme?@evil.com',
    'network.com@evil.com/company/acme',
    'https://network.com/company/acme/%',
  ])('gives the same result for %j', (input) => {
    expectSameBothWays(input);
  });

  it('takes the fast path for the shapes of real inputs', () => {
    for (const input of [
      'https://www.network.com/company/fill-co-0',
      'network.com/company/fill-co-1/',
      'https://network.com/company/fill-co-2/about/?trk=x',
      'https://www.network.com/posts/tag-user3_topic-activity-7100000000000000003-ab3',
      'network.com/feed/update/urn:li:activity:7123456789012345678/',
      'https://network.com/jobs/view/3812345678/?refId=abc',
    ]) {
      expect(takesFastPath(input)).toBe(true);
      expectSameBothWays(input);
    }
    for (const input of ['network.com./company/a', 'network.com:8443/company/a', 'https://network.com/company/a/../b', 'network.com/company/soci%C3%A9t%C3%A9']) {
      expect(takesFastPath(input)).toBe(false);
    }
  });
});
