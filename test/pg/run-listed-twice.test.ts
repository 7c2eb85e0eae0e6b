/**
 * A company listed twice on one page of similar-companies (a garbled or hostile service's) is stored at the rank the
 * service gave it first, with that record's values, and its history counts it once: it kept its last rank (4, not 1),
 * the second copy's values, and recorded them as changed within the one answer. On both engines.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { company, similarResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'listed-twice-token-0001';
let ws: OpsWorkspace;
const startFake = useFakeServices();
beforeEach(async () => {
  ws = await opsWorkspace({ companies: 1, concurrency: 1 });
});
afterEach(() => ws.cleanup());

const url = (m: string) => `https://www.network.com/company/twice-${m}`;

/** Page 1 lists A, B, C, then A again with other values; page 2 is empty. */
function twiceService(): Promise<string> {
  return startFake((req, res) => {
    if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
    let asked = '';
    req.on('data', (chunk: Buffer) => (asked += chunk.toString('utf8')));
    req.on('end', () => {
      const page = Number((JSON.parse(asked) as { page?: number }).page ?? 1);
      const content = page === 1
        ? [company(1, { url: url('a'), name: 'A first' }), company(2, { url: url('b') }), company(3, { url: url('c') }), company(4, { url: url('a'), name: 'A again' })]
        : [];
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...similarResponse(content, page, 4), credits_used: page }));
    });
  });
}

forEachEngine('a company listed twice on one page', (engine) => {
  it('keeps the rank and values of its first listing, and is added once to the history', async () => {
    const api = { baseUrl: await twiceService(), token: TOKEN };
    const db = await engine.open(ws.dir);
    const job = await loadJob(ws.lookalikesJob, { cwd: ws.dir });
    expect((await runJobs({ dbPath: db.locator, jobs: [job], api })).status).toBe('completed');
    const ranks = await db.rows<{ member: string; rank: number }>('SELECT company_url AS member, rank FROM similar_companies ORDER BY rank');
    expect(ranks.map((r) => `${r.member.replace(/.*twice-/, '')} ${r.rank}`)).toEqual(['a 1', 'b 2', 'c 3']);
    expect(await db.rows('SELECT name FROM companies WHERE url = ?', url('a'))).toEqual([{ name: 'A first' }]);
    const changes = await db.rows<{ change: string; member: string | null }>(
      `SELECT change, coalesce(new, old) AS member FROM changes WHERE key = ? OR new = ? ORDER BY id`, url('a'), url('a'));
    expect(changes).toEqual([{ change: 'added', member: null }, { change: 'added', member: url('a') }]);
  }, 60_000);
});
