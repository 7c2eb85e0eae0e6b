import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.ts';
import { TOKEN, content, useDataSandbox } from './sandbox-data-helpers.ts';

// What every operation's data shares: the same answer for the same seed, 404s for inputs without data, and
// empty pages past the end when the sandbox is told to give them.
const { similar, get } = useDataSandbox();
// A second sandbox with the same seed: its answers must be the same.
const other = useDataSandbox().sandbox;

describe('sandbox data', () => {
  it('answers the same request with the same body, in another sandbox with the same seed too', async () => {
    const payload = { url: 'https://www.network.com/company/acme-robotics', account: {}, page: 1, num: 5 };
    const [a, b, c] = [await similar(payload), await similar(payload), await similar(payload, other())];
    expect(a.status).toBe(200);
    expect(content(a.body)).toEqual(content(b.body));
    expect(content(a.body)).toEqual(content(c.body));
    const post = 'https://www.network.com/posts/jane-doe_launch-activity-7180000000000000001-AbCd';
    expect(content((await get('post-details', { url: post })).body)).toEqual(content((await get('post-details', { url: post }, other())).body));
    const q = { keywords: 'data engineer', location: 'berlin', start: '0' };
    expect(content((await get('search-jobs', q)).body)).toEqual(content((await get('search-jobs', q, other())).body));
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
