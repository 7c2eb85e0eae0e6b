/**
 * A search whose pages do not hold 10 results each (the service sent 12 on page 1): its history records only what
 * changed, and a job still in the results is never `removed` and `added` again. Pages were once told apart by
 * position / 10, so page 1's 11th and 12th results counted as page 2's: every refresh recorded page 2's ten jobs
 * `added` and those two `removed`, and `enrich` left the two out. On both engines.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { job, jobsResponse } from '../support/db-fixtures.ts';
import { inProcess } from '../support/run-helpers.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { writeJobFile } from '../soak/inputs.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine, type TestDb, type TestEngine } from './engines.ts';

const TOKEN = 'history-search-pages-token-01';
let ws: OpsWorkspace;
const startFake = useFakeServices();
beforeEach(async () => {
  ws = await opsWorkspace({ companies: 1, concurrency: 1 });
});
afterEach(() => ws.cleanup());

type Nights = Record<number, Record<number, number[]>>;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
/** Page 1 (start 0) answers 12 results, page 2 (start 10) the next 10, the same each night. */
const SAME: Nights = { 1: { 0: range(1, 12), 10: range(13, 22) } };
/** Night 2: job 20 leaves page 2, job 30 comes in its place. */
const ONE_REPLACED: Nights = { 1: SAME[1]!, 2: { 0: range(1, 12), 10: [...range(13, 19), 30, 21, 22] } };
/**
 * Night 2: page 1 holds 8 results, and ends the list: jobs 9 to 12 are removed, and page 2's (not asked: page 1 says
 * it holds nothing) with them.
 */
const SHORTER: Nights = { 1: SAME[1]!, 2: { 0: range(1, 8), 10: [] } };

/** The service's pages as of `state.night`, by `start`. */
function searchService(state: { night: number; nights: Nights }): Promise<string> {
  let used = 0;
  return startFake((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== '/v1/api/search-jobs') return void res.writeHead(404).end('{}');
    const nights = state.nights;
    const pages = nights[Math.min(state.night, Object.keys(nights).length)]!;
    const found = pages[Number(url.searchParams.get('start') ?? 0)] ?? [];
    if (found.length === 0) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"Not Found"}');
    used += 1;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...jobsResponse(found.map((n) => job(n))), credits_used: used }));
  });
}

/** The search changes as `<run> <change> <job number>`, by run, change and number. */
async function searchChanges(db: TestDb): Promise<string[]> {
  const rows = await db.rows<{ run: number; change: string; member: string }>(
    `SELECT run_id AS run, change, coalesce(new, old) AS member FROM changes WHERE entity = 'search'`);
  const ordered = rows.map((c) => ({ ...c, n: jobNo(c.member) })).sort((a, b) => a.run - b.run || a.change.localeCompare(b.change) || a.n - b.n);
  return ordered.map((c) => `${c.run} ${c.change} ${c.n}`);
}

/** The number of a job of db-fixtures' `job(n)`, from its URL. */
const jobNo = (url: string) => Number(/acme-(\d+)/.exec(url)![1]) - 3800000000;
const added = (run: number, jobs: number[]) => jobs.map((n) => `${run} added ${n}`);

/** A dataset on `engine`, a fake service answering `pages` by night, and the run of one night (a refresh after the first). */
async function nights(engine: TestEngine, pages: Nights) {
  const state = { night: 1, nights: pages };
  const api = { baseUrl: await searchService(state), token: TOKEN };
  const db = await engine.open(ws.dir);
  await writeFile(join(ws.dir, 'queries.csv'), 'keywords,location\nrobotics engineer,germany\n');
  writeJobFile(ws.dir, {
    name: 'searches', operation: 'search-jobs', input: { csv: 'queries.csv' }, pages: 2,
    rate: { requestsPerMinute: 60_000, concurrency: 1 }, retry: { retries: 0, minTimeoutMs: 10, maxTimeoutMs: 50 },
  });
  const searches = await loadJob('searches.json', { cwd: ws.dir });
  const run = async (night: number) => {
    state.night = night;
    return (await runJobs({ dbPath: db.locator, jobs: [searches], api, refresh: night > 1 })).status;
  };
  return { db, run };
}

forEachEngine('a search whose page 1 holds 12 results', (engine) => {

  it('records nothing on a night whose answers are the same', async () => {
    const { db, run } = await nights(engine, SAME);
    expect(await run(1)).toBe('completed');
    expect(await run(2)).toBe('completed');
    // Before: night 2 also recorded '2 added 13' to '2 added 22', '2 removed 11' and '2 removed 12'.
    expect(await searchChanges(db)).toEqual(added(1, range(1, 22)));
  }, 60_000);

  it('records only the job that left and the one that came', async () => {
    const { db, run } = await nights(engine, ONE_REPLACED);
    expect(await run(1)).toBe('completed');
    expect(await run(2)).toBe('completed');
    expect(await searchChanges(db)).toEqual([...added(1, range(1, 22)), '2 added 30', '2 removed 20']);
  }, 60_000);

  it('records the results a shorter page 1 no longer holds', async () => {
    const { db, run } = await nights(engine, SHORTER);
    expect(await run(1)).toBe('completed');
    expect(await run(2)).toBe('completed');
    expect(await searchChanges(db)).toEqual([...added(1, range(1, 22)), ...range(9, 22).map((n) => `2 removed ${n}`)]);
  }, 60_000);

  it('enrich lists page 1\'s 12 results, then page 2\'s, ranked 1 to 22', async () => {
    const { db, run } = await nights(engine, SAME);
    expect(await run(1)).toBe('completed');
    const out = join(ws.dir, 'enriched.jsonl');
    const cli = await inProcess(['enrich', 'searches.json', '--db', db.locator, '--out', out, '--rows', 'per-result', '--format', 'jsonl'], {}, { cwd: ws.dir });
    expect(cli.code, cli.stderr).toBe(0);
    const results = (await readFile(out, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { job_rank: number; job_url: string });
    // Before: 20 rows; page 2's answer hid page 1's 11th and 12th (taken for page 2's, from an older answer).
    expect(results.map((r) => `${r.job_rank} ${jobNo(r.job_url)}`)).toEqual(range(1, 22).map((n) => `${n} ${n}`));
  }, 60_000);
});

/**
 * An older release's run, open on the dataset when a newer command upgraded it, goes on writing results without a page
 * (page 2's here, as its last answers). They are read as the migration read the rows before them: position / 10 + 1.
 */
forEachEngine('results an older release wrote after the upgrade, without a page', (engine) => {
  it('enrich lists them and the history still removes the job that leaves their page', async () => {
    const { db, run } = await nights(engine, ONE_REPLACED);
    expect(await run(1)).toBe('completed');
    await db.run('UPDATE job_search_results SET page = NULL WHERE page = 2');

    const out = join(ws.dir, 'enriched.jsonl');
    const cli = await inProcess(['enrich', 'searches.json', '--db', db.locator, '--out', out, '--rows', 'per-result', '--format', 'jsonl'], {}, { cwd: ws.dir });
    expect(cli.code, cli.stderr).toBe(0);
    const results = (await readFile(out, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { job_rank: number; job_url: string });
    // Before: 12 rows, page 2's ten left out.
    expect(results.map((r) => `${r.job_rank} ${jobNo(r.job_url)}`)).toEqual(range(1, 22).map((n) => `${n} ${n}`));

    expect(await run(2)).toBe('completed');
    // Before: no '2 removed 20' (a row without a page was on no page the answers named).
    expect(await searchChanges(db)).toEqual([...added(1, range(1, 22)), '2 added 30', '2 removed 20']);
  }, 60_000);
});
