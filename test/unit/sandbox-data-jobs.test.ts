import { describe, expect, it } from 'vitest';
import { REFERENCE_DATE_MS } from '../../src/sandbox/data/world-age.ts';
import { content, isUrl, useDataSandbox } from './sandbox-data-helpers.ts';

// search-jobs: every field, the dates, paging by record offset and the filters.
const { get } = useDataSandbox();

describe('sandbox data', () => {
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
});
