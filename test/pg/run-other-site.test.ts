/**
 * Issue #28 item 14: an answer naming pages on another host than the network's (a sandbox or service answering
 * for another brand) is drift, said once in the summary and by `status --drift`, and its URLs are not stored as
 * keys: no `https://acmenet.com/company/x` beside `https://www.network.com/company/x`. It used to store them
 * all, each foreign spelling a company of its own.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { formatStatusDrift, statusReport } from '../../src/runner/status-report.ts';
import { company, similarResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'other-site-token-0001';
const COMPANIES = 3;
let ws: OpsWorkspace;
const startFake = useFakeServices();

beforeEach(async () => {
  ws = await opsWorkspace({ companies: COMPANIES, retries: 1 });
});
afterEach(() => ws.cleanup());

/** Each page lists one lookalike on the network's site and two on acmenet.com (bare and a country edition). */
async function startOtherSiteService(): Promise<{ url: string; calls: () => number }> {
  let used = 0;
  const url = await startFake((req, res) => {
    if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
    used += 1;
    const content = [
      company(used, { url: `https://www.network.com/company/own-${used}` }),
      company(used, { url: `https://acmenet.com/company/own-${used}` }),
      company(used, { url: `https://in.acmenet.com/company/other-${used}` }),
    ];
    const body = { ...similarResponse(content, 1, 10), total_credits: 1000, credits_used: used, credits_remaining: 1000 - used };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  return { url, calls: () => used };
}

forEachEngine('an answer naming pages on another host', (engine) => {
  it('is drift, said once, and its records are not stored under foreign keys', async () => {
    const service = await startOtherSiteService();
    const db = await engine.open(ws.dir);
    const job = await loadJob(ws.lookalikesJob, { cwd: ws.dir });
    const summary = await runJobs({ dbPath: db.locator, jobs: [job], api: { baseUrl: service.url, token: TOKEN } });
    expect(summary.status).toBe('completed');
    const calls = service.calls();
    expect(calls).toBe(COMPANIES);

    const urls = (await db.rows<{ url: string }>('SELECT url FROM companies ORDER BY url')).map((r) => r.url);
    expect(urls).toHaveLength(COMPANIES);
    for (const url of urls) expect(url).toMatch(/^https:\/\/www\.network\.com\/company\/own-\d$/);
    const listed = await db.rows<{ url: string }>('SELECT company_url AS url FROM similar_companies');
    expect(listed).toHaveLength(COMPANIES);
    expect(listed.filter((r) => !r.url.startsWith('https://www.network.com/'))).toEqual([]);

    const drift = summary.drift.filter((d) => d.kind === 'host');
    expect(drift).toHaveLength(1);
    expect(drift[0]).toMatchObject({ operation: 'similar-companies', path: 'data.content[].url', count: 2 * calls, of: 3 * calls });
    expect(drift[0]!.message).toMatch(/a page on another host than the network's in 6\/9 \(acmenet\.com, not network\.com\), not stored/);
    expect(await db.rows('SELECT path, count FROM answer_drift WHERE kind = ?', 'host')).toEqual([{ path: 'data.content[].url', count: 2 * calls }]);
    const status = formatStatusDrift(await statusReport({ db: db.locator, runs: 1 }));
    expect(status).toMatch(/similar-companies data\.content\[\]\.url: a page on another host than the network's in 6\/9 \(acmenet\.com/);
  }, 60_000);
});
