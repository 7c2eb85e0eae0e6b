/**
 * The sandbox in its live-service mode (members left out or null, the author's URL under the brand's name, a
 * page-size cap): every record that names itself is stored, with missing members as NULL, for all three
 * operations, and the drift is said in the summary.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { resolveOptions } from '../../src/sandbox/options.ts';
import { networkHost } from '../../src/urls/canonical.ts';
import { FAST_RATE, FAST_RETRY, companyUrls, csv, postUrls, query, run, taskStatuses, useWorkspaces } from '../support/run-helpers.ts';

const TOKEN = 'live-sandbox-token-7a21';
const newWorkspace = useWorkspaces();
let sandbox: Sandbox | null = null;

afterEach(async () => {
  await sandbox?.stop();
  sandbox = null;
});

describe('against the sandbox answering as the live service may', () => {
  it('stores every record of all three operations, missing members as NULL, follows the capped page size, says the drift', async () => {
    sandbox = await startSandbox({
      port: 0, tokens: { [TOKEN]: 1_000_000 }, notFoundRate: 0, liveShapes: ['absent-members', 'brand-url', 'page-cap'],
      memberMissingRate: 0.2, memberNullRate: 0.1,
    });
    const ws = await newWorkspace();
    await ws.write('leads.csv', csv(['company_url'], companyUrls(4).map((u) => [u])));
    await ws.write('posts.csv', csv(['post_url'], postUrls(20).map((u) => [u])));
    await ws.write('searches.csv', csv(['keywords'], [['welder'], ['data engineer']]));
    const common = { rate: FAST_RATE, retry: FAST_RETRY };
    const jobs = await ws.load(
      await ws.job('lookalikes', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, request: { num: 50 }, pages: 2, ...common }),
      await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, ...common }),
      await ws.job('searches', { operation: 'search-jobs', input: { csv: 'searches.csv' }, ...common }),
    );
    const summary = await run(ws, sandbox, TOKEN, jobs);

    expect(summary.status).toBe('completed');
    expect(summary.jobs.map((j) => j.failed)).toEqual([0, 0, 0]);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 20 });
    // Pages of 25 (the cap) answer a num of 50: page 2 is called for every company.
    expect(taskStatuses(ws, 'lookalikes').done).toBe(8);
    const companies = query<{ n: number }>(ws, 'SELECT count(DISTINCT company_url) AS n FROM similar_companies')[0]!.n;
    expect(companies).toBeGreaterThan(100);
    expect(query<{ n: number }>(ws, 'SELECT count(*) AS n FROM companies WHERE name IS NULL OR phone IS NULL OR founded_year IS NULL')[0]!.n).toBeGreaterThan(0);
    expect(query<{ n: number }>(ws, 'SELECT count(*) AS n FROM posts WHERE author_url IS NOT NULL')[0]!.n).toBeGreaterThan(0);
    expect(query<{ n: number }>(ws, 'SELECT count(*) AS n FROM jobs')[0]!.n).toBeGreaterThan(0);
    expect(query<{ n: number }>(ws, 'SELECT count(*) AS n FROM answer_anomalies')[0]!.n).toBe(0);

    const lines = summary.drift.map((d) => d.message);
    expect(lines).toContainEqual(expect.stringMatching(/^post-details author\.network_url: missing in \d+\/20, read from author\.acmenet_url$/));
    expect(lines).toContainEqual("similar-companies num: page size capped by the service in 8/8 answers (asked 50, answered 25); paging follows the service's size");
    for (const op of ['similar-companies', 'post-details', 'search-jobs']) {
      expect(lines.some((l) => l.startsWith(`${op} `) && / (missing|null) in /.test(l)), op).toBe(true);
    }
  });

  it('answers on the host the client takes by default: every URL the run stores is the one canonical form', async () => {
    // Every live shape on, url-forms included, and no host set on either side: `netingest sandbox --live` as a
    // new user starts it, and a run with no NETINGEST_NETWORK_HOST.
    sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 1_000_000 }, notFoundRate: 0, liveShapes: true, bareUrlRate: 0.4, countryUrlRate: 0.4 });
    expect(resolveOptions().networkHost).toBe(networkHost({}));
    const ws = await newWorkspace();
    await ws.write('leads.csv', csv(['company_url'], companyUrls(3).map((u) => [u])));
    const jobs = await ws.load(
      await ws.job('lookalikes', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, request: { num: 25 }, rate: FAST_RATE, retry: FAST_RETRY }),
    );
    const summary = await run(ws, sandbox, TOKEN, jobs);
    expect(summary.status).toBe('completed');
    const urls = query<{ url: string }>(ws, 'SELECT url FROM companies UNION ALL SELECT company_url FROM similar_companies UNION ALL SELECT reference_url FROM similar_companies');
    expect(urls.length).toBeGreaterThan(50);
    expect(urls.filter((r) => !r.url.startsWith('https://www.network.com/company/'))).toEqual([]);
  });
});

