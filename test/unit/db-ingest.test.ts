import { gunzipSync } from 'node:zlib';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { createIngestor, NORMALIZED_TABLES } from '../../src/store/ingest/index.ts';
import { ingestInTransaction, validateResponse } from '../support/store-helpers.ts';
import { saveRawResponse } from '../../src/store/raw-archive.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';
import { company, job, jobsRequest, jobsResponse, postRequest, postResponse, similarRequest, similarResponse } from '../support/db-fixtures.ts';

const T1 = '2026-11-22T13:45:00.000Z';
const T2 = '2026-11-23T08:00:00.000Z';

let dir: string;
let database: Database;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-db-ingest-'));
  database = openDatabase(join(dir, 'netingest.db'));
});
afterEach(() => {
  database.close();
  rmSync(dir, { recursive: true, force: true });
});

function rows(table: string, orderBy = 'rowid'): Record<string, unknown>[] {
  return database.sqlite.prepare(`SELECT * FROM ${table} ORDER BY ${orderBy}`).all() as Record<string, unknown>[];
}
function typeOf(table: string, column: string, where: string): unknown {
  return database.sqlite.prepare(`SELECT typeof(${column}) FROM ${table} WHERE ${where}`).pluck().get();
}
/** Every normalized table's rows, with the named timestamp columns blanked. */
function snapshot(omit: string[] = []): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const t of NORMALIZED_TABLES) {
    out[t] = rows(t).map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !omit.includes(k))));
  }
  return out;
}

describe('similar-companies', () => {
  it('writes companies, child sets and link rows field by field', () => {
    const c1 = company(1);
    const c2 = company(2, {
      followers: null,
      cover: { imageUrl: 'https://img.example/c.png', crop: [1, 2] },
      tagline: null,
      fundingData: null,
      specialities: null,
      industries: [],
      hashtags: ['#ai', '#日本'],
      locations: { headquarter: company(2).locations.headquarter, other: [] },
    });
    const result = ingestInTransaction(database, similarRequest(), similarResponse([c1, c2]), T1);
    // 2 companies + 2 links + locations (2 + 1) + industries (1 + 0) + specialities (3 + 0) + hashtags (0 + 2)
    expect(result).toEqual({ rows: 2 + 2 + 3 + 1 + 3 + 2, skipped: 0 });

    const companies = rows('companies', 'url');
    expect(companies).toEqual([
      {
        url: 'https://www.network.com/company/acme-1',
        name: 'Acme 1 Société 🚀',
        universal_name: 'acme-1',
        type: 'PRIVATELY_HELD',
        object_urn: 1000001,
        description: 'Line one of 1\nLine two — «quoted» 日本語\r\nend',
        phone: '+4930123456',
        followers: 12346,
        website: 'https://acme-1.example',
        logo: 'https://img.example/logo-1.png',
        cover: null,
        tagline: 'We make 🧪 things',
        founded_year: 1999,
        staff_total: 250,
        staff_range_start: 201,
        staff_range_end: 500,
        funding_data: '{"rounds":2,"lastRound":{"type":"Series B","money":null}}',
        first_seen_at: T1,
        updated_at: T1,
      },
      expect.objectContaining({
        url: 'https://www.network.com/company/acme-2',
        followers: null,
        cover: '{"imageUrl":"https://img.example/c.png","crop":[1,2]}',
        tagline: null,
        funding_data: null,
      }),
    ]);
    // "Not shown" types keep their kind: a number stays a number, a string a string.
    expect(typeOf('companies', 'followers', `url LIKE '%acme-1'`)).toBe('integer');
    expect(typeOf('companies', 'tagline', `url LIKE '%acme-1'`)).toBe('text');
    expect(typeOf('companies', 'cover', `url LIKE '%acme-2'`)).toBe('text');
    // docs/schema.md: an as-given true/false is the integer 1/0 (sqlite3, pandas: 1, not 1.0).
    expect(typeOf('company_locations', 'is_primary', `company_url LIKE '%acme-1' AND position = 1`)).toBe('integer');

    expect(rows('company_locations', 'company_url, position')).toEqual([
      { company_url: 'https://www.network.com/company/acme-1', position: 1, is_headquarter: 1, city: 'münchen', country: 'germany', country_name: 'germany', geographic_area: null, is_primary: 1, line1: 'hauptstraße 1', line2: null, postal_code: '80331' },
      { company_url: 'https://www.network.com/company/acme-1', position: 2, is_headquarter: 0, city: 'paris', country: 'france', country_name: 'france', geographic_area: 'île-de-france', is_primary: null, line1: 'rue de rivoli 2', line2: 'bât. b', postal_code: '75001' },
      { company_url: 'https://www.network.com/company/acme-2', position: 1, is_headquarter: 1, city: 'münchen', country: 'germany', country_name: 'germany', geographic_area: null, is_primary: 1, line1: 'hauptstraße 1', line2: null, postal_code: '80331' },
    ]);
    expect(rows('company_industries', 'company_url, position')).toEqual([
      { company_url: 'https://www.network.com/company/acme-1', position: 1, value: 'Manufacturing' },
    ]);
    expect(rows('company_specialities', 'company_url, position').map((r) => r['value'])).toEqual(['widgets', 'gadgets', 'ünïcode']);
    expect(rows('company_hashtags', 'company_url, position')).toEqual([
      { company_url: 'https://www.network.com/company/acme-2', position: 1, value: '#ai' },
      { company_url: 'https://www.network.com/company/acme-2', position: 2, value: '#日本' },
    ]);
    expect(rows('similar_companies', 'rank')).toEqual([
      {
        reference_url: 'https://www.network.com/company/reference-co',
        filter_key: 'f-germany-201-500',
        company_url: 'https://www.network.com/company/acme-1',
        filters: '{"location":["germany"],"employeeSize":{"type":"RANGE","range":[{"start":201,"end":500}]}}',
        rank: 1,
        page: 1,
        relevancy_score: 0.87,
        relevancy_grade: 'A',
        first_seen_at: T1,
        last_seen_at: T1,
      },
      expect.objectContaining({ company_url: 'https://www.network.com/company/acme-2', rank: 2, page: 1 }),
    ]);
  });

  it('re-ingesting the same page changes only updated_at / last_seen_at and duplicates nothing', () => {
    const res = similarResponse([company(1), company(2)]);
    ingestInTransaction(database, similarRequest(), res, T1);
    const before = snapshot();
    ingestInTransaction(database, similarRequest(), res, T2);
    const after = snapshot();
    expect(snapshot(['updated_at', 'last_seen_at'])).toEqual(
      Object.fromEntries(Object.entries(before).map(([t, rs]) => [t, rs.map((r) => Object.fromEntries(Object.entries(r as object).filter(([k]) => k !== 'updated_at' && k !== 'last_seen_at')))])),
    );
    expect(after['companies']!.map((r) => [(r as any).first_seen_at, (r as any).updated_at])).toEqual([[T1, T2], [T1, T2]]);
    expect(after['similar_companies']!.map((r) => [(r as any).first_seen_at, (r as any).last_seen_at])).toEqual([[T1, T2], [T1, T2]]);
    // An older replay cannot move the timestamps back.
    ingestInTransaction(database, similarRequest(), res, T1);
    expect(snapshot()).toEqual(after);
  });

  it('replaces child sets as a whole when the company is seen again', () => {
    ingestInTransaction(database, similarRequest(), similarResponse([company(1)]), T1);
    const changed = company(1, {
      name: 'Acme One',
      specialities: ['only-one'],
      industries: ['Software', 'Robotics'],
      hashtags: null,
      locations: { headquarter: { city: 'berlin', country: 'germany', geographicArea: null, isPrimary: 'yes', line1: 'a', line2: 7 as unknown as string /* not shown in the spec */, postalCode: '10115' }, other: [] },
    });
    // Same company through another URL spelling: www, case, trailing sub-page.
    changed.url = 'network.com/company/ACME-1/about';
    ingestInTransaction(database, similarRequest(2), similarResponse([company(5), changed], 2), T2);
    const url = 'https://www.network.com/company/acme-1';
    expect(database.sqlite.prepare('SELECT count(*) FROM companies').pluck().get()).toBe(2);
    expect(rows('companies', 'url')[0]).toMatchObject({ url, name: 'Acme One', first_seen_at: T1, updated_at: T2 });
    const q = (t: string) => database.sqlite.prepare(`SELECT position, value FROM ${t} WHERE company_url = ? ORDER BY position`).all(url);
    expect(q('company_specialities')).toEqual([{ position: 1, value: 'only-one' }]);
    expect(q('company_industries')).toEqual([{ position: 1, value: 'Software' }, { position: 2, value: 'Robotics' }]);
    expect(q('company_hashtags')).toEqual([]);
    expect(database.sqlite.prepare('SELECT position, city, is_primary, line2 FROM company_locations WHERE company_url = ?').all(url)).toEqual([
      { position: 1, city: 'berlin', is_primary: 'yes', line2: 7 },
    ]);
    expect(database.sqlite.prepare('SELECT rank, page, first_seen_at, last_seen_at FROM similar_companies WHERE company_url = ?').get(url)).toEqual({
      rank: 2, page: 2, first_seen_at: T1, last_seen_at: T2,
    });
  });

  it('keys each filter set separately and keeps a record whose URL is not a company page', () => {
    const req = similarRequest();
    ingestInTransaction(database, req, similarResponse([company(1)]), T1);
    ingestInTransaction(database, { ...req, filterKey: 'none', filters: {} }, similarResponse([company(1, { url: 'https://www.network.com/showcase/acme-labs/' })]), T1);
    expect(rows('similar_companies', 'filter_key').map((r) => [r['filter_key'], r['company_url'], r['filters']])).toEqual([
      ['f-germany-201-500', 'https://www.network.com/company/acme-1', expect.any(String)],
      ['none', 'https://www.network.com/showcase/acme-labs', '{}'],
    ]);
    const res = ingestInTransaction(database, req, similarResponse([company(3, { url: '' })]), T1);
    expect(res.skipped).toBe(1);
  });
});

describe('post-details', () => {
  it('writes the post and its media field by field, then replaces the media set', () => {
    const result = ingestInTransaction(database, postRequest, postResponse(), T1);
    expect(result).toEqual({ rows: 3, skipped: 0 });
    expect(rows('posts')).toEqual([
      {
        post_id: 'activity-7123456789012345678',
        url: 'https://www.network.com/posts/zoe-nunez_hello-activity-7123456789012345678-AbCd',
        author_name: 'Zoë Ñúñez',
        author_headline: 'Engineer 👩‍💻 at Acme\nBerlin',
        author_url: 'https://www.network.com/in/zoe-nunez',
        author_profile_image: '',
        posted_raw: '22-11-2026',
        posted_on: '2026-11-22',
        text_content: 'Hello 世界!\n\nSecond paragraph with emoji 🎉 and "quotes" and \\ backslash.',
        hashtags: null,
        media_description: '',
        reactions: 42,
        comments_count: 7,
        first_seen_at: T1,
        updated_at: T1,
      },
    ]);
    expect(rows('post_media', 'position')).toEqual([
      { post_id: 'activity-7123456789012345678', position: 1, url: 'https://img.example/a.jpg' },
      { post_id: 'activity-7123456789012345678', position: 2, url: 'https://img.example/b.jpg' },
    ]);

    const again = postResponse();
    again.post = { ...again.post, hashtags: ['#tag', { name: 'obj' }], post_media_url: ['https://img.example/c.jpg'] };
    again.engagement = { reactions: 50, comments_count: 8 };
    ingestInTransaction(database, postRequest, again, T2);
    expect(rows('posts')).toEqual([expect.objectContaining({ hashtags: '["#tag",{"name":"obj"}]', reactions: 50, comments_count: 8, first_seen_at: T1, updated_at: T2 })]);
    expect(rows('post_media', 'position')).toEqual([{ post_id: 'activity-7123456789012345678', position: 1, url: 'https://img.example/c.jpg' }]);
  });

  it('re-ingesting the same post changes only updated_at', () => {
    ingestInTransaction(database, postRequest, postResponse(), T1);
    const before = snapshot(['updated_at']);
    ingestInTransaction(database, postRequest, postResponse(), T2);
    expect(snapshot(['updated_at'])).toEqual(before);
    expect(rows('posts')[0]!['updated_at']).toBe(T2);
  });
});

describe('search-jobs', () => {
  it('writes the search, the jobs and their positions field by field', () => {
    const result = ingestInTransaction(database, jobsRequest(10), jobsResponse([job(1), job(2)]), T1);
    expect(result).toEqual({ rows: 1 + 2 * 2, skipped: 0 });
    expect(rows('job_searches')).toEqual([
      {
        search_key: 'berlin-ts',
        keywords: 'typescript developer',
        location: 'berlin',
        time_posted: 'past_week',
        experience_levels: 'associate,mid-senior level',
        job_types: 'full time',
        workplace_types: 'on site,remote',
        company_ids: null,
        first_seen_at: T1,
        last_seen_at: T1,
      },
    ]);
    expect(rows('jobs', 'url')[0]).toEqual({
      url: 'https://www.network.com/jobs/view/developer-at-acme-3800000001',
      title: 'Développeur·se 1 🛠',
      company_name: 'Acme GmbH',
      company_link: 'https://www.network.com/company/acme-1',
      location: 'Berlin, Germany',
      posted_timestamp: 1795305600,
      posted_date: '2026-11-22',
      is_actively_hiring: 0,
      company_logo_url: 'https://img.example/acme.png',
      description_html: '<p>Build things.</p>\n<ul><li>TypeScript</li></ul>',
      description: 'Build things.\n- TypeScript',
      employment_type: 'Full-time',
      industries: 'Software',
      job_function: 'Engineering',
      seniority_level: 'Associate',
      first_seen_at: T1,
      updated_at: T1,
    });
    expect(rows('jobs', 'url')[1]!['is_actively_hiring']).toBe(1);
    expect(rows('job_search_results', 'position')).toEqual([
      { search_key: 'berlin-ts', job_url: 'https://www.network.com/jobs/view/developer-at-acme-3800000001', position: 10, first_seen_at: T1, last_seen_at: T1, page: 2 },
      { search_key: 'berlin-ts', job_url: 'https://www.network.com/jobs/view/developer-at-acme-3800000002', position: 11, first_seen_at: T1, last_seen_at: T1, page: 2 },
    ]);
  });

  it('a job listed twice on one page keeps the position and values of its first listing (the service\'s rank)', () => {
    // Before: position 12 and the second copy's title (the later upsert won); test/pg/run-listed-twice has similar-companies.
    ingestInTransaction(database, jobsRequest(10), jobsResponse([job(1), job(2), job(1, { title: 'again' })]), T1);
    expect(rows('job_search_results', 'position').map((r) => [String(r['job_url']).slice(-2), r['position']])).toEqual([['01', 10], ['02', 11]]);
    expect(rows('jobs', 'url')[0]!['title']).toBe('Développeur·se 1 🛠');
  });

  it('re-ingesting changes only updated_at / last_seen_at; an empty page still records the search', () => {
    ingestInTransaction(database, jobsRequest(0), jobsResponse([job(1), job(2)]), T1);
    const before = snapshot(['updated_at', 'last_seen_at']);
    ingestInTransaction(database, jobsRequest(0), jobsResponse([job(1), job(2)]), T2);
    expect(snapshot(['updated_at', 'last_seen_at'])).toEqual(before);
    expect(rows('job_search_results').map((r) => r['last_seen_at'])).toEqual([T2, T2]);
    ingestInTransaction(database, jobsRequest(20), jobsResponse([]), T2);
    expect(database.sqlite.prepare('SELECT count(*) FROM job_searches').pluck().get()).toBe(1);
  });
});

const sandbox = useSandboxes();

describe('sandbox bodies', () => {
  it('validate, and store empty lists, isPrimary true/false/null, empty strings and fractional counters as given', async () => {
    const sb = await sandbox({ tokens: { t: 1e6 } });
    const fetchBody = async (path: string, init: RequestInit = {}): Promise<unknown> => {
      const res = await fetch(`${sb.url}${path}`, { ...init, headers: { authorization: 'Bearer t', 'content-type': 'application/json' } });
      expect(res.status).toBe(200);
      return JSON.parse(await res.text());
    };
    const companies = new Map<string, any>();
    for (let i = 0; i < 12; i++) {
      const referenceUrl = `https://www.network.com/company/sample-${i}`;
      const body = validateResponse('similar-companies', await fetchBody('/v1/api/similar-companies', { method: 'POST', body: JSON.stringify({ url: referenceUrl, page: 1, num: 50 }) }));
      ingestInTransaction(database, { operation: 'similar-companies', referenceUrl, filterKey: 'none', filters: {}, page: 1, num: 50 }, body, T1);
      for (const c of body.data!.content!) companies.set(c!.url!.replace(/^https:\/\/(www\.)?/, 'https://www.'), c);
    }
    const list = (table: string, url: string) =>
      database.sqlite.prepare(`SELECT value FROM ${table} WHERE company_url = ? ORDER BY position`).pluck().all(url);
    const seen = { emptyIndustries: 0, emptyHashtags: 0, primary: new Set<unknown>(), emptyLine2: 0 };
    for (const [url, c] of companies) {
      expect(list('company_industries', url)).toEqual(c.industries);
      expect(list('company_specialities', url)).toEqual(c.specialities ?? []);
      expect(list('company_hashtags', url)).toEqual(c.hashtags ?? []);
      const stored = database.sqlite.prepare('SELECT is_primary, line2, typeof(followers) AS followers FROM company_locations JOIN companies ON url = company_url WHERE company_url = ? ORDER BY position').all(url) as any[];
      const given = [c.locations.headquarter, ...c.locations.other];
      expect(stored.map((r) => [r.is_primary, r.line2])).toEqual(given.map((a) => [a.isPrimary === null ? null : Number(a.isPrimary), a.line2]));
      expect(stored[0].followers).toBe(c.followers === null ? 'null' : 'integer');
      if (c.industries.length === 0) seen.emptyIndustries++;
      if (c.hashtags?.length === 0) seen.emptyHashtags++;
      for (const a of given) seen.primary.add(a.isPrimary);
      seen.emptyLine2 += given.filter((a) => a.line2 === '').length;
    }
    // The bodies held each case, so the checks above covered it.
    expect(seen.emptyIndustries && seen.emptyHashtags && seen.emptyLine2).toBeGreaterThan(0);
    expect(seen.primary).toEqual(new Set([true, false, null]));

    const seenPosts = { emptyTags: 0, nullTags: 0, noMedia: 0, noImage: 0 };
    for (let i = 0; i < 40; i++) {
      const postUrl = `https://www.network.com/feed/update/urn:li:activity:71800000000000${String(i).padStart(5, '0')}`;
      const body = validateResponse('post-details', await fetchBody(`/v1/api/post-details?url=${encodeURIComponent(postUrl)}`)) as any;
      ingestInTransaction(database, { operation: 'post-details', postUrl }, body, T1);
      const row = database.sqlite.prepare('SELECT hashtags, author_profile_image, media_description FROM posts WHERE post_id = ?').get(body.PostId) as any;
      expect(row).toEqual({
        hashtags: body.post.hashtags === null ? null : JSON.stringify(body.post.hashtags),
        author_profile_image: body.author.profile_image,
        media_description: body.post.post_media_description,
      });
      expect(database.sqlite.prepare('SELECT url FROM post_media WHERE post_id = ? ORDER BY position').pluck().all(body.PostId)).toEqual(body.post.post_media_url);
      if (body.post.hashtags?.length === 0) seenPosts.emptyTags++;
      if (body.post.hashtags === null) seenPosts.nullTags++;
      if (body.post.post_media_url.length === 0) seenPosts.noMedia++;
      if (body.author.profile_image === '') seenPosts.noImage++;
    }
    expect(Object.values(seenPosts).every((n) => n > 0), JSON.stringify(seenPosts)).toBe(true);

    const jobs = validateResponse('search-jobs', await fetchBody('/v1/api/search-jobs?keywords=welder&workplaceTypes=remote&companyIds=1441')) as any;
    expect(jobs.credits_used % 1).not.toBe(0);
    ingestInTransaction(database, { operation: 'search-jobs', searchKey: 'k', query: { keywords: 'welder', workplaceTypes: ['remote'], companyIds: ['1441'] }, start: 0 }, jobs, T1);
    expect(database.sqlite.prepare('SELECT workplace_types, company_ids FROM job_searches').get()).toEqual({ workplace_types: 'remote', company_ids: '1441' });
    expect(database.sqlite.prepare('SELECT count(*) FROM job_search_results').pluck().get()).toBe(jobs.results.length);
  });
});

describe('ingestor contract', () => {
  it('refuses to run outside a transaction and rejects a non-ISO seenAt', () => {
    const ingestor = createIngestor(database);
    expect(() => ingestor.ingestAnswer(postRequest, postResponse(), T1)).toThrow(/inside a transaction/);
    expect(() => database.sqlite.transaction(() => ingestor.ingestAnswer(postRequest, postResponse(), '22.11.2026'))()).toThrow(/ISO-8601/);
  });

  it('rolls back with the caller: a failing transaction leaves no rows', () => {
    const ingestor = createIngestor(database);
    expect(() =>
      database.sqlite.transaction(() => {
        ingestor.ingestAnswer(similarRequest(), similarResponse([company(1)]), T1);
        throw new Error('task update failed');
      })(),
    ).toThrow(/task update failed/);
    expect(database.sqlite.prepare('SELECT count(*) FROM companies').pluck().get()).toBe(0);
  });

  it('saveRawResponse archives the exact body with its request, gzipped from 2 KiB on', () => {
    const save = saveRawResponse(database);
    const body = JSON.stringify(postResponse({ post: { ...postResponse().post, text_content: 'Hello 世界! '.repeat(300) } })) + '\n';
    const id = database.sqlite.transaction(() => save({ operation: 'post-details', request: postRequest, body, receivedAt: T1, runId: 3, taskId: 9 }))();
    const tiny = '{}';
    database.sqlite.transaction(() => save({ operation: 'post-details', request: postRequest, body: tiny, receivedAt: T1, runId: 3, taskId: 10 }))();
    const stored = rows('raw_responses');
    expect(stored[0]).toEqual({
      id, operation: 'post-details', request_key: postRequest.postUrl, request_json: JSON.stringify(postRequest),
      body: expect.any(Buffer), body_encoding: 'gzip', received_at: T1, run_id: 3, task_id: 9, error_code: null,
    });
    expect((stored[0]!.body as Buffer).length).toBeLessThan(Buffer.byteLength(body));
    expect(gunzipSync(stored[0]!.body as Buffer).toString('utf8')).toBe(body);
    // A small body is kept as the text it was.
    expect(stored[1]).toMatchObject({ body: tiny, body_encoding: null });
    const viaSql = database.sqlite.prepare('SELECT raw_body(body, body_encoding) FROM raw_responses ORDER BY id').pluck().all();
    expect(viaSql).toEqual([body, tiny]);
  });

  it('saveRawResponse keeps the error code of a body that did not validate', () => {
    const save = saveRawResponse(database);
    const body = '{"status":"ok","item":{}}';
    database.sqlite.transaction(() => save({ operation: 'post-details', request: postRequest, body, receivedAt: T1, runId: 3, taskId: 9, errorCode: 'SCHEMA' }))();
    expect(rows('raw_responses')).toMatchObject([{ body, body_encoding: null, error_code: 'SCHEMA', task_id: 9 }]);
  });
});
