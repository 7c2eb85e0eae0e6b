import { describe, expect, it } from 'vitest';
import { isInt, isStringArray, isUrl, useDataSandbox } from './sandbox-data-helpers.ts';

// similar-companies: every field, the URL keys, the filters and the paging.
const { similar } = useDataSandbox();

function checkAddress(a: any): void {
  for (const k of ['city', 'country', 'line1', 'postalCode']) expect(typeof a[k], k).toBe('string');
  expect(a.city).toBe(a.city.toLowerCase());
  expect(a.country).toBe(a.country.toLowerCase());
  expect(a.geographicArea === null || (typeof a.geographicArea === 'string' && a.geographicArea === a.geographicArea.toLowerCase())).toBe(true);
  expect(a.line2 === null || typeof a.line2 === 'string').toBe(true);
  expect(a.isPrimary === null || typeof a.isPrimary === 'boolean').toBe(true);
}

function checkCompany(c: any): void {
  expect(c.url).toMatch(/^https:\/\/www\.network\.com\/company\/[a-z0-9-]+$/);
  expect(c.universalName).toBe(c.url.split('/').pop());
  expect(typeof c.name).toBe('string');
  expect(['PUBLIC_COMPANY', 'PRIVATELY_HELD']).toContain(c.type);
  expect(isInt(c.objectUrn)).toBe(true);
  expect(c.description).toContain('\n');
  expect(c.phone).toMatch(/^\+?\d+$/);
  expect(c.followers === null || isInt(c.followers)).toBe(true);
  expect(isUrl(c.website)).toBe(true);
  expect(isUrl(c.logo)).toBe(true);
  expect(c.cover === null || isUrl(c.cover)).toBe(true);
  expect(c.tagline === null || typeof c.tagline === 'string').toBe(true);
  expect(String(c.foundedYear)).toMatch(/^\d{4}$/);
  expect(isInt(c.staff.total) && isInt(c.staff.range.start) && isInt(c.staff.range.end)).toBe(true);
  expect(c.staff.range.start).toBeLessThanOrEqual(c.staff.total);
  expect(c.staff.total).toBeLessThanOrEqual(c.staff.range.end);
  checkAddress(c.locations.headquarter);
  expect([true, null]).toContain(c.locations.headquarter.isPrimary);
  expect(Array.isArray(c.locations.other)).toBe(true);
  c.locations.other.forEach(checkAddress);
  for (const other of c.locations.other) expect([false, null]).toContain(other.isPrimary);
  expect(c.fundingData === null || typeof c.fundingData === 'object').toBe(true);
  expect(c.specialities === null || isStringArray(c.specialities)).toBe(true);
  expect(isStringArray(c.industries)).toBe(true);
  expect(c.hashtags === null || isStringArray(c.hashtags)).toBe(true);
  expect(c.relevancy.score).toBeGreaterThan(0);
  expect(c.relevancy.score).toBeLessThan(1);
  expect(['A', 'B', 'C', 'D']).toContain(c.relevancy.value);
}

describe('sandbox data', () => {
  it('fills every company field with the right type, and uses both sides of the nullable ones', async () => {
    const companies: any[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await similar({ url: `https://www.network.com/company/sample-${i}`, page: 1, num: 50 });
      expect(r.status).toBe(200);
      companies.push(...r.body.data.content);
    }
    companies.forEach(checkCompany);
    for (const key of ['followers', 'cover', 'tagline', 'fundingData', 'specialities', 'hashtags']) {
      expect(companies.some((c) => c[key] === null), `${key} null somewhere`).toBe(true);
      expect(companies.some((c) => c[key] !== null), `${key} set somewhere`).toBe(true);
    }
    expect(new Set(companies.map((c) => c.type)).size).toBe(2);
    expect(companies.some((c) => c.locations.headquarter.geographicArea === null)).toBe(true);
    // Empty lists beside null ones, and every kind of isPrimary and line2 a client must store.
    for (const key of ['industries', 'specialities', 'hashtags']) {
      expect(companies.some((c) => Array.isArray(c[key]) && c[key].length === 0), `${key} [] somewhere`).toBe(true);
    }
    expect(companies.some((c) => c.locations.other.length === 0)).toBe(true);
    const addresses = companies.flatMap((c) => [c.locations.headquarter, ...c.locations.other]);
    for (const isPrimary of [true, false, null]) expect(addresses.some((a) => a.isPrimary === isPrimary), `isPrimary ${isPrimary}`).toBe(true);
    for (const line2 of ['suite', '', null]) {
      expect(addresses.some((a) => (line2 === 'suite' ? /^suite \d+$/.test(a.line2) : a.line2 === line2)), `line2 ${line2}`).toBe(true);
    }
    expect(companies.some((c) => isInt(c.followers))).toBe(true);
  });

  it('keys company data by URL spelling-insensitively; filters narrow the ranking by HQ country and staff', async () => {
    const base = (await similar({ url: 'https://www.network.com/company/acme-robotics/', page: 1, num: 50 })).body;
    const variant = (await similar({ url: 'network.com/company/acme-robotics', account: {}, page: 1, num: 50 })).body;
    expect(variant.data).toEqual(base.data);
    // Empty filter lists filter nothing, as the client's request keys also say.
    const emptyLists = { location: [], employeeSize: { type: 'RANGE', range: [] } };
    expect((await similar({ url: 'network.com/company/acme-robotics', account: emptyLists, page: 1, num: 50 })).body.data).toEqual(base.data);

    const filtered = async (account: object, url = 'network.com/company/acme-robotics') =>
      similar({ url, account, page: 1, num: 1000 });
    const europe = ['germany', 'france', 'spain', 'united kingdom'];
    const sizes = [{ start: 11, end: 50 }, { start: 501, end: 5000 }];
    let sawNarrower = false;
    for (let i = 0; i < 10; i++) {
      const url = `network.com/company/filter-co-${i}`;
      const all = (await filtered({}, url)).body.data.content as any[];
      const byLocation = await filtered({ location: europe }, url);
      const bySize = await filtered({ employeeSize: { type: 'RANGE', range: sizes } }, url);
      const both = await filtered({ location: europe, employeeSize: { type: 'RANGE', range: sizes } }, url);
      for (const [r, location, size] of [[byLocation, true, false], [bySize, false, true], [both, true, true]] as const) {
        if (r.status === 404) {
          expect(r.body).toEqual({ error: true, message: 'No similar companies found' });
          continue;
        }
        const list = r.body.data.content as any[];
        expect(list.length).toBeGreaterThan(0);
        // Never longer than the unfiltered list; still ranked by relevancy.
        expect(list.length).toBeLessThanOrEqual(all.length);
        expect(list.map((c) => c.relevancy.score)).toEqual(list.map((c) => c.relevancy.score).sort((a, b) => b - a));
        for (const c of list) {
          if (location) expect(['de', 'fr', 'es', 'gb']).toContain(c.locations.headquarter.country);
          if (size) expect(sizes.some((x) => c.staff.total >= x.start && c.staff.total <= x.end), `${c.staff.total}`).toBe(true);
          // A company the unfiltered list holds too is the same record there, relevancy included.
          const same = all.find((a) => a.url === c.url);
          if (same) expect(c).toEqual(same);
        }
        if (list.length < all.length || all.some((c) => !list.some((l) => l.url === c.url))) sawNarrower = true;
      }
      // Narrowing by both is narrowing the location-filtered ranking by size.
      if (byLocation.status === 200) {
        const expected = (byLocation.body.data.content as any[]).filter((c) => sizes.some((x) => c.staff.total >= x.start && c.staff.total <= x.end));
        if (both.status === 200) expect(both.body.data.content.slice(0, expected.length)).toEqual(expected.slice(0, both.body.data.content.length));
      }
    }
    expect(sawNarrower).toBe(true);

    // Countries by lower-case name or code, in any order and case: one list.
    const de = (await filtered({ location: ['germany', 'france'] })).body;
    expect((await filtered({ location: ['France', ' Germany '] })).body.data).toEqual(de.data);
    expect((await filtered({ location: ['fr', 'de'] })).body.data).toEqual(de.data);
    // A filter that leaves nothing is the spec's 404, like a company without data.
    const none = await filtered({ employeeSize: { type: 'RANGE', range: [{ start: 0, end: 1 }] } });
    expect(none.status).toBe(404);
    expect(none.body).toEqual({ error: true, message: 'No similar companies found' });
    expect((await filtered({ location: ['atlantis'] })).status).toBe(404);
  });

  it('pages a filtered list like any other, 404 past its end', async () => {
    const url = 'network.com/company/paging-filtered';
    const account = { location: ['united states', 'canada'] };
    const all = (await similar({ url, account, page: 1, num: 1000 })).body.data.content as any[];
    expect(all.length).toBeGreaterThan(2);
    const collected: any[] = [];
    const lastPage = Math.ceil(all.length / 2);
    for (let page = 1; page <= lastPage; page++) {
      const r = await similar({ url, account, page, num: 2 });
      expect(r.status).toBe(200);
      expect(r.body.data).toMatchObject({ number: page - 1, first: page === 1, empty: false });
      collected.push(...r.body.data.content);
    }
    expect(collected).toEqual(all);
    expect((await similar({ url, account, page: lastPage + 1, num: 2 })).status).toBe(404);
  });

  it('pages similar companies and answers 404 past the end', async () => {
    const url = 'network.com/company/paging-co';
    const all = (await similar({ url, page: 1, num: 1000 })).body.data.content as any[];
    expect(all.length).toBeGreaterThanOrEqual(3);
    expect(all.length).toBeLessThanOrEqual(45);
    const scores = all.map((c) => c.relevancy.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    const collected: any[] = [];
    const lastPage = Math.ceil(all.length / 4);
    for (let page = 1; page <= lastPage; page++) {
      const r = await similar({ url, page, num: 4 });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ success: true, page, num: 4, data: { number: page - 1, first: page === 1, empty: false } });
      expect(typeof r.body.message).toBe('string');
      collected.push(...r.body.data.content);
    }
    expect(collected).toEqual(all);
    const past = await similar({ url, page: lastPage + 1, num: 4 });
    expect(past.status).toBe(404);
    expect(past.body).toEqual({ error: true, message: 'No similar companies found' });
    const defaults = (await similar({ url })).body;
    expect(defaults).toMatchObject({ page: 1, num: 10 });
    expect(defaults.data.content).toEqual(all.slice(0, 10));
  });
});
