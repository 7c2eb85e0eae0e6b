/**
 * One company, one task, one row: the editions of the network's site (`de.`, `m.`, bare, `www.`) are one lookup,
 * sent and stored as `https://www.<host>/...`; a URL on any other host, or a profile's activity feed, is an
 * invalid row that costs nothing. The CLI's code in this process against the sandbox and a counting server that
 * would answer (and bill) anything; the NETINGEST_NETWORK_HOST case runs a real CLI process, its host from the
 * environment that process starts with.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { NETWORK_HOST_ENV } from '../../src/urls/canonical.ts';
import { FAST_RATE, FAST_RETRY, cliEnv, csv, inProcess, makeWorkspace, query, requestedUrl, runCli, type Workspace } from '../support/run-helpers.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { postResponse } from '../support/db-fixtures.ts';

const TOKEN = 'host-token-7a1f';
const cleanups: Array<() => Promise<void>> = [];
const fakeService = useFakeServices();

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function setUp(): Promise<{ sandbox: Sandbox; ws: Workspace }> {
  const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 10_000 }, notFoundRate: 0 });
  const ws = await makeWorkspace();
  cleanups.push(() => sandbox.stop(), () => ws.cleanup());
  return { sandbox, ws };
}

const common = { pages: 1, rate: FAST_RATE, retry: FAST_RETRY };
const calls = (sandbox: Sandbox, op: string) => sandbox.requests.filter((r) => r.path.endsWith(`/${op}`));
type Invalid = { file: string; line: number; value: string; reason: string };

describe('the network host', () => {
  it('makes one call per company whatever edition the CSV names; other hosts and activity feeds cost nothing', async () => {
    const { sandbox, ws } = await setUp();
    await ws.write(
      'leads.csv',
      csv(['company_url'], [
        ['https://www.network.com/company/acme-robotics'], // 2
        ['https://de.network.com/company/acme-robotics'], // 3
        ['m.network.com/company/Acme-Robotics/about'], // 4
        ['network.com/company/acme-robotics'], // 5
        ['https://fr.network.com/company/globex'], // 6
        ['https://network.com/company/globex/'], // 7
        ['https://acme.com/company/about'], // 8: another site with a /company/ page
        ['https://network.com.evil.com/company/x'], // 9: the network's name as a subdomain of another host
      ]),
    );
    await ws.write(
      'posts.csv',
      csv(['post_url'], [
        ['https://www.network.com/posts/jane_x-activity-7100000000000000001-ab'], // 2
        ['https://de.network.com/posts/jane_x-activity-7100000000000000001-ab/'], // 3: the same post
        ['https://www.network.com/in/jane/recent-activity/all/'], // 4: a feed, not a post
      ]),
    );
    const leads = await ws.job('leads', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, ...common });
    const posts = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, ...common });
    const cli = await inProcess(['run', leads, posts, '--db', ws.db], cliEnv(sandbox, TOKEN), { cwd: ws.dir });
    expect(cli.stderr).not.toMatch(/unexpected error/);

    // One call per company and per post, each for the www. form, and the sandbox answered it.
    expect(calls(sandbox, 'similar-companies').map(requestedUrl).sort()).toEqual([
      'https://www.network.com/company/acme-robotics',
      'https://www.network.com/company/globex',
    ]);
    expect(calls(sandbox, 'post-details').map(requestedUrl)).toEqual(['https://www.network.com/posts/jane_x-activity-7100000000000000001-ab']);
    expect(query(ws, `SELECT job, input_key, status FROM tasks ORDER BY job, input_key`)).toEqual([
      { job: 'leads', input_key: 'https://www.network.com/company/acme-robotics', status: 'done' },
      { job: 'leads', input_key: 'https://www.network.com/company/globex', status: 'done' },
      { job: 'posts', input_key: 'https://www.network.com/posts/jane_x-activity-7100000000000000001-ab', status: 'done' },
    ]);
    // Stored rows carry the form the site writes.
    const stored = query<{ url: string }>(ws, `SELECT url FROM companies UNION ALL SELECT reference_url FROM similar_companies UNION ALL SELECT url FROM posts`);
    expect(stored.length).toBeGreaterThan(3);
    expect(stored.filter((r) => !r.url.startsWith('https://www.network.com/'))).toEqual([]);

    // The refused rows, with file, line and the host expected.
    const invalid = query<Invalid>(ws, `SELECT file, line, value, reason FROM invalid_inputs ORDER BY file, line`);
    expect(invalid.map((r) => [r.file, r.line, r.value])).toEqual([
      ['leads.csv', 8, 'https://acme.com/company/about'],
      ['leads.csv', 9, 'https://network.com.evil.com/company/x'],
      ['posts.csv', 4, 'https://www.network.com/in/jane/recent-activity/all/'],
    ]);
    expect(invalid[0]!.reason).toMatch(/not on network\.com \(host acme\.com; expected https:\/\/www\.network\.com\/company\/<name>\)/);
    expect(invalid[1]!.reason).toMatch(/not on network\.com \(host network\.com\.evil\.com/);
    expect(invalid[2]!.reason).toMatch(/not a post/);
  });

  it(`follows ${NETWORK_HOST_ENV}: the brand's editions are one lookup, the spec's host is then another site`, async () => {
    const { sandbox, ws } = await setUp();
    await ws.write(
      'leads.csv',
      csv(['company_url'], [['https://brand.example/company/acme'], ['de.brand.example/company/ACME'], ['https://www.network.com/company/acme']]),
    );
    const leads = await ws.job('leads', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, ...common });
    const env = { ...cliEnv(sandbox, TOKEN), [NETWORK_HOST_ENV]: 'brand.example' };
    await runCli(['run', leads, '--db', ws.db], { cwd: ws.dir, env });
    expect(calls(sandbox, 'similar-companies').map(requestedUrl)).toEqual(['https://www.brand.example/company/acme']);
    const invalid = query<Invalid>(ws, `SELECT line, reason FROM invalid_inputs`);
    expect(invalid).toEqual([{ line: 4, reason: expect.stringMatching(/^not on brand\.example \(host www\.network\.com/) }]);
  });

  it("stores the records of a service writing its brand's host bare, with www. or on country subdomains as one www. form", async () => {
    const sandbox = await startSandbox({
      port: 0, tokens: { [TOKEN]: 10_000 }, notFoundRate: 0,
      liveShapes: ['url-forms'], networkHost: 'acmenet.com', bareUrlRate: 0.4, countryUrlRate: 0.4,
    });
    const ws = await makeWorkspace();
    cleanups.push(() => sandbox.stop(), () => ws.cleanup());
    await ws.write('leads.csv', csv(['company_url'], [['https://acmenet.com/company/acme'], ['de.acmenet.com/company/globex'], ['https://www.acmenet.com/company/initech']]));
    const leads = await ws.job('leads', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, request: { num: 20 }, ...common });
    await inProcess(['run', leads, '--db', ws.db], { ...cliEnv(sandbox, TOKEN), [NETWORK_HOST_ENV]: 'acmenet.com' }, { cwd: ws.dir });
    expect(calls(sandbox, 'similar-companies')).toHaveLength(3);
    const urls = query<{ url: string }>(ws, `SELECT url FROM companies UNION ALL SELECT company_url FROM similar_companies UNION ALL SELECT reference_url FROM similar_companies`);
    expect(urls.length).toBeGreaterThan(20);
    expect(urls.filter((r) => !/^https:\/\/www\.acmenet\.com\/company\/[^/]+$/.test(r.url))).toEqual([]);
  });

  it(`refuses a ${NETWORK_HOST_ENV} that is not a domain name, before any call`, async () => {
    const { sandbox, ws } = await setUp();
    await ws.write('leads.csv', csv(['company_url'], [['https://www.network.com/company/acme']]));
    const leads = await ws.job('leads', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, ...common });
    const cli = await inProcess(['run', leads, '--db', ws.db], { ...cliEnv(sandbox, TOKEN), [NETWORK_HOST_ENV]: 'https://brand.example/' }, { cwd: ws.dir });
    expect(cli.code).toBe(2);
    expect(cli.stderr).toContain(NETWORK_HOST_ENV);
    expect(calls(sandbox, 'similar-companies')).toEqual([]);
  });
});

describe('any host is not a post host (issue 22.10)', () => {
  it('refuses other hosts, look-alikes, %00, credentials, ports and IP hosts before any call to a service that bills everything', async () => {
    const seen: string[] = [];
    const url = await fakeService((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(postResponse({ PostId: 'activity-7100000000000000009' })));
    });
    const ws = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    const hostile = [
      '//evil.com/posts/y', // 2
      'https://nеtwork.com/posts/x-activity-7100000000000000002', // 3: Cyrillic е
      'https://xn--ntwork-3ye.com/posts/x-activity-7100000000000000002', // 4: the same look-alike, spelled as punycode
      'https://www.network.com/posts/x%00-activity-7100000000000000003', // 5
      'https://user:pw@www.network.com/posts/x-activity-7100000000000000004', // 6
      'https://www.network.com:8443/posts/x-activity-7100000000000000005', // 7
      'https://93.184.216.34/posts/x-activity-7100000000000000006', // 8
      'https://[::1]/posts/x-activity-7100000000000000007', // 9
      'https://www.network.com.evil.com/posts/x-activity-7100000000000000008', // 10
    ];
    const good = 'https://m.network.com/posts/x-activity-7100000000000000009'; // 11
    await ws.write('posts.csv', csv(['post_url'], [...hostile, good].map((u) => [u])));
    const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, ...common });
    await inProcess(['run', job, '--db', ws.db], { NETINGEST_API_URL: url, NETINGEST_API_TOKEN: TOKEN }, { cwd: ws.dir });

    // The one good row was sent, as www. (so the server was reached); nothing else.
    const lookups = seen.filter((u) => u.includes('/post-details'));
    expect(lookups.map((u) => new URL(u, 'http://x').searchParams.get('url'))).toEqual(['https://www.network.com/posts/x-activity-7100000000000000009']);
    const invalid = query<Invalid>(ws, `SELECT line, value, reason FROM invalid_inputs ORDER BY line`);
    expect(invalid.map((r) => r.line)).toEqual(hostile.map((_, i) => i + 2));
    const reasons = invalid.map((r) => r.reason);
    expect(reasons[0]).toMatch(/not on network\.com \(host evil\.com/);
    expect(reasons[1]).toMatch(/internationalized look-alike/);
    expect(reasons[2]).toMatch(/internationalized look-alike/);
    expect(reasons[3]).toMatch(/control character/);
    expect(reasons[4]).toMatch(/credentials/);
    expect(reasons[5]).toMatch(/not on network\.com \(host www\.network\.com:8443/);
    expect(reasons[6]).toMatch(/IP address/);
    expect(reasons[7]).toMatch(/IP address/);
    expect(reasons[8]).toMatch(/not on network\.com \(host www\.network\.com\.evil\.com/);
  });
});
