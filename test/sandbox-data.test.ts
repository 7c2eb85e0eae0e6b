import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/sandbox/server.ts';
import { REFERENCE_DATE_MS } from '../src/sandbox/data/reference-date.ts';

// Real HTTP against a sandbox on a free port, with the node global fetch (not the project's client).
const TOKEN = 'sandbox-token';
let sb: Sandbox;
let other: Sandbox;

beforeAll(async () => {
  sb = await startSandbox({ tokens: { [TOKEN]: 1e9 }, notFoundRate: 0 });
  other = await startSandbox({ tokens: { [TOKEN]: 1e9 }, notFoundRate: 0 });
});
afterAll(async () => {
  await sb.stop();
  await other.stop();
});

interface Answer {
  status: number;
  text: string;
  body: any;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: unknown = undefined;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, text, body };
}

function similar(payload: unknown, on: Sandbox = sb): Promise<Answer> {
  return fetch(`${on.url}/v1/api/similar-companies`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(payload),
  }).then(answer);
}

function get(path: string, params: Record<string, string>, on: Sandbox = sb): Promise<Answer> {
  const qs = new URLSearchParams(params).toString();
  return fetch(`${on.url}/v1/api/${path}${qs ? `?${qs}` : ''}`, { headers: { authorization: `Bearer ${TOKEN}` } }).then(answer);
}

/** The body without the counters, which change with every call. */
function content(body: Record<string, unknown>): Record<string, unknown> {
  const { total_credits, credits_used, credits_remaining, ...rest } = body;
  expect(typeof total_credits).toBe('number');
  expect(credits_remaining).toBeCloseTo((total_credits as number) - (credits_used as number), 9);
  return rest;
}

const isInt = (v: unknown): boolean => Number.isSafeInteger(v);
const isUrl = (v: unknown): boolean => typeof v === 'string' && /^https:\/\/[a-z0-9.-]+(\/\S*)?$/.test(v);
const isStringArray = (v: unknown): boolean => Array.isArray(v) && v.every((s) => typeof s === 'string');

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
  it('answers the same request with the same body, in another sandbox with the same seed too', async () => {
    const payload = { url: 'https://www.network.com/company/acme-robotics', account: {}, page: 1, num: 5 };
    const [a, b, c] = [await similar(payload), await similar(payload), await similar(payload, other)];
    expect(a.status).toBe(200);
    expect(content(a.body)).toEqual(content(b.body));
    expect(content(a.body)).toEqual(content(c.body));
    const post = 'https://www.network.com/posts/jane-doe_launch-activity-7180000000000000001-AbCd';
    expect(content((await get('post-details', { url: post })).body)).toEqual(content((await get('post-details', { url: post }, other)).body));
    const q = { keywords: 'data engineer', location: 'berlin', start: '0' };
    expect(content((await get('search-jobs', q)).body)).toEqual(content((await get('search-jobs', q, other)).body));
  });

  it('gives other data with another seed', async () => {
    const seeded = await startSandbox({ seed: 7, tokens: { [TOKEN]: 100 }, notFoundRate: 0 });
    try {
      const payload = { url: 'network.com/company/acme-robotics', page: 1, num: 5 };
      expect(content((await similar(payload, seeded)).body)).not.toEqual(content((await similar(payload)).body));
    } finally {
      await seeded.stop();
    }
  });

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

  it('answers post details with every field, ids from both URL forms and stable ids otherwise', async () => {
    const id = '7181234567890123456';
    const a = await get('post-details', { url: `https://www.network.com/posts/jane-doe_we-are-hiring-activity-${id}-Xy3z` });
    const b = await get('post-details', { url: `https://www.network.com/feed/update/urn:li:activity:${id}/` });
    expect(a.status).toBe(200);
    expect(a.body.PostId).toBe(`activity-${id}`);
    expect(content(b.body)).toEqual(content(a.body));
    const odd = await get('post-details', { url: 'https://www.network.com/posts/someone_no-id-here' });
    expect(odd.body.PostId).toMatch(/^activity-\d{19}$/);
    expect((await get('post-details', { url: 'https://www.network.com/posts/someone_no-id-here' })).body.PostId).toBe(odd.body.PostId);

    const posts: any[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await get('post-details', { url: `https://www.network.com/feed/update/urn:li:activity:71800000000000${String(i).padStart(5, '0')}` });
      expect(r.status).toBe(200);
      posts.push(r.body);
    }
    for (const p of posts) {
      expect(p.success).toBe(true);
      expect(typeof p.message).toBe('string');
      expect(typeof p.author.name).toBe('string');
      expect(typeof p.author.headline).toBe('string');
      expect(isUrl(p.author.network_url)).toBe(true);
      expect(p.author.profile_image === '' || isUrl(p.author.profile_image)).toBe(true);
      expect(p.post.timestamp).toMatch(/^\d{2}-\d{2}-\d{4}$/);
      expect(p.post.text_content).toContain('\n');
      expect(p.post.hashtags === null || isStringArray(p.post.hashtags)).toBe(true);
      expect(typeof p.post.post_media_description).toBe('string');
      expect(p.post.post_media_url.length).toBeLessThanOrEqual(4);
      expect(p.post.post_media_url.every(isUrl)).toBe(true);
      expect(isInt(p.engagement.reactions) && isInt(p.engagement.comments_count)).toBe(true);
    }
    expect(posts.some((p) => /[^\x00-\x7f]/.test(p.post.text_content))).toBe(true);
    expect(posts.some((p) => /\p{Extended_Pictographic}/u.test(p.post.text_content))).toBe(true);
    expect(posts.some((p) => p.author.profile_image === '')).toBe(true);
    expect(posts.some((p) => p.post.hashtags === null) && posts.some((p) => p.post.hashtags?.length > 0)).toBe(true);
    expect(posts.some((p) => Array.isArray(p.post.hashtags) && p.post.hashtags.length === 0)).toBe(true);
    expect(posts.some((p) => p.post.post_media_url.length === 0)).toBe(true);
    expect(posts.some((p) => p.post.post_media_url.length > 0 && p.post.post_media_description === '')).toBe(true);
    expect(new Set(posts.map((p) => p.post.post_media_url.length)).size).toBeGreaterThan(2);
  });

  it('answers job searches with every field, matching descriptions and fixed-reference dates', async () => {
    const r = await get('search-jobs', { keywords: 'typescript', jobTypes: 'full time', experienceLevels: 'associate', start: '0' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ success: true, currentPage: 0 });
    expect(r.body.numResults).toBe(r.body.results.length);
    for (const j of r.body.results) {
      for (const k of ['title', 'company_name', 'location', 'posted_date', 'description_html', 'description']) expect(typeof j[k], k).toBe('string');
      expect(j.company_link).toMatch(/^https:\/\/www\.network\.com\/company\/[a-z0-9-]+$/);
      expect(j.url).toMatch(/^https:\/\/www\.network\.com\/jobs\/view\/\d+$/);
      expect(isUrl(j.company_logo_url)).toBe(true);
      expect(typeof j.is_actively_hiring).toBe('boolean');
      expect(j.posted_date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(j.posted_timestamp).toBe(Date.parse(`${j.posted_date}T00:00:00Z`) / 1000);
      const ageDays = (REFERENCE_DATE_MS - j.posted_timestamp * 1000) / 86_400_000;
      expect(ageDays).toBeGreaterThanOrEqual(0);
      expect(ageDays).toBeLessThanOrEqual(60);
      expect(j.criteria['Employment type']).toBe('Full-time');
      expect(j.criteria['Seniority level']).toBe('Associate');
      expect(typeof j.criteria.Industries).toBe('string');
      expect(typeof j.criteria['Job function']).toBe('string');
      // The plain text is the HTML without tags and entities, one line per paragraph or list item.
      expect(j.description_html).toMatch(/<p>/);
      expect(j.description).not.toMatch(/<\/?[a-z]+[^>]*>|&[a-z#0-9]+;/i);
      expect(j.description).toContain('\n');
      for (const [, item] of j.description_html.matchAll(/<li>(.*?)<\/li>/g)) {
        expect(j.description.split('\n')).toContain(item.replace(/&amp;/g, '&').replace(/&#39;/g, "'").replace(/&quot;/g, '"'));
      }
    }
    const recent = await get('search-jobs', { keywords: 'typescript', timePosted: 'past_24hrs' });
    for (const j of recent.body.results) expect(REFERENCE_DATE_MS - j.posted_timestamp * 1000).toBeLessThanOrEqual(86_400_000);
  });

  it('pages jobs by record offset and answers 404 past the end', async () => {
    const q = { keywords: 'paging', location: 'remote' };
    const first = (await get('search-jobs', q)).body;
    const all: any[] = [...first.results];
    let start = 10;
    for (;;) {
      const r = await get('search-jobs', { ...q, start: String(start) });
      if (r.status === 404) {
        expect(r.body).toEqual({ message: 'No results found for the query' });
        break;
      }
      expect(r.body.currentPage).toBe(start / 10);
      expect(r.body.numResults).toBe(r.body.results.length);
      all.push(...r.body.results);
      start += 10;
    }
    expect(all.length).toBeGreaterThan(0);
    expect(all.length).toBeLessThanOrEqual(60);
    expect(start).toBe(Math.ceil(all.length / 10) * 10);
    const offset = await get('search-jobs', { ...q, start: '3' });
    expect(offset.body.currentPage).toBe(0);
    expect(offset.body.results).toEqual(all.slice(3, 13));
    // Parameter order, list order and case do not change the search.
    const a = await get('search-jobs', { jobTypes: 'part time,full time', keywords: 'Node' });
    const b = await get('search-jobs', { keywords: 'node', jobTypes: 'full time, part time' });
    expect(content(a.body)).toEqual(content(b.body));
  });

  it('honors workplaceTypes and companyIds: every job is of a wanted type, at a wanted company', async () => {
    const types = async (workplaceTypes: string) => {
      const r = await get('search-jobs', { keywords: 'designer', workplaceTypes });
      expect(r.status).toBe(200);
      return new Set((r.body.results as any[]).map((j) => /\((Remote|Hybrid|On-site)\)$/.exec(j.location)?.[1] ?? 'none'));
    };
    expect(await types('remote')).toEqual(new Set(['Remote']));
    expect(await types('on site,hybrid')).toEqual(new Set(['On-site', 'Hybrid']));
    expect(await types('Hybrid')).toEqual(new Set(['Hybrid']));
    // Without the filter, any type or none.
    const any = (await get('search-jobs', { keywords: 'designer' })).body.results as any[];
    expect(new Set(any.map((j) => /\((Remote|Hybrid|On-site)\)$/.exec(j.location)?.[1] ?? 'none')).size).toBeGreaterThan(2);

    const companies = async (params: Record<string, string>) => {
      const r = await get('search-jobs', params);
      expect(r.status).toBe(200);
      return new Set((r.body.results as any[]).map((j) => `${j.company_name} ${j.company_link}`));
    };
    const one = await companies({ keywords: 'engineer', companyIds: '1441' });
    expect(one.size).toBe(1);
    // An id is the same company in every search; several ids share the results between them.
    expect(await companies({ keywords: 'analyst', companyIds: '1441', location: 'paris' })).toEqual(one);
    const two = await companies({ keywords: 'engineer', companyIds: '1441, 2003' });
    const other = await companies({ keywords: 'engineer', companyIds: '2003' });
    expect(two).toEqual(new Set([...one, ...other]));
    const bad = await get('search-jobs', { keywords: 'engineer', companyIds: '1441,acme' });
    expect(bad.status).toBe(400);
  });

  it('answers a page past the end with an empty, charged 200 when pastLastPage is empty; no data stays 404', async () => {
    const empty = await startSandbox({ tokens: { [TOKEN]: 1000 }, notFoundRate: 0, pastLastPage: 'empty' });
    try {
      const url = 'network.com/company/paging-co';
      const all = (await similar({ url, page: 1, num: 1000 }, empty)).body.data.content as any[];
      const past = Math.ceil(all.length / 4) + 1;
      const usedBefore = empty.credits(TOKEN).credits_used;
      const r = await similar({ url, page: past, num: 4 }, empty);
      expect(r.status).toBe(200);
      expect(content(r.body)).toEqual({
        success: true,
        message: 'Similar companies fetched successfully',
        data: { content: [], number: past - 1, first: false, empty: true },
        page: past,
        num: 4,
      });
      expect(empty.credits(TOKEN).credits_used).toBe(usedBefore + 1);
      const filteredAway = await similar({ url, account: { location: ['atlantis'] }, page: 2, num: 4 }, empty);
      expect(filteredAway.status).toBe(404);
      expect((await similar({ url: 'network.com/company/notfound-x', page: 2 }, empty)).status).toBe(404);

      const q = { keywords: 'paging', location: 'remote' };
      let start = 0;
      while ((await get('search-jobs', { ...q, start: String(start) }, empty)).body.numResults === 10) start += 10;
      const jobsUsedBefore = empty.credits(TOKEN).credits_used;
      const jobsPast = await get('search-jobs', { ...q, start: String(start + 10) }, empty);
      expect(jobsPast.status).toBe(200);
      expect(content(jobsPast.body)).toEqual({ success: true, message: 'Jobs fetched successfully', currentPage: start / 10 + 1, numResults: 0, results: [] });
      // Charged like any search-jobs 200: a fraction of a credit.
      expect(jobsPast.body.credits_used - jobsUsedBefore).toBe(0.25);
      expect((await get('search-jobs', { keywords: 'notfound', start: '10' }, empty)).status).toBe(404);
    } finally {
      await empty.stop();
    }
  });

  it('has no data for inputs naming notfound, and for about notFoundRate of the others', async () => {
    const nf = await similar({ url: 'network.com/company/notfound-inc' });
    expect(nf.status).toBe(404);
    expect(nf.body).toEqual({ error: true, message: 'No similar companies found' });
    const post = await get('post-details', { url: 'https://www.network.com/posts/notfound_x-activity-7000000000000000001-abcd' });
    expect(post.status).toBe(404);
    expect(post.body).toEqual({ success: false, message: 'Post not found' });
    const jobs = await get('search-jobs', { keywords: 'notfound' });
    expect(jobs.status).toBe(404);
    expect(jobs.body).toEqual({ message: 'No results found for the query' });

    const half = await startSandbox({ notFoundRate: 0.5 });
    try {
      let missing = 0;
      for (let i = 0; i < 200; i++) {
        const r = await similar({ url: `network.com/company/rate-${i}`, num: 1 }, half);
        if (r.status === 404) missing++;
        if (i < 20) expect((await similar({ url: `network.com/company/rate-${i}`, num: 1 }, half)).status).toBe(r.status);
      }
      expect(missing).toBeGreaterThan(70);
      expect(missing).toBeLessThan(130);
    } finally {
      await half.stop();
    }
  });
});
