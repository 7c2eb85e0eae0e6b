/**
 * Paging against a service that answers a page past the end with a 200 carrying an empty page (charged), not
 * a 404: the run must stop at the first short or empty page, settle the empty page as done (it was answered and
 * paid for) and the pages after it as not_found without a call, and count the empty page's credits.
 */
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.ts';
import { FAST_RATE, FAST_RETRY, companyUrls, count, csv, query, run, useWorkspaces, type Workspace, operationRequests } from '../support/run-helpers.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

const TOKEN = 'empty-pages-token-3b1e';
const PAGES = 4;
const newSandbox = useSandboxes();
const newWorkspace = useWorkspaces();

function sandboxOf(pastLastPage: '404' | 'empty'): Promise<Sandbox> {
  return newSandbox({ tokens: { [TOKEN]: 100_000 }, pastLastPage });
}

/** Rows on each page 1..PAGES of a list of `length` in pages of `size`. */
const rowsOnPage = (length: number, size: number, page: number): number => Math.max(0, Math.min(size, length - (page - 1) * size));

/** The pages a run must call: up to the first page with fewer than `size` rows, an empty one included. */
function pagesToCall(length: number, size: number): number[] {
  const pages: number[] = [];
  for (let p = 1; p <= PAGES; p++) {
    pages.push(p);
    if (rowsOnPage(length, size, p) < size) break;
  }
  return pages;
}

/** Checks one input's tasks: called pages done (the empty one too) or not_found (no data), later ones settled without a call. */
function expectTasks(ws: Workspace, inputKey: string, length: number, size: number, called: number[]): void {
  expect(called, `${inputKey} (list of ${length})`).toEqual(pagesToCall(length, size));
  const tasks = query<{ page: number; status: string; attempts: number; last_error: string | null }>(
    ws,
    'SELECT page, status, attempts, last_error FROM tasks WHERE input_key = ? ORDER BY page',
    inputKey,
  );
  expect(tasks).toHaveLength(PAGES);
  for (const t of tasks) {
    const label = `${inputKey} page ${t.page}`;
    if (!called.includes(t.page)) {
      expect(t, label).toMatchObject({ status: 'not_found', attempts: 0 });
      expect(t.last_error, label).toMatch(/past the last page/);
    } else {
      expect(t, label).toMatchObject({ status: length === 0 ? 'not_found' : 'done', attempts: 1 });
    }
  }
}

describe('paging when the service answers past the end with an empty 200', () => {
  it('similar-companies: stops at the empty page, settles it done and pays for it, settles the rest without a call', async () => {
    const probe = await sandboxOf('404');
    const sandbox = await sandboxOf('empty');
    const ws = await newWorkspace();
    const NUM = 10;
    const urls = [...companyUrls(24), 'https://www.network.com/company/notfound-gone'];
    const lengths = new Map<string, number>();
    for (const url of urls) {
      const res = await fetch(`${probe.url}/v1/api/similar-companies`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url, page: 1, num: 1000 }),
      });
      lengths.set(url, res.status === 200 ? ((await res.json()) as { data: { content: unknown[] } }).data.content.length : 0);
    }
    await ws.write('leads.csv', csv(['url'], urls.map((u) => [u])));
    const jobs = await ws.load(
      await ws.job('paged', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'url' }, request: { num: NUM }, pages: PAGES, rate: FAST_RATE, retry: FAST_RETRY }),
    );
    const summary = await run(ws, sandbox, TOKEN, jobs);
    expect(summary.status).toBe('completed');

    let emptyPages = 0;
    for (const url of urls) {
      const len = lengths.get(url)!;
      const called = operationRequests(sandbox).filter((r) => (r.body as { url: string }).url === url).map((r) => (r.body as { page: number }).page);
      expectTasks(ws, url, len, NUM, called);
      if (len > 0 && called.some((p) => rowsOnPage(len, NUM, p) === 0)) emptyPages++;
      expect(count(ws, 'SELECT count(*) FROM similar_companies WHERE reference_url = ?', url)).toBe(Math.min(len, PAGES * NUM));
    }
    // The fixture holds a full last page followed by an empty one, answered 200 and charged.
    expect(emptyPages).toBeGreaterThan(0);
    const empties = operationRequests(sandbox).filter((r) => r.status === 200 && rowsOnPage(lengths.get((r.body as { url: string }).url)!, NUM, (r.body as { page: number }).page) === 0);
    expect(empties).toHaveLength(emptyPages);
    for (const r of empties) expect(r.charged).toBe(1);
    expect(summary.creditsSpent).toBe(sandbox.requests.reduce((n, r) => n + r.charged, 0));
    expect(count(ws, 'SELECT count(*) FROM api_calls')).toBe(operationRequests(sandbox).length);
    expect(count(ws, `SELECT count(*) FROM tasks WHERE status = 'not_found' AND attempts = 0`)).toBe(urls.length * PAGES - operationRequests(sandbox).length);
  });

  it('search-jobs: stops at an empty page of results, which is done and charged', async () => {
    const probe = await sandboxOf('404');
    const sandbox = await sandboxOf('empty');
    const ws = await newWorkspace();
    const SIZE = 10;
    const keywords = Array.from({ length: 30 }, (_, i) => `role ${i}`);
    const lengths = new Map<string, number>();
    for (const k of keywords) {
      let total = 0;
      for (let start = 0; ; start += SIZE) {
        const res = await fetch(`${probe.url}/v1/api/search-jobs?keywords=${encodeURIComponent(k)}&start=${start}`, { headers: { authorization: `Bearer ${TOKEN}` } });
        if (res.status !== 200) break;
        const n = ((await res.json()) as { numResults: number }).numResults;
        total += n;
        if (n < SIZE) break;
      }
      lengths.set(k, total);
    }
    await ws.write('searches.csv', csv(['keywords'], keywords.map((k) => [k])));
    const jobs = await ws.load(await ws.job('searches', { operation: 'search-jobs', input: { csv: 'searches.csv' }, pages: PAGES, rate: FAST_RATE, retry: FAST_RETRY }));
    const summary = await run(ws, sandbox, TOKEN, jobs);
    expect(summary.status).toBe('completed');

    let emptyPages = 0;
    const keys = query<{ input_key: string; request_json: string }>(ws, 'SELECT DISTINCT input_key, request_json FROM tasks WHERE page = 1');
    expect(keys).toHaveLength(keywords.length);
    for (const { input_key: key, request_json: requestJson } of keys) {
      const k = (JSON.parse(requestJson) as { keywords: string }).keywords;
      const len = lengths.get(k)!;
      const called = sandbox.requests.filter((r) => r.query['keywords'] === k).map((r) => Number(r.query['start'] ?? 0) / SIZE + 1);
      expectTasks(ws, key, len, SIZE, called);
      if (called.some((p) => rowsOnPage(len, SIZE, p) === 0)) emptyPages++;
      expect(count(ws, 'SELECT count(*) FROM job_search_results WHERE search_key = ?', key)).toBe(Math.min(len, PAGES * SIZE));
    }
    expect(emptyPages).toBeGreaterThan(0);
    // Every 200, the empty pages included, cost a quarter credit, and the run counted each.
    expect(operationRequests(sandbox).every((r) => r.status === 200 && r.charged === 0.25)).toBe(true);
    expect(summary.creditsSpent).toBe(operationRequests(sandbox).length * 0.25);
  });
});
