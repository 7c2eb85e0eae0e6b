/**
 * A lookalike that moves to another page of its list between two nights is neither removed nor added: the removal its
 * old page records is withdrawn when a later page of the same run finds it. Looked up once per page since a page of
 * 20,000 new lookalikes took minutes (a read of every change of the run per member). On both engines.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { company, similarResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'history-moved-token-0001';
let ws: OpsWorkspace;
const startFake = useFakeServices();
beforeEach(async () => {
  ws = await opsWorkspace({ companies: 1, concurrency: 1 });
});
afterEach(() => ws.cleanup());

/** Night 1: page 1 A B, page 2 C D. Night 2: B and C trade pages. */
const PAGES: Record<number, Record<number, string[]>> = { 1: { 1: ['a', 'b'], 2: ['c', 'd'] }, 2: { 1: ['a', 'c'], 2: ['b', 'd'] } };

forEachEngine('a lookalike moved to another page of its list', (engine) => {
  it('is neither removed nor added', async () => {
    let night = 1;
    let used = 0;
    const baseUrl = await startFake((req, res) => {
      if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
      let asked = '';
      req.on('data', (chunk: Buffer) => (asked += chunk.toString('utf8')));
      req.on('end', () => {
        const page = Number((JSON.parse(asked) as { page?: number }).page ?? 1);
        const content = PAGES[night]![page]!.map((m, i) => company(i + 1, { url: `https://www.network.com/company/moved-${m}` }));
        used += 1;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...similarResponse(content, page, 2), credits_used: used }));
      });
    });
    const db = await engine.open(ws.dir);
    const job = await loadJob(ws.lookalikesJob, { cwd: ws.dir });
    const api = { baseUrl, token: TOKEN };
    expect((await runJobs({ dbPath: db.locator, jobs: [job], api })).status).toBe('completed');
    night = 2;
    const second = await runJobs({ dbPath: db.locator, jobs: [job], api, refresh: true });
    expect(second.status).toBe('completed');
    const lookalikes = await db.rows<{ run: number; change: string; member: string }>(
      `SELECT run_id AS run, change, coalesce(new, old) AS member FROM changes WHERE entity = 'lookalike' ORDER BY run_id, member`);
    expect(lookalikes.map((c) => `${c.run} ${c.change} ${c.member.replace(/.*moved-/, '')}`)).toEqual(['1 added a', '1 added b', '1 added c', '1 added d']);
  }, 60_000);
});
