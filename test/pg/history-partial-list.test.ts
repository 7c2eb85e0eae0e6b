/**
 * KNOWN LIMITATION, not fixed (hence `it.fails`): a run that stops between two pages of a list (credits out after
 * page 1) while a member moved from page 1 to page 2 records it `removed`, and the next run, finding it on page 2,
 * `added`, though it never left the list. A removal is withdrawn only by a later page of the same run
 * (record-changes.ts, listChange). When that is fixed this test fails: make it an `it`. On both engines.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { company, similarResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'history-partial-token-0001';
let ws: OpsWorkspace;
const startFake = useFakeServices();
beforeEach(async () => {
  ws = await opsWorkspace({ companies: 1, concurrency: 1 });
});
afterEach(() => ws.cleanup());

/** Night 1: page 1 A B, page 2 C D. Night 2 on: B and C trade pages. */
const PAGES: Record<number, Record<number, string[]>> = { 1: { 1: ['a', 'b'], 2: ['c', 'd'] }, 2: { 1: ['a', 'c'], 2: ['b', 'd'] } };

forEachEngine('a list a run stopped between pages of', (engine) => {
  it.fails('records no member removed that a page the run did not fetch holds', async () => {
    let night = 1;
    let used = 0;
    let creditsOutOnPage2 = false;
    const baseUrl = await startFake((req, res) => {
      if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
      let asked = '';
      req.on('data', (chunk: Buffer) => (asked += chunk.toString('utf8')));
      req.on('end', () => {
        const page = Number((JSON.parse(asked) as { page?: number }).page ?? 1);
        if (page === 2 && creditsOutOnPage2) return void res.writeHead(402, { 'content-type': 'application/json' }).end('{"message":"no credits"}');
        const content = PAGES[Math.min(night, 2)]![page]!.map((m, i) => company(i + 1, { url: `https://www.network.com/company/moved-${m}` }));
        used += 1;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...similarResponse(content, page, 2), credits_used: used }));
      });
    });
    const db = await engine.open(ws.dir);
    const job = await loadJob(ws.lookalikesJob, { cwd: ws.dir });
    const api = { baseUrl, token: TOKEN };
    expect((await runJobs({ dbPath: db.locator, jobs: [job], api })).status).toBe('completed');
    night = 2;
    creditsOutOnPage2 = true;
    expect((await runJobs({ dbPath: db.locator, jobs: [job], api, refresh: true })).status).toBe('stopped_credits');
    creditsOutOnPage2 = false;
    night = 3;
    expect((await runJobs({ dbPath: db.locator, jobs: [job], api })).status).toBe('completed');
    const lookalikes = await db.rows<{ run: number; change: string; member: string }>(
      `SELECT run_id AS run, change, coalesce(new, old) AS member FROM changes WHERE entity = 'lookalike' ORDER BY run_id, member`);
    // Today: ['1 added a', '1 added b', '1 added c', '1 added d', '2 removed b', '3 added b'].
    expect(lookalikes.map((c) => `${c.run} ${c.change} ${c.member.replace(/.*moved-/, '')}`)).toEqual(['1 added a', '1 added b', '1 added c', '1 added d']);
  }, 60_000);
});
