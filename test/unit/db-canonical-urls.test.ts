import { describe, expect, it } from 'vitest';
import { canonicalCompanyUrl, canonicalJobUrl, canonicalPostUrl, canonicalUrl, NETWORK_HOST_ENV, networkHost } from '../../src/urls/canonical.ts';
import { DEFAULT_NETWORK_HOST } from '../../src/spec/types.ts';

const HOST = DEFAULT_NETWORK_HOST;

function url(r: ReturnType<typeof canonicalUrl>): string {
  if (!r.ok) throw new Error(`expected ok, got: ${r.reason}`);
  return r.url;
}
function reason(r: ReturnType<typeof canonicalUrl>): string {
  if (r.ok) throw new Error(`expected a failure, got ${r.url}`);
  return r.reason;
}
const company = (input: unknown, host = HOST) => canonicalCompanyUrl(input, host);
const post = (input: unknown, host = HOST) => canonicalPostUrl(input, host);

describe('canonicalCompanyUrl', () => {
  it.each([
    ['https://www.network.com/company/acme', 'https://www.network.com/company/acme'],
    ['network.com/company/acme', 'https://www.network.com/company/acme'],
    ['www.network.com/company/acme/', 'https://www.network.com/company/acme'],
    ['http://WWW.Network.COM/company/Acme-Corp', 'https://www.network.com/company/acme-corp'],
    ['  https://network.com/company/acme/about/?trk=x#top  ', 'https://www.network.com/company/acme'],
    ['https://network.com/company/acme/posts', 'https://www.network.com/company/acme'],
    ['//network.com/company/acme', 'https://www.network.com/company/acme'],
    ['https://network.com./company/acme', 'https://www.network.com/company/acme'],
    ['https://network.com/Company/ACME', 'https://www.network.com/company/acme'],
    ['https://network.com/company/12345', 'https://www.network.com/company/12345'],
    // Country and mobile editions are the same site.
    ['https://de.network.com/company/acme', 'https://www.network.com/company/acme'],
    ['fr.network.com/company/acme/', 'https://www.network.com/company/acme'],
    ['https://m.network.com/company/acme', 'https://www.network.com/company/acme'],
    ['https://mobile.network.com/company/Acme', 'https://www.network.com/company/acme'],
    ['HTTPS://UK.NETWORK.COM/company/acme', 'https://www.network.com/company/acme'],
  ])('%s -> %s', (input, expected) => {
    expect(url(company(input))).toBe(expected);
  });

  it('folds non-ASCII slugs to one encoding whatever the input spelling', () => {
    const a = url(company('network.com/company/Société-Générale'));
    const b = url(company('https://www.network.com/company/soci%C3%A9t%C3%A9-g%c3%a9n%c3%a9rale/'));
    expect(a).toBe('https://www.network.com/company/soci%C3%A9t%C3%A9-g%C3%A9n%C3%A9rale');
    expect(b).toBe(a);
  });

  it('is idempotent', () => {
    const once = url(company('de.network.com/company/Acme/about'));
    expect(url(company(once))).toBe(once);
  });

  it.each([
    ['', /empty/],
    ['   ', /empty/],
    ['acme corp', /spaces/],
    ['acme', /host shape/],
    ['ftp://network.com/company/acme', /scheme ftp/],
    ['mailto:someone@network.com', /not a URL|host shape/],
    ['https://user:pw@network.com/company/acme', /credentials/],
    ['https://user@network.com/company/acme', /credentials/],
    ['https://127.0.0.1/company/acme', /IP address/],
    ['https://[::1]/company/acme', /IP address/],
    ['https://network.com/in/someone', /not a company page/],
    ['https://network.com/company/', /not a company page/],
    ['https://network.com', /not a company page/],
    ['https://network.com/company/%E0%A4%A', /percent-encoding/],
    // An encoded slash is valid percent-encoding: the name decodes to a path (a dot segment after it), not one name.
    ['https://www.network.com/company/acme%2F..', /^company name in the URL holds an encoded slash \(%2F\): it reads as the path "acme\/\.\.", not one name$/],
    ['https://network.com/company/acme%2fother', /encoded slash \(%2F\): it reads as the path "acme\/other"/],
    // Other hosts: named, with the host expected.
    ['https://acme.com/company/about', /^not on network\.com \(host acme\.com; expected https:\/\/www\.network\.com\/company/],
    ['https://network.com.evil.com/company/x', /not on network\.com \(host network\.com\.evil\.com/],
    ['https://evilnetwork.com/company/x', /not on network\.com/],
    ['https://api.network.com/company/x', /not on network\.com \(host api\.network\.com/],
    ['https://de.m.network.com/company/x', /not on network\.com/],
    ['https://network.com:8443/company/x', /not on network\.com \(host network\.com:8443/],
    ['https://nеtwork.com/company/x', /not on network\.com \(host xn--.*internationalized look-alike/],
    ['https://xn--ntwork-3ye.com/company/x', /internationalized look-alike/],
    ['https://network.com/company/acme%00', /control character/],
    ['https://network.com/company/a%1fb', /control character/],
    ['https://evil.com\\@network.com/company/x', /not on network\.com \(host evil\.com/],
  ])('rejects %j', (input, expected) => {
    expect(reason(company(input))).toMatch(expected);
  });

  it('rejects non-text input', () => {
    expect(reason(company(undefined))).toMatch(/not text/);
    expect(reason(company(42))).toMatch(/not text/);
  });

  it('follows the configured host', () => {
    expect(url(company('de.brand.example/company/Acme', 'brand.example'))).toBe('https://www.brand.example/company/acme');
    expect(reason(company('network.com/company/acme', 'brand.example'))).toMatch(/not on brand\.example \(host network\.com/);
  });
});

describe('canonicalPostUrl', () => {
  it.each([
    [
      'https://www.network.com/posts/jane-doe_Great-News-activity-7123456789012345678-AbCd/?utm_source=share',
      'https://www.network.com/posts/jane-doe_Great-News-activity-7123456789012345678-AbCd',
    ],
    ['network.com/feed/update/urn:li:activity:7123456789012345678/', 'https://www.network.com/feed/update/urn:li:activity:7123456789012345678'],
    ['de.network.com/feed/update/urn:li:share:7123/', 'https://www.network.com/feed/update/urn:li:share:7123'],
    ['https://m.network.com/feed/update/urn:li:ugcPost:7123', 'https://www.network.com/feed/update/urn:li:ugcPost:7123'],
    ['https://network.com/embed/feed/update/urn%3Ali%3AugcPost%3A7123', 'https://www.network.com/embed/feed/update/urn%3Ali%3AugcPost%3A7123'],
    ['https://network.com/pulse/some-article-title', 'https://www.network.com/pulse/some-article-title'],
    ['https://network.com/posts/jane_hello', 'https://www.network.com/posts/jane_hello'],
  ])('%s -> %s', (input, expected) => {
    expect(url(post(input))).toBe(expected);
  });

  it.each([
    ['https://network.com/company/acme', /not a post/],
    ['https://www.network.com/in/jane/recent-activity/all/', /not a post.*activity feed/],
    ['https://network.com/in/jane/recent-activity/shares/', /not a post/],
    ['https://network.com/feed/update/', /not a post/],
    ['https://network.com/posts', /not a post/],
    ['', /empty/],
    ['//evil.com/posts/y', /not on network\.com \(host evil\.com; expected https:\/\/www\.network\.com\/posts/],
    ['https://evil.com/posts/x-activity-1', /not on network\.com/],
    ['https://nеtwork.com/posts/x-activity-1', /internationalized look-alike/],
    ['https://network.com/posts/x%00-activity-1', /control character/],
    ['https://network.com/posts/x\u0000y-activity-1', /control character/],
    ['https://a:b@network.com/posts/x-activity-1', /credentials/],
    ['https://network.com:444/posts/x-activity-1', /not on network\.com \(host network\.com:444/],
    ['https://10.0.0.1/posts/x-activity-1', /IP address/],
  ])('rejects %j', (input, expected) => {
    expect(reason(post(input))).toMatch(expected);
  });
});

describe('canonicalJobUrl', () => {
  it('keeps /jobs/view/<id> on www., drops tracking query and trailing parts', () => {
    expect(url(canonicalJobUrl('https://www.network.com/jobs/view/Engineer-at-Acme-3812345678/?refId=abc&trk=x', HOST))).toBe(
      'https://www.network.com/jobs/view/Engineer-at-Acme-3812345678',
    );
    expect(url(canonicalJobUrl('https://de.network.com/jobs/view/3812345678/apply', HOST))).toBe(
      'https://www.network.com/jobs/view/3812345678',
    );
  });
  it('rejects other pages and hosts', () => {
    expect(reason(canonicalJobUrl('https://network.com/jobs/search?keywords=x', HOST))).toMatch(/not a job listing/);
    expect(reason(canonicalJobUrl('https://jobs.example.org/jobs/view/1', HOST))).toMatch(/not on network\.com/);
  });
});

describe('canonicalUrl', () => {
  it('normalizes scheme, host, query, fragment, trailing slash and escape case; other hosts keep their host', () => {
    expect(url(canonicalUrl('HTTP://WWW.Example.org/Some/Path/?q=1#x', HOST))).toBe('https://example.org/Some/Path');
    expect(url(canonicalUrl('example.org', HOST))).toBe('https://example.org');
    expect(url(canonicalUrl('example.org:8443/a/%c3%a9', HOST))).toBe('https://example.org:8443/a/%C3%A9');
    expect(url(canonicalUrl('https://example.org:443/a', HOST))).toBe('https://example.org/a');
  });
  it("puts the network's pages on www.", () => {
    expect(url(canonicalUrl('https://network.com/in/Jane', HOST))).toBe('https://www.network.com/in/Jane');
    expect(url(canonicalUrl('de.network.com/in/Jane/', HOST))).toBe('https://www.network.com/in/Jane');
  });
});

describe('networkHost', () => {
  it('defaults to the spec host and reads the environment variable', () => {
    expect(networkHost({})).toBe('network.com');
    expect(networkHost({ [NETWORK_HOST_ENV]: ' WWW.Brand.Example. ' })).toBe('brand.example');
  });
  it.each(['https://brand.example', 'brand.example/x', 'brand.example:8443', 'localhost', 'a b.com'])('refuses %j', (value) => {
    expect(() => networkHost({ [NETWORK_HOST_ENV]: value })).toThrow(new RegExp(NETWORK_HOST_ENV));
  });
});
