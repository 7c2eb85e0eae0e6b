/**
 * A lookalike that moves to another page of its list between two nights is neither removed nor added: the removal its
 * old page records is withdrawn when a later page of the same run finds it. Looked up once per page since a page of
 * 20,000 new lookalikes took minutes (a read of every change of the run per member). On both engines.
 *
 * A run that stops between two pages (credits out after page 1) while a member moved from page 1 to page 2 records
 * it `removed`; the next run, finding it on page 2, withdraws that removal: one pass over the list, read in two runs.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { company, similarResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine, type TestDb } from './engines.ts';

const TOKEN = 'history-moved-token-0001';
let ws: OpsWorkspace;
const startFake = useFakeServices();
beforeEach(async () => {
  ws = await opsWorkspace({ companies: 1, concurrency: 1 });
});
afterEach(() => ws.cleanup());

/** Night 1: page 1 A B, page 2 C D. Night 2 on: B and C trade pages. */
const PAGES: Record<number, Record<number, string[]>> = { 1: { 1: ['a', 'b'], 2: ['c', 'd'] }, 2: { 1: ['a', 'c'], 2: ['b', 'd'] } };
/** Each member found on night 1, and no change after. */
const ADDED_ONCE = ['1 added a', '1 added b', '1 added c', '1 added d'];

/** Night 2: B leaves the list; night 3: it is back, on page 2. */
const LEFT_AND_BACK: Record<number, Record<number, string[]>> = { 1: PAGES[1]!, 2: { 1: ['a', 'c'], 2: ['d'] }, 3: { 1: ['a', 'c'], 2: ['b', 'd'] } };

/** The service's pages as of `state.night`; page 2 refused for want of credits (402) while `state.noCredits`. */
function pagedService(state: { night: number; noCredits: boolean; pages: Record<number, Record<number, string[]>> }): Promise<string> {
  let used = 0;
  return startFake((req, res) => {
    if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
    let asked = '';
    req.on('data', (chunk: Buffer) => (asked += chunk.toString('utf8')));
    req.on('end', () => {
      const page = Number((JSON.parse(asked) as { page?: number }).page ?? 1);
      if (page === 2 && state.noCredits) return void res.writeHead(402, { 'content-type': 'application/json' }).end('{"message":"no credits"}');
      const nights = state.pages;
      const content = nights[Math.min(state.night, Object.keys(nights).length)]![page]!.map((m, i) => company(i + 1, { url: `https://www.network.com/company/moved-${m}` }));
      used += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...similarResponse(content, page, 2), credits_used: used }));
    });
  });
}

/** The lookalike changes as `<run> <change> <member>`. */
async function lookalikeChanges(db: TestDb): Promise<string[]> {
  const rows = await db.rows<{ run: number; change: string; member: string }>(
    `SELECT run_id AS run, change, coalesce(new, old) AS member FROM changes WHERE entity = 'lookalike' ORDER BY run_id, member`);
  return rows.map((c) => `${c.run} ${c.change} ${c.member.replace(/.*moved-/, '')}`);
}

forEachEngine('a lookalike moved to another page of its list', (engine) => {
  async function nights(pages = PAGES) {
    const state = { night: 1, noCredits: false, pages };
    const api = { baseUrl: await pagedService(state), token: TOKEN };
    const db = await engine.open(ws.dir);
    const job = await loadJob(ws.lookalikesJob, { cwd: ws.dir });
    const run = (refresh: boolean) => runJobs({ dbPath: db.locator, jobs: [job], api, refresh }).then((s) => s.status);
    return { state, db, run };
  }

  it('is neither removed nor added', async () => {
    const { state, db, run } = await nights();
    expect(await run(false)).toBe('completed');
    state.night = 2;
    expect(await run(true)).toBe('completed');
    expect(await lookalikeChanges(db)).toEqual(ADDED_ONCE);
  }, 60_000);

  it('is not removed by a run that stopped before the page it moved to', async () => {
    const { state, db, run } = await nights();
    expect(await run(false)).toBe('completed');
    Object.assign(state, { night: 2, noCredits: true });
    expect(await run(true)).toBe('stopped_credits');
    Object.assign(state, { night: 3, noCredits: false });
    expect(await run(false)).toBe('completed');
    // Before a pass could span two runs: ['1 added a', '1 added b', '1 added c', '1 added d', '2 removed b', '3 added b'].
    expect(await lookalikeChanges(db)).toEqual(ADDED_ONCE);
  }, 60_000);

  it('that left the list and came back on another page a later night is removed, then added', async () => {
    const { state, db, run } = await nights(LEFT_AND_BACK);
    expect(await run(false)).toBe('completed');
    state.night = 2;
    expect(await run(true)).toBe('completed');
    state.night = 3;
    expect(await run(true)).toBe('completed');
    // Its removal belongs to night 2's pass over the list, which ended: night 3's page 2 does not withdraw it.
    expect(await lookalikeChanges(db)).toEqual([...ADDED_ONCE, '2 removed b', '3 added b']);
  }, 60_000);
});
