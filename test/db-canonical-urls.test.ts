import { describe, expect, it } from 'vitest';
import { canonicalCompanyUrl, canonicalJobUrl, canonicalPostUrl, canonicalUrl } from '../src/urls/canonical.ts';

function url(r: ReturnType<typeof canonicalUrl>): string {
  if (!r.ok) throw new Error(`expected ok, got: ${r.reason}`);
  return r.url;
}
function reason(r: ReturnType<typeof canonicalUrl>): string {
  if (r.ok) throw new Error(`expected a failure, got ${r.url}`);
  return r.reason;
}

describe('canonicalCompanyUrl', () => {
  it.each([
    ['https://www.network.com/company/acme', 'https://network.com/company/acme'],
    ['network.com/company/acme', 'https://network.com/company/acme'],
    ['www.network.com/company/acme/', 'https://network.com/company/acme'],
    ['http://WWW.Network.COM/company/Acme-Corp', 'https://network.com/company/acme-corp'],
    ['  https://network.com/company/acme/about/?trk=x#top  ', 'https://network.com/company/acme'],
    ['https://network.com/company/acme/posts', 'https://network.com/company/acme'],
    ['//network.com/company/acme', 'https://network.com/company/acme'],
    ['https://network.com./company/acme', 'https://network.com/company/acme'],
    ['https://de.network.com/company/acme', 'https://de.network.com/company/acme'],
    ['https://network.com/Company/ACME', 'https://network.com/company/acme'],
    ['https://network.com/company/12345', 'https://network.com/company/12345'],
  ])('%s -> %s', (input, expected) => {
    expect(url(canonicalCompanyUrl(input))).toBe(expected);
  });

  it('folds non-ASCII slugs to one encoding whatever the input spelling', () => {
    const a = url(canonicalCompanyUrl('network.com/company/Société-Générale'));
    const b = url(canonicalCompanyUrl('https://www.network.com/company/soci%C3%A9t%C3%A9-g%c3%a9n%c3%a9rale/'));
    expect(a).toBe('https://network.com/company/soci%C3%A9t%C3%A9-g%C3%A9n%C3%A9rale');
    expect(b).toBe(a);
  });

  it('is idempotent', () => {
    const once = url(canonicalCompanyUrl('WWW.network.com/company/Acme/about'));
    expect(url(canonicalCompanyUrl(once))).toBe(once);
  });

  it.each([
    ['', /empty/],
    ['   ', /empty/],
    ['acme corp', /spaces/],
    ['acme', /host shape/],
    ['ftp://network.com/company/acme', /scheme ftp/],
    ['mailto:someone@network.com', /not a URL|host shape/],
    ['https://user:pw@network.com/company/acme', /credentials/],
    ['https://127.0.0.1/company/acme', /IP address/],
    ['https://network.com/in/someone', /not a company page/],
    ['https://network.com/company/', /not a company page/],
    ['https://network.com', /not a company page/],
    ['https://network.com/company/%E0%A4%A', /percent-encoding/],
  ])('rejects %j', (input, expected) => {
    expect(reason(canonicalCompanyUrl(input))).toMatch(expected);
  });

  it('rejects non-text input', () => {
    expect(reason(canonicalCompanyUrl(undefined))).toMatch(/not text/);
    expect(reason(canonicalCompanyUrl(42))).toMatch(/not text/);
  });
});

describe('canonicalPostUrl', () => {
  it('keeps the path case, drops query and trailing slash, folds www', () => {
    expect(
      url(canonicalPostUrl('https://www.network.com/posts/jane-doe_Great-News-activity-7123456789012345678-AbCd/?utm_source=share')),
    ).toBe('https://network.com/posts/jane-doe_Great-News-activity-7123456789012345678-AbCd');
    expect(url(canonicalPostUrl('network.com/feed/update/urn:li:activity:7123456789012345678/'))).toBe(
      'https://network.com/feed/update/urn:li:activity:7123456789012345678',
    );
  });
  it('rejects a non-post page', () => {
    expect(reason(canonicalPostUrl('https://network.com/company/acme'))).toMatch(/not a post/);
    expect(reason(canonicalPostUrl(''))).toMatch(/empty/);
  });
});

describe('canonicalJobUrl', () => {
  it('keeps /jobs/view/<id>, drops tracking query and trailing parts', () => {
    expect(url(canonicalJobUrl('https://www.network.com/jobs/view/Engineer-at-Acme-3812345678/?refId=abc&trk=x'))).toBe(
      'https://network.com/jobs/view/Engineer-at-Acme-3812345678',
    );
    expect(url(canonicalJobUrl('https://network.com/jobs/view/3812345678/apply'))).toBe(
      'https://network.com/jobs/view/3812345678',
    );
  });
  it('rejects other pages', () => {
    expect(reason(canonicalJobUrl('https://network.com/jobs/search?keywords=x'))).toMatch(/not a job listing/);
  });
});

describe('canonicalUrl', () => {
  it('normalizes scheme, host, query, fragment, trailing slash and escape case', () => {
    expect(url(canonicalUrl('HTTP://WWW.Example.org/Some/Path/?q=1#x'))).toBe('https://example.org/Some/Path');
    expect(url(canonicalUrl('example.org'))).toBe('https://example.org');
    expect(url(canonicalUrl('example.org:8443/a/%c3%a9'))).toBe('https://example.org:8443/a/%C3%A9');
    expect(url(canonicalUrl('https://example.org:443/a'))).toBe('https://example.org/a');
  });
});
