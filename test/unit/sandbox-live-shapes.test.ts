import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { OPTIONAL_MEMBERS } from '../../src/sandbox/live/absent-members.ts';
import type { Sandbox, SandboxOptionsInput } from '../../src/sandbox/server.ts';
import { requestsTo } from './sandbox-data-helpers.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

// The live-service mode at the HTTP level: a spec-mode and a live-mode sandbox of the same seed answer the same
// requests (plain fetch, not the project's client), and the live answers are compared with the spec ones.
const start = useSandboxes();
const api = requestsTo(() => {
  throw new Error('every request names its sandbox');
});

/** A spec-mode sandbox and a live one with the same seed and data. */
async function pair(live: SandboxOptionsInput): Promise<{ spec: Sandbox; live: Sandbox }> {
  return { spec: await start({ seed: 7 }), live: await start({ seed: 7, ...live }) };
}

/** Every company of `lists` similar-companies lists (pages of 45: no list is longer), in answer order. */
async function companies(sb: Sandbox, lists: number, ref = (i: number) => `https://www.network.com/company/ref-${i}`): Promise<any[]> {
  const out: any[] = [];
  for (let i = 0; i < lists; i++) {
    const r = await api.similar({ url: ref(i), page: 1, num: 45 }, sb);
    expect(r.status).toBe(200);
    out.push(...r.body.data.content);
  }
  return out;
}

/** The first page of `searches` job searches. */
async function jobs(sb: Sandbox, searches: number): Promise<any[]> {
  const out: any[] = [];
  for (let i = 0; i < searches; i++) {
    const r = await api.get('search-jobs', { keywords: `role ${i}` }, sb);
    expect(r.status).toBe(200);
    out.push(...r.body.results);
  }
  return out;
}

const postUrl = (i: number) => `https://www.network.com/posts/someone_topic-activity-${7_100_000_000_000_000_000 + i * 7919}-ab`;

/** The details of `count` posts. */
async function posts(sb: Sandbox, count: number): Promise<any[]> {
  const out: any[] = [];
  for (let i = 0; i < count; i++) {
    const r = await api.get('post-details', { url: postUrl(i) }, sb);
    expect(r.status).toBe(200);
    out.push(r.body);
  }
  return out;
}

type Path = readonly string[];

/** The object holding the member at `path`, or undefined when a step is missing or not an object. */
function holder(record: any, path: Path): any {
  let at = record;
  for (const name of path.slice(0, -1)) {
    at = at?.[name];
    if (typeof at !== 'object' || at === null) return undefined;
  }
  return at;
}

interface Tally {
  samples: number;
  missing: number;
  nulled: number;
  missingByPath: Map<string, number>;
  nulledByPath: Map<string, number>;
  /** Members kept but with another value than the spec's: none may be. */
  changed: Array<{ record: number; path: string; spec: unknown; live: unknown }>;
}

/**
 * Compares each live record with its spec twin, member by member: left out, set to null where the spec had a
 * value, or else unchanged. Members the spec itself sends as null only count toward "missing".
 */
function tally(specRecords: any[], liveRecords: any[], paths: readonly Path[]): Tally {
  const t: Tally = { samples: 0, missing: 0, nulled: 0, missingByPath: new Map(), nulledByPath: new Map(), changed: [] };
  expect(liveRecords).toHaveLength(specRecords.length);
  specRecords.forEach((spec, i) => {
    const live = liveRecords[i];
    for (const path of paths) {
      const label = path.join('.');
      const name = path[path.length - 1] as string;
      const specValue = holder(spec, path)[name];
      const liveHolder = holder(live, path);
      if (liveHolder === undefined) continue; // the parent object itself went missing: not this path's draw
      t.samples += 1;
      if (!(name in liveHolder)) {
        t.missing += 1;
        t.missingByPath.set(label, (t.missingByPath.get(label) ?? 0) + 1);
      } else if (liveHolder[name] === null && specValue !== null) {
        t.nulled += 1;
        t.nulledByPath.set(label, (t.nulledByPath.get(label) ?? 0) + 1);
      } else if (!isDeepStrictEqual(liveHolder[name], specValue)) {
        // Collected and checked once below: an expect() per member (some 10,000 a run) cost ~0.3 s of CPU.
        t.changed.push({ record: i, path: label, spec: specValue, live: liveHolder[name] });
      }
    }
  });
  expect(t.changed.slice(0, 5), `${t.changed.length} kept members changed`).toEqual([]);
  return t;
}

/** Checks the tallied rates against the configured ones and that every member path was drawn both ways. */
function expectRates(t: Tally, paths: readonly Path[], missingRate: number, nullRate: number): void {
  expect(t.samples).toBeGreaterThan(1500);
  // Null counts only where the spec had a value, so its share runs a little under the rate.
  expect(t.missing / t.samples).toBeGreaterThan(missingRate - 0.025);
  expect(t.missing / t.samples).toBeLessThan(missingRate + 0.025);
  expect(t.nulled / t.samples).toBeGreaterThan(nullRate - 0.04);
  expect(t.nulled / t.samples).toBeLessThan(nullRate + 0.025);
  for (const path of paths) expect(t.missingByPath.get(path.join('.')), `${path.join('.')} missing somewhere`).toBeGreaterThan(0);
}

describe('sandbox live mode: absent members', () => {
  const rates = { memberMissingRate: 0.1, memberNullRate: 0.08 };

  it('leaves company members out or null at about the configured rates, the url never', async () => {
    const sb = await pair({ liveShapes: ['absent-members'], ...rates });
    const spec = await companies(sb.spec, 30);
    const live = await companies(sb.live, 30);
    const t = tally(spec, live, OPTIONAL_MEMBERS.company);
    expectRates(t, OPTIONAL_MEMBERS.company, rates.memberMissingRate, rates.memberNullRate);
    expect(live.map((c) => c.url)).toEqual(spec.map((c) => c.url));
    // The shapes of the issue: phone null, no foundedYear, no website, staff without range, headquarter null.
    expect(live.some((c) => c.phone === null)).toBe(true);
    expect(live.some((c) => !('foundedYear' in c))).toBe(true);
    expect(live.some((c) => !('website' in c))).toBe(true);
    expect(live.some((c) => c.staff && !('range' in c.staff))).toBe(true);
    expect(live.some((c) => c.locations && c.locations.headquarter === null)).toBe(true);
    // Members outside the list (relevancy) are never touched.
    expect(live.map((c) => c.relevancy)).toEqual(spec.map((c) => c.relevancy));
  });

  it('does the same to jobs and posts, keeping a job url and a PostId', async () => {
    const sb = await pair({ liveShapes: ['absent-members'], ...rates });
    const [specJobs, liveJobs] = [await jobs(sb.spec, 40), await jobs(sb.live, 40)];
    expectRates(tally(specJobs, liveJobs, OPTIONAL_MEMBERS.job), OPTIONAL_MEMBERS.job, rates.memberMissingRate, rates.memberNullRate);
    expect(liveJobs.map((j) => j.url)).toEqual(specJobs.map((j) => j.url));
    expect(liveJobs.some((j) => !('Industries' in j.criteria))).toBe(true);
    expect(liveJobs.some((j) => j.company_logo_url === null)).toBe(true);

    const [specPosts, livePosts] = [await posts(sb.spec, 220), await posts(sb.live, 220)];
    expectRates(tally(specPosts, livePosts, OPTIONAL_MEMBERS.post), OPTIONAL_MEMBERS.post, rates.memberMissingRate, rates.memberNullRate);
    expect(livePosts.map((p) => p.PostId)).toEqual(specPosts.map((p) => p.PostId));
    expect(livePosts.some((p, i) => p.post.hashtags === null && specPosts[i].post.hashtags !== null)).toBe(true);
  });

  it('never drops an identity, even when every other member goes', async () => {
    const sb = await start({ liveShapes: ['absent-members'], memberMissingRate: 0.5, memberNullRate: 0.5 });
    for (const c of await companies(sb, 3)) {
      expect(c.url).toMatch(/^https:\/\/www\.network\.com\/company\//);
      for (const path of OPTIONAL_MEMBERS.company) expect(holder(c, path)?.[path[path.length - 1] as string] ?? null).toBeNull();
    }
    for (const j of await jobs(sb, 3)) expect(j.url).toMatch(/^https:\/\/www\.network\.com\/jobs\/view\/\d+$/);
    for (const p of await posts(sb, 5)) expect(p.PostId).toMatch(/^activity-\d+$/);
  });

  it('is fixed by the seed: the same seed answers the same bytes, another seed other absences', async () => {
    const options: SandboxOptionsInput = { liveShapes: true };
    const [a, b, c] = [await start({ seed: 3, ...options }), await start({ seed: 3, ...options }), await start({ seed: 4, ...options })];
    const body = { url: 'network.com/company/acme', num: 25 };
    const [ta, tb, tc] = [(await api.similar(body, a)).body, (await api.similar(body, b)).body, (await api.similar(body, c)).body];
    expect(tb).toEqual(ta);
    expect(tc.data.content).not.toEqual(ta.data.content);
  });
});

describe('sandbox live mode: the brand and the URLs', () => {
  it("sends the author's profile URL as author.<brand>_url, in network_url's place", async () => {
    const sb = await pair({ liveShapes: ['brand-url'], brand: 'zetanet' });
    const [spec, live] = [await posts(sb.spec, 20), await posts(sb.live, 20)];
    live.forEach((p, i) => {
      expect(p.author).not.toHaveProperty('network_url');
      expect(p.author.zetanet_url).toBe(spec[i].author.network_url);
      expect(Object.keys(p.author)).toEqual(Object.keys(spec[i].author).map((k) => (k === 'network_url' ? 'zetanet_url' : k)));
    });
    // The default brand with every shape on.
    const all = await start({ liveShapes: true });
    const [post] = await posts(all, 1);
    expect(Object.keys(post.author).filter((k) => k.endsWith('_url'))).toEqual(['acmenet_url']);
  });

  it('mixes www., bare and country-subdomain URLs on the brand host at about the configured rates', async () => {
    const forms = { liveShapes: ['url-forms'] as const, networkHost: 'zetanet.io', bareUrlRate: 0.3, countryUrlRate: 0.2 };
    const sb = await pair({ ...forms, liveShapes: [...forms.liveShapes] });
    const formOf = (url: string): string => {
      const host = /^https:\/\/([^/]+)\//.exec(url)?.[1] ?? '';
      if (host === 'zetanet.io') return 'bare';
      if (host === 'www.zetanet.io') return 'www';
      expect(host).toMatch(/^[a-z]{2}\.zetanet\.io$/);
      return 'country';
    };
    const pathOf = (url: string): string => url.replace(/^https:\/\/[^/]+/, '');
    const share = (urls: string[], form: string) => urls.filter((u) => formOf(u) === form).length / urls.length;

    const [specCompanies, liveCompanies] = [await companies(sb.spec, 25), await companies(sb.live, 25)];
    expect(liveCompanies.map((c) => pathOf(c.url))).toEqual(specCompanies.map((c) => pathOf(c.url)));
    const companyUrls = liveCompanies.map((c) => c.url as string);
    expect(share(companyUrls, 'bare')).toBeGreaterThan(0.24);
    expect(share(companyUrls, 'bare')).toBeLessThan(0.36);
    expect(share(companyUrls, 'country')).toBeGreaterThan(0.15);
    expect(share(companyUrls, 'country')).toBeLessThan(0.25);
    // One company is written one way in one list and another way in the next, as a client must fold.
    const formsByPath = new Map<string, Set<string>>();
    for (const url of companyUrls) formsByPath.set(pathOf(url), (formsByPath.get(pathOf(url)) ?? new Set()).add(formOf(url)));
    expect([...formsByPath.values()].some((set) => set.size > 1)).toBe(true);

    const liveJobs = await jobs(sb.live, 25);
    const links = liveJobs.map((j) => j.company_link as string);
    expect(share(links, 'bare')).toBeGreaterThan(0.2);
    expect(share(links, 'country')).toBeGreaterThan(0.1);
    expect(share(links, 'www')).toBeGreaterThan(0.35);
    // A job's identity is written as the site writes its pages.
    for (const j of liveJobs) expect(j.url).toMatch(/^https:\/\/www\.zetanet\.io\/jobs\/view\/\d+$/);

    const authorUrls = (await posts(sb.live, 120)).map((p) => p.author.network_url as string);
    for (const form of ['bare', 'country', 'www']) expect(share(authorUrls, form), form).toBeGreaterThan(0.08);
  });

  it('answers a reference on a country or mobile subdomain as its www. and bare forms', async () => {
    const sb = await pair({ liveShapes: ['url-forms'] });
    const slugs = async (url: string, on: Sandbox) =>
      ((await api.similar({ url, num: 45 }, on)).body.data.content as any[]).map((c) => c.universalName);
    const www = await slugs('https://www.network.com/company/acme', sb.live);
    for (const url of ['network.com/company/acme', 'https://de.network.com/company/acme/', 'm.network.com/company/acme']) {
      expect(await slugs(url, sb.live), url).toEqual(www);
    }
    // The spec mode keeps its own reading: only www. is folded there.
    expect(await slugs('https://de.network.com/company/acme', sb.spec)).not.toEqual(await slugs('https://www.network.com/company/acme', sb.spec));
  });
});

describe('sandbox live mode: page-size cap', () => {
  /** A reference whose list holds more than 25 companies (lists hold 3..45). */
  async function longReference(sb: Sandbox): Promise<string> {
    for (let i = 0; i < 50; i++) {
      const url = `https://www.network.com/company/long-${i}`;
      if ((await api.similar({ url, num: 45 }, sb)).body.data.content.length > 30) return url;
    }
    throw new Error('no list longer than 30 in 50 references');
  }

  it('caps num at maxNum, echoes the capped num, and pages by it', async () => {
    const sb = await pair({ liveShapes: ['page-cap'], maxNum: 25 });
    const url = await longReference(sb.spec);
    const whole = (await api.similar({ url, num: 45 }, sb.spec)).body.data.content.map((c: any) => c.url);
    const first = (await api.similar({ url, num: 50, page: 1 }, sb.live)).body;
    expect(first.num).toBe(25);
    expect(first.page).toBe(1);
    expect(first.data.content.map((c: any) => c.url)).toEqual(whole.slice(0, 25));
    const second = (await api.similar({ url, num: 50, page: 2 }, sb.live)).body;
    expect(second.num).toBe(25);
    expect(second.data.content.map((c: any) => c.url)).toEqual(whole.slice(25, 50));
    // Past the end: the spec's 404, as with a page past the end of any list.
    expect((await api.similar({ url, num: 50, page: 3 }, sb.live)).status).toBe(404);
    // A num within the cap is answered as asked; the spec mode has no cap.
    expect((await api.similar({ url, num: 10 }, sb.live)).body.num).toBe(10);
    const uncapped = (await api.similar({ url, num: 50 }, sb.spec)).body;
    expect(uncapped.num).toBe(50);
    expect(uncapped.data.content.length).toBeGreaterThan(25);
  });
});
