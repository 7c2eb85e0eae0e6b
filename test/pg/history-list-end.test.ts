/**
 * A paged list that got shorter: the page that ends it (fewer results than a page holds) says the pages after it hold
 * nothing, so the members last seen there are `removed`, once, and `added` again when they come back. The runner
 * settles those pages without a call, so no answer of theirs ever told the history: jobs 11 to 22 stayed members for
 * good. A page that ends it with no result at all (an empty page, a 404) does the same, though it writes no row. A page
 * that fails (a 500) removes nothing; reprocess rebuilds the same history. On both engines.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { reprocessDatabase } from '../../src/runner/reprocess.ts';
import { company, job, jobsResponse, similarResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { writeJobFile } from '../soak/inputs.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine, type TestDb } from './engines.ts';

const TOKEN = 'history-list-end-token-01';
let ws: OpsWorkspace;
const startFake = useFakeServices();
beforeEach(async () => {
  ws = await opsWorkspace({ companies: 1, concurrency: 1 });
});
afterEach(() => ws.cleanup());

/** Per night, each page's members (page 1 first); 'fail' answers a 500. Past the last night, the last one again. */
type Nights = Record<number, Array<number[] | 'fail'>>;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const FULL = [range(1, 10), range(11, 20), range(21, 22)];
/** Night 2 lists 7 results, and page 1 ends the list; night 3 the same; night 4 all 22 again. */
const SHRUNK: Nights = { 1: FULL, 2: [range(1, 7)], 3: [range(1, 7)], 4: FULL };
/** Night 2: page 2 ends the list with 5 results: 16 to 20 leave page 2, 21 and 22 the page after it. */
const PAGE_2_SHORT: Nights = { 1: FULL, 2: [range(1, 10), range(11, 15)] };
/** Night 2: page 2 fails; page 3, asked all the same, ends the list without job 22. */
const PAGE_2_FAILS: Nights = { 1: FULL, 2: [range(1, 10), 'fail', [21]] };
/** Night 2: exactly 10 results, so page 2 ends the list with none (an empty page or a 404); night 4 all 22 again. */
const EXACTLY_10: Nights = { 1: FULL, 2: [range(1, 10)], 3: [range(1, 10)], 4: FULL };
/** Night 2: no result at all, page 1 ends the list empty; night 3 all 22 again. */
const NONE_LEFT: Nights = { 1: FULL, 2: [], 3: FULL };
/** Night 2: exactly 10 results, but page 2 fails: page 3, asked all the same, ends the list with none. */
const EMPTY_AFTER_FAIL: Nights = { 1: FULL, 2: [range(1, 10), 'fail'] };
/** How a page past the list's end answers: a 404 (the live search service) or a 200 with no result. */
type PastEnd = '404' | 'empty';

/** The members of `page` (1-based) as of `state.night`; null past the list's end. */
function pageOf(state: { night: number; nights: Nights }, page: number): number[] | 'fail' | null {
  const nights = state.nights;
  const found = nights[Math.min(state.night, Object.keys(nights).length)]![page - 1] ?? [];
  return found.length === 0 ? null : found;
}

/** search-jobs: pages of 10 by `start`, a 404 past the end (as the service answers), or an empty page. */
function searchService(state: { night: number; nights: Nights; calls?: number; answered?: (page: number) => void; pastEnd?: PastEnd }): Promise<string> {
  return startFake((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/v1/api/search-jobs') return void res.writeHead(404).end('{}');
    const page = Number(url.searchParams.get('start') ?? 0) / 10 + 1;
    state.calls = (state.calls ?? 0) + 1;
    res.on('finish', () => state.answered?.(page));
    const found = pageOf(state, page);
    if (found === 'fail') return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"boom"}');
    if (found === null && state.pastEnd !== 'empty') return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jobsResponse((found ?? []).map((n) => job(n)))));
  });
}

/** similar-companies: pages of `num` 10 by `page`, the size echoed; an empty page past the end, or its 404. */
function lookalikeService(state: { night: number; nights: Nights; pastEnd?: PastEnd }): Promise<string> {
  return startFake((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const page = Number((JSON.parse(text || '{}') as { page?: number }).page ?? 1);
      const found = pageOf(state, page);
      if (found === 'fail') return void res.writeHead(500, { 'content-type': 'application/json' }).end('{"message":"boom"}');
      if (found === null && state.pastEnd === '404') return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":true,"message":"Not Found"}');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(similarResponse((found ?? []).map((n) => company(n)), page, 10)));
    });
  });
}

/** A list's changes as `<run> <change> <member number>`, by run, change and number. */
async function listChanges(db: TestDb, entity: string): Promise<string[]> {
  const rows = await db.rows<{ run: number; change: string; member: string }>(
    'SELECT run_id AS run, change, coalesce(new, old) AS member FROM changes WHERE entity = ?', entity);
  const ordered = rows.map((c) => ({ ...c, n: memberNo(c.member) })).sort((a, b) => a.run - b.run || a.change.localeCompare(b.change) || a.n - b.n);
  return ordered.map((c) => `${c.run} ${c.change} ${c.n}`);
}

/** The number of db-fixtures' `job(n)` or `company(n)`, from its URL. */
function memberNo(url: string): number {
  const jobUrl = /acme-(\d{6,})/.exec(url);
  return jobUrl ? Number(jobUrl[1]) - 3800000000 : Number(/acme-(\d+)/.exec(url)![1]);
}
const listed = (run: number, change: string, members: number[]) => members.map((n) => `${run} ${change} ${n}`);

const HISTORY = 'SELECT run_id, task_id, at, entity, key, change, field, old, new FROM changes ORDER BY run_id, entity, key, change, field, old, new';

/** Reprocess rebuilds the same history from the raw answers (a 404 has no body: its api_calls row is replayed in its place). */
async function expectReprocessKeepsHistory(db: TestDb): Promise<void> {
  const before = await db.rows(HISTORY);
  await reprocessDatabase(db.locator);
  expect(await db.rows(HISTORY)).toEqual(before);
}

forEachEngine('a paged list that got shorter', (engine) => {
  async function nights(operation: 'search-jobs' | 'similar-companies', pages: Nights, pastEnd?: PastEnd) {
    const state = { night: 1, nights: pages, pastEnd };
    const search = operation === 'search-jobs';
    const api = { baseUrl: await (search ? searchService(state) : lookalikeService(state)), token: TOKEN };
    const db = await engine.open(ws.dir);
    await writeFile(join(ws.dir, 'queries.csv'), 'keywords,location\nrobotics engineer,germany\n');
    const common = { name: 'lists', pages: 3, rate: { requestsPerMinute: 60_000, concurrency: 1 }, retry: { retries: 0, minTimeoutMs: 10, maxTimeoutMs: 50 } };
    if (search) writeJobFile(ws.dir, { ...common, operation, input: { csv: 'queries.csv' } });
    else writeJobFile(ws.dir, { ...common, operation, input: { csv: 'companies.csv', column: 'company_url' }, request: { num: 10 } });
    const lists = await loadJob('lists.json', { cwd: ws.dir });
    const run = async (night: number) => {
      state.night = night;
      return (await runJobs({ dbPath: db.locator, jobs: [lists], api, refresh: night > 1 })).status;
    };
    return { db, run, entity: search ? 'search' : 'lookalike' };
  }

  for (const operation of ['search-jobs', 'similar-companies'] as const) {
    it(`${operation}: the members of the pages after a short page 1 are removed once, and added when they come back`, async () => {
      const { db, run, entity } = await nights(operation, SHRUNK);
      for (const night of [1, 2, 3, 4]) expect(await run(night)).toBe('completed');
      // Before: only 8, 9 and 10 (page 1's) were removed; 11 to 22 stayed members, and night 4 added none back.
      expect(await listChanges(db, entity)).toEqual([
        ...listed(1, 'added', range(1, 22)), ...listed(2, 'removed', range(8, 22)), ...listed(4, 'added', range(8, 22)),
      ]);
      await expectReprocessKeepsHistory(db);
    }, 90_000);
  }

  for (const operation of ['search-jobs', 'similar-companies'] as const) {
    for (const pastEnd of ['404', 'empty'] as const) {
      it(`${operation}: a page 2 that ends the list with no result (${pastEnd}) removes the members of pages 2 and 3`, async () => {
        const { db, run, entity } = await nights(operation, EXACTLY_10, pastEnd);
        for (const night of [1, 2, 3, 4]) expect(await run(night)).toBe('completed');
        // Before: nothing was removed (no row names the list), and night 4 added none back.
        expect(await listChanges(db, entity)).toEqual([
          ...listed(1, 'added', range(1, 22)), ...listed(2, 'removed', range(11, 22)), ...listed(4, 'added', range(11, 22)),
        ]);
        await expectReprocessKeepsHistory(db);
      }, 90_000);
    }

    it(`${operation}: a page 1 with no result removes every member`, async () => {
      const { db, run, entity } = await nights(operation, NONE_LEFT, operation === 'search-jobs' ? '404' : 'empty');
      for (const night of [1, 2, 3]) expect(await run(night)).toBe('completed');
      expect(await listChanges(db, entity)).toEqual([
        ...listed(1, 'added', range(1, 22)), ...listed(2, 'removed', range(1, 22)), ...listed(3, 'added', range(1, 22)),
      ]);
      await expectReprocessKeepsHistory(db);
    }, 90_000);
  }

  it('a page that fails removes nothing; a page with no result after it removes only its own', async () => {
    const { db, run, entity } = await nights('search-jobs', EMPTY_AFTER_FAIL);
    expect(await run(1)).toBe('completed');
    await run(2);
    expect(await db.taskStatuses('lists')).toMatchObject({ failed: 1, not_found: 1 });
    expect(await listChanges(db, entity)).toEqual([...listed(1, 'added', range(1, 22)), '2 removed 21', '2 removed 22']);
  }, 60_000);

  it('a short page 2 removes what left it and the page after it', async () => {
    const { db, run, entity } = await nights('search-jobs', PAGE_2_SHORT);
    for (const night of [1, 2, 3]) expect(await run(night)).toBe('completed');
    expect(await listChanges(db, entity)).toEqual([...listed(1, 'added', range(1, 22)), ...listed(2, 'removed', range(16, 22))]);
  }, 60_000);

  it('a page that fails removes none of its members', async () => {
    const { db, run, entity } = await nights('search-jobs', PAGE_2_FAILS);
    expect(await run(1)).toBe('completed');
    await run(2);
    expect(await db.taskStatuses('lists')).toMatchObject({ failed: 1 });
    expect(await listChanges(db, entity)).toEqual([...listed(1, 'added', range(1, 22)), '2 removed 22']);
  }, 60_000);

  it('a run stopped right after a short page settles the pages after it: the next run pays for none of them', async () => {
    const state: Parameters<typeof searchService>[0] = { night: 1, nights: SHRUNK };
    const api = { baseUrl: await searchService(state), token: TOKEN };
    const db = await engine.open(ws.dir);
    await writeFile(join(ws.dir, 'queries.csv'), 'keywords,location\nrobotics engineer,germany\n');
    writeJobFile(ws.dir, { name: 'lists', operation: 'search-jobs', pages: 3, input: { csv: 'queries.csv' }, rate: { requestsPerMinute: 60_000, concurrency: 1 } });
    const lists = await loadJob('lists.json', { cwd: ws.dir });
    expect((await runJobs({ dbPath: db.locator, jobs: [lists], api })).status).toBe('completed');
    // Night 2: page 1 lists 7 and ends the list; Ctrl-C comes as its answer does, before page 2 would be asked.
    state.night = 2;
    const stop = new AbortController();
    state.answered = () => stop.abort();
    expect((await runJobs({ dbPath: db.locator, jobs: [lists], api, refresh: true, signal: stop.signal })).status).toBe('interrupted');
    state.answered = undefined;
    expect(await db.taskStatuses('lists')).toEqual({ done: 1, not_found: 2 });
    const before = state.calls;
    expect((await runJobs({ dbPath: db.locator, jobs: [lists], api })).status).toBe('completed');
    expect(state.calls).toBe(before);
  }, 60_000);
});
