/**
 * Answers shaped as the live service may send them, from small hostile servers written here (not the sandbox):
 * members missing, null or sent as numeric strings, the author's URL under the brand's name, a record without
 * its identity among good ones, a capped page size, paid answers no contract can read, and answers naming
 * another post. Every record that names itself is stored, drift is said in the summary, --json, the log and
 * status, a service whose answers cannot be used stops the run (exit 6), and posts are never merged.
 */
import { driftPathLines } from '../../src/operations/drift.ts';
import type { IncomingMessage, ServerResponse } from 'node:http';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { registerRawBodyFunction } from '../../src/store/raw-body.ts';
import { createLogger } from '../../src/runner/logger.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { FAST_RATE, FAST_RETRY, companyUrls, csv, inProcess, postUrls, query, taskStatuses, useWorkspaces, type Workspace } from '../support/run-helpers.ts';

const TOKEN = 'live-answers-token-5e1c';
const newWorkspace = useWorkspaces();
const startFake = useFakeServices();

/** A fake service: `answer` gets the parsed request and returns status and JSON body; each 200 is charged 1 credit. */
async function fakeService(answer: (req: { path: string; query: URLSearchParams; body: any }) => { status: number; body: unknown }) {
  let used = 0;
  const calls: Array<{ path: string; query: URLSearchParams; body: any }> = [];
  const url = await startFake((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (text += d));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://x');
      // The free balance check is not offered here, and is not one of the lookups the tests count.
      if (u.pathname === '/v1/api/auth') return void res.writeHead(404).end('{}');
      const call = { path: u.pathname, query: u.searchParams, body: text ? JSON.parse(text) : null };
      calls.push(call);
      const { status, body } = answer(call);
      if (status === 200) used += 1;
      const counters = { total_credits: 1000, credits_used: used, credits_remaining: 1000 - used };
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(status === 200 ? { ...(body as object), ...counters } : body));
    });
  });
  return { url, calls, credits: () => used };
}

const address = { city: 'berlin', country: 'germany', geographicArea: null, isPrimary: true, line1: 'x 1', line2: null, postalCode: '10115' };

function company(i: number): Record<string, unknown> {
  return {
    url: `https://www.network.com/company/similar-${i}`,
    name: `Similar ${i}`,
    universalName: `similar-${i}`,
    type: 'PRIVATELY_HELD',
    objectUrn: 1000 + i,
    description: 'd',
    phone: '+4930000',
    followers: null,
    website: `https://similar-${i}.example`,
    logo: 'https://img.example/l.png',
    cover: null,
    tagline: null,
    foundedYear: 2001,
    staff: { total: 50, range: { start: 11, end: 50 } },
    locations: { headquarter: address, other: [] },
    fundingData: null,
    specialities: null,
    industries: ['Software'],
    hashtags: null,
    relevancy: { score: 0.5, value: 'B' },
  };
}

function post(postId: string): Record<string, unknown> {
  return {
    success: true,
    message: 'ok',
    PostId: postId,
    author: { name: 'Jane', headline: 'Engineer', network_url: 'https://www.network.com/in/jane', profile_image: '' },
    post: { timestamp: '03-11-2024', text_content: 'Hello', hashtags: null, post_media_description: '', post_media_url: [] },
    engagement: { reactions: 3, comments_count: 1 },
  };
}

const activityOf = (url: string) => /activity-(\d+)/.exec(url)![1]!;

/** A logger writing text lines into an array. */
function captureLog(): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const stream = { write: (s: string) => (lines.push(s.trimEnd()), true) } as unknown as NodeJS.WritableStream;
  return { lines, logger: createLogger({ stream }) };
}

async function companiesJob(ws: Workspace, urls: string[], extra: Record<string, unknown> = {}): Promise<string> {
  // An absolute path: the CLI runs in this process, whose current directory is not the workspace.
  const leads = await ws.write('leads.csv', csv(['company_url'], urls.map((u) => [u])));
  return ws.job('lookalikes', { operation: 'similar-companies', input: { csv: leads, column: 'company_url' }, rate: FAST_RATE, retry: FAST_RETRY, ...extra });
}

async function postsJob(ws: Workspace, urls: string[], extra: Record<string, unknown> = {}): Promise<string> {
  const posts = await ws.write('posts.csv', csv(['post_url'], urls.map((u) => [u])));
  return ws.job('posts', { operation: 'post-details', input: { csv: posts, column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY, ...extra });
}

describe('every record that names itself is stored', () => {
  it('a page of 10 companies with one lacking url, members missing, null and numeric strings: 9 stored, 1 set aside, drift said everywhere', async () => {
    const service = await fakeService(() => {
      const content = Array.from({ length: 10 }, (_, i) => company(i + 1));
      delete content[4]!['url'];
      content[0]!['phone'] = null;
      delete content[2]!['foundedYear'];
      content[3]!['foundedYear'] = '1999';
      content[5]!['staff'] = { total: '120' };
      content[6]!['locations'] = { headquarter: null, other: [] };
      for (const c of content) delete c['website'];
      return { status: 200, body: { success: true, message: 'ok', data: { content, number: 0, first: true, empty: false }, page: 1, num: 10 } };
    });
    const ws = await newWorkspace();
    const jobs = await ws.load(await companiesJob(ws, companyUrls(1), { request: { num: 10 } }));
    const log = captureLog();
    const summary = await runJobs({ dbPath: ws.db, jobs, api: { baseUrl: service.url, token: TOKEN }, logger: log.logger });

    expect(summary.status).toBe('completed');
    expect(summary.jobs[0]).toMatchObject({ done: 1, failed: 0, setAside: 1 });
    expect(query(ws, 'SELECT count(*) AS n FROM companies')).toEqual([{ n: 9 }]);
    expect(query(ws, 'SELECT rank FROM similar_companies ORDER BY rank').map((r: any) => r.rank)).toEqual([1, 2, 3, 4, 6, 7, 8, 9, 10]);
    const byName = (name: string) => query<any>(ws, 'SELECT * FROM companies WHERE name = ?', name)[0];
    expect(byName('Similar 1')).toMatchObject({ phone: null, website: null, founded_year: 2001 });
    expect(byName('Similar 3')).toMatchObject({ founded_year: null });
    expect(byName('Similar 4')).toMatchObject({ founded_year: 1999 });
    expect(byName('Similar 6')).toMatchObject({ staff_total: 120, staff_range_start: null });
    expect(query(ws, `SELECT count(*) AS n FROM company_locations WHERE company_url LIKE '%similar-7'`)).toEqual([{ n: 0 }]);
    expect(query(ws, 'SELECT kind, position, path, reason, operation FROM answer_anomalies')).toEqual([
      { kind: 'no_identity', position: 5, path: 'data.content[4]', reason: 'url is missing', operation: 'similar-companies' },
    ]);

    const lines = summary.drift.map((d) => d.message);
    expect(lines).toEqual(
      expect.arrayContaining([
        'similar-companies data.content[].website: missing in 10/10, stored as NULL',
        'similar-companies data.content[].phone: null in 1/10, stored as NULL',
        'similar-companies data.content[].url: missing in 1/10, stored as NULL',
        'similar-companies data.content[].foundedYear: missing in 1/10, stored as NULL',
        'similar-companies data.content[].foundedYear: of another type in 1/10 (string read as integer), stored as the value',
        'similar-companies data.content[].staff.range: missing in 1/10, stored as NULL',
        'similar-companies data.content[].locations.headquarter: null in 1/10, stored as NULL',
      ]),
    );
    // --json is the summary as JSON: the new field, with its figures.
    expect(JSON.parse(JSON.stringify(summary)).drift).toContainEqual({
      operation: 'similar-companies', path: 'data.content[].website', kind: 'missing', count: 10, of: 10, detail: null,
      message: 'similar-companies data.content[].website: missing in 10/10, stored as NULL',
    });
    // The log, status and the text summary say one line per path, its kinds together.
    const pathLines = driftPathLines(summary.drift);
    expect(pathLines).toContain(
      'similar-companies data.content[].foundedYear: missing in 1/10, stored as NULL; of another type in 1/10 (string read as integer), stored as the value',
    );
    expect(pathLines).toHaveLength(new Set(summary.drift.map((d) => d.path)).size);
    for (const line of pathLines) expect(log.lines.some((l) => l.includes(`WARN  answer drift: ${line}`)), line).toBe(true);

    // status says the last run's drift, and the text summary of a run says it too.
    const status = await inProcess(['status', '--db', ws.db]);
    expect(status.code).toBe(EXIT.ok);
    expect(status.stdout).toContain(`Answer drift in run ${summary.runId}`);
    for (const line of pathLines) expect(status.stdout).toContain(`  ${line}`);
    const json = JSON.parse((await inProcess(['status', '--db', ws.db, '--json'])).stdout);
    expect(json.drift.rows).toContainEqual({ operation: 'similar-companies', path: 'data.content[].website', kind: 'missing', count: 10, seen: 10, detail: null });
    const cli = await inProcess(['run', `${ws.dir}/lookalikes.json`, '--db', ws.db, '--refresh'], { NETINGEST_API_URL: service.url, NETINGEST_API_TOKEN: TOKEN });
    expect(cli.code, cli.stderr).toBe(EXIT.ok);
    expect(cli.stdout).toContain('    set aside: 1 record without its identity');
    // The figures first, then the first 5 drift lines and how to see the rest: 7 paths drifted here.
    expect(pathLines).toHaveLength(7);
    const printed = cli.stdout.split('\n');
    const drift = printed.filter((l) => l.startsWith('  drift: '));
    expect(drift).toEqual([...pathLines.slice(0, 5).map((l) => `  drift: ${l}`), '  drift: and 2 more (netingest status --drift)']);
    expect(printed.findIndex((l) => l.startsWith('  drift: '))).toBeGreaterThan(printed.findIndex((l) => /API calls?; credits/.test(l)));
    const all = await inProcess(['status', '--db', ws.db, '--drift']);
    expect(all.code).toBe(EXIT.ok);
    expect(all.stdout).toBe([`Answer drift in run ${summary.runId + 1} (answers that differ from the API's documented interface, stored as far as they can be read):`, ...pathLines.map((l) => `  ${l}`), ''].join('\n'));
  });

  it('post-details with the author URL under the brand name and members left out: stored, the rename said once per path', async () => {
    const urls = postUrls(4);
    const service = await fakeService(({ query: q }) => {
      const body = post(`activity-${activityOf(q.get('url')!)}`) as any;
      body.author = { name: 'Jane', headline: null, acmenet_url: 'https://www.network.com/in/jane-doe' };
      delete body.engagement.comments_count;
      body.engagement.reactions = '12';
      return { status: 200, body };
    });
    const ws = await newWorkspace();
    const jobs = await ws.load(await postsJob(ws, urls));
    const summary = await runJobs({ dbPath: ws.db, jobs, api: { baseUrl: service.url, token: TOKEN } });

    expect(summary.status).toBe('completed');
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 4 });
    const posts = query<any>(ws, 'SELECT post_id, author_url, author_headline, reactions, comments_count FROM posts ORDER BY post_id');
    expect(posts).toHaveLength(4);
    for (const p of posts) expect(p).toMatchObject({ author_url: 'https://www.network.com/in/jane-doe', author_headline: null, reactions: 12, comments_count: null });
    expect(summary.drift.map((d) => d.message)).toEqual([
      'post-details author.headline: null in 4/4, stored as NULL',
      'post-details author.network_url: missing in 4/4, read from author.acmenet_url',
      'post-details author.profile_image: missing in 4/4, stored as NULL',
      'post-details engagement.comments_count: missing in 4/4, stored as NULL',
      'post-details engagement.reactions: of another type in 4/4 (string read as integer), stored as the value',
    ]);
  });
});

describe('pages follow the service page size', () => {
  it('num 50 and 3 pages against a service that caps at 25 and echoes num 25: all 3 pages called, 75 stored, the cap said once', async () => {
    const CAP = 25;
    const service = await fakeService(({ body }) => {
      const page = body.page as number;
      const content = Array.from({ length: CAP }, (_, i) => company((page - 1) * CAP + i + 1));
      return { status: 200, body: { success: true, message: 'ok', data: { content, number: page - 1, first: page === 1, empty: false }, page, num: CAP } };
    });
    const ws = await newWorkspace();
    const jobs = await ws.load(await companiesJob(ws, companyUrls(1), { request: { num: 50 }, pages: 3 }));
    const summary = await runJobs({ dbPath: ws.db, jobs, api: { baseUrl: service.url, token: TOKEN } });

    expect(service.calls.map((c) => [c.body.page, c.body.num])).toEqual([[1, 50], [2, 50], [3, 50]]);
    expect(taskStatuses(ws, 'lookalikes')).toEqual({ done: 3 });
    expect(query(ws, 'SELECT count(*) AS n FROM companies')).toEqual([{ n: 75 }]);
    expect(summary.drift.map((d) => d.message)).toEqual([
      "similar-companies num: page size capped by the service in 3/3 answers (asked 50, answered 25); paging follows the service's size",
    ]);
  });

  it('search-jobs reads the page size from numResults and results: a full count with a short list does not end the paging', async () => {
    const service = await fakeService(({ query: q }) => {
      const start = Number(q.get('start') ?? 0);
      // Page 1 says 10 results but sends 9 readable ones and one without url; page 2 is full; page 3 short.
      const n = start >= 20 ? 4 : 10;
      const results = Array.from({ length: n }, (_, i) => ({ url: `https://www.network.com/jobs/view/${start + i}`, title: 't', criteria: { Industries: 'x' } }));
      if (start === 0) delete (results[9] as Record<string, unknown>)['url'];
      return { status: 200, body: { success: true, message: 'ok', currentPage: start / 10, numResults: n, results } };
    });
    const ws = await newWorkspace();
    await ws.write('searches.csv', csv(['keywords'], [['welder']]));
    const file = await ws.job('searches', { operation: 'search-jobs', input: { csv: 'searches.csv' }, pages: 4, rate: FAST_RATE, retry: FAST_RETRY });
    const summary = await runJobs({ dbPath: ws.db, jobs: await ws.load(file), api: { baseUrl: service.url, token: TOKEN } });
    expect(service.calls.map((c) => c.query.get('start'))).toEqual(['0', '10', '20']);
    expect(taskStatuses(ws, 'searches')).toEqual({ done: 3, not_found: 1 });
    expect(query(ws, 'SELECT count(*) AS n FROM jobs')).toEqual([{ n: 23 }]);
    expect(summary.jobs[0]).toMatchObject({ setAside: 1 });
  });
});

describe('a service whose answers cannot be used stops the run', () => {
  /** Every 200 paid, but the post wrapped where no contract looks for it. */
  const wrapped = ({ query: q }: { query: URLSearchParams }) => ({ status: 200, body: { result: post(`activity-${activityOf(q.get('url')!)}`) } });

  it('stops after max(5, concurrency) paid answers in a row, exit 6, names the operation, count, credits and first path; the rest deferred; reprocess after a fix stores them without a call', async () => {
    const service = await fakeService(wrapped);
    const ws = await newWorkspace();
    const file = await postsJob(ws, postUrls(40), { rate: { ...FAST_RATE, concurrency: 1 } });
    const cli = await inProcess(['run', file, '--db', ws.db], { NETINGEST_API_URL: service.url, NETINGEST_API_TOKEN: TOKEN });

    expect(cli.code, cli.stderr).toBe(EXIT.unusableAnswers);
    expect(EXIT.unusableAnswers).toBe(6);
    expect(service.calls).toHaveLength(5);
    expect(cli.stdout).toMatch(/stopped: the service's paid answers could not be read/);
    expect(cli.stdout).toContain(
      'error: post-details: 5 paid answers in a row could not be read (first: (root): none of PostId, author, post, engagement is there), costing about 5 credits',
    );
    expect(cli.stderr).toMatch(/ERROR run stopped: the service's paid answers cannot be read .*code=UNUSABLE_ANSWERS/);
    expect(taskStatuses(ws, 'posts')).toEqual({ failed: 5, deferred: 35 });
    expect(query(ws, `SELECT count(*) AS n FROM raw_responses WHERE error_code = 'SCHEMA'`)).toEqual([{ n: 5 }]);
    expect(query(ws, 'SELECT status, exit_code FROM runs')).toEqual([{ status: 'stopped_unusable', exit_code: 6 }]);

    // A fix that reads the wrapped post cannot be made from a test; unwrapping the stored bodies takes the same path.
    const rw = new BetterSqlite3(ws.db);
    registerRawBodyFunction(rw);
    try {
      rw.prepare(`UPDATE raw_responses SET body = json_extract(raw_body(body, body_encoding), '$.result'), body_encoding = NULL`).run();
    } finally {
      rw.close();
    }
    const re = await inProcess(['reprocess', '--db', ws.db]);
    expect(re.code, re.stderr).toBe(EXIT.ok);
    expect(re.stdout).toContain('Recovered 5 bodies');
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 5, deferred: 35 });
    expect(query(ws, 'SELECT count(*) AS n FROM posts')).toEqual([{ n: 5 }]);
    expect(service.calls).toHaveLength(5);
  });

  it('with concurrency 8 the limit is 8 in a row; a job setting changes it; an answer that can be stored starts the count again', async () => {
    let n = 0;
    const service = await fakeService((call) => (++n % 3 === 0 ? { status: 200, body: post(`activity-${activityOf(call.query.get('url')!)}`) } : wrapped(call)));
    const ws = await newWorkspace();
    const jobs = await ws.load(await postsJob(ws, postUrls(30), { rate: { ...FAST_RATE, concurrency: 8 } }));
    const summary = await runJobs({ dbPath: ws.db, jobs, api: { baseUrl: service.url, token: TOKEN } });
    // Two unusable answers between stored ones: never 8 in a row.
    expect(summary.stop).toBeNull();
    expect(service.calls).toHaveLength(30);

    const strictService = await fakeService(wrapped);
    const ws2 = await newWorkspace();
    const strictJobs = await ws2.load(await postsJob(ws2, postUrls(30), { rate: { ...FAST_RATE, concurrency: 1 }, retry: { ...FAST_RETRY, maxUnusableAnswers: 2 } }));
    const stopped = await runJobs({ dbPath: ws2.db, jobs: strictJobs, api: { baseUrl: strictService.url, token: TOKEN } });
    expect(stopped.stop?.reason).toBe('unusable');
    expect(strictService.calls).toHaveLength(2);
  });
});

describe('distinct posts are not merged', () => {
  it('35 URLs all answered with one PostId: 35 rows under the posts asked for, each answer an anomaly with both ids, counted in the summary', async () => {
    const urls = postUrls(35);
    const service = await fakeService(() => ({ status: 200, body: post('activity-1') }));
    const ws = await newWorkspace();
    const file = await postsJob(ws, urls);
    const cli = await inProcess(['run', file, '--db', ws.db, '--json'], { NETINGEST_API_URL: service.url, NETINGEST_API_TOKEN: TOKEN });
    expect(cli.code, cli.stderr).toBe(EXIT.ok);
    const summary = JSON.parse(cli.stdout);
    expect(summary.jobs[0]).toMatchObject({ done: 35, otherPost: 35 });
    const ids = query<{ post_id: string }>(ws, 'SELECT post_id FROM posts ORDER BY post_id').map((r) => r.post_id);
    expect(ids).toEqual(urls.map((u) => `activity-${activityOf(u)}`).sort());
    const anomalies = query<any>(ws, 'SELECT kind, asked_id, answered_id FROM answer_anomalies ORDER BY asked_id');
    expect(anomalies).toHaveLength(35);
    expect(anomalies[0]).toEqual({ kind: 'other_post', asked_id: ids[0], answered_id: 'activity-1' });
    expect(query(ws, `SELECT count(*) AS n FROM posts WHERE post_id = 'activity-1'`)).toEqual([{ n: 0 }]);

    // reprocess rebuilds the same rows and anomalies from the stored bodies.
    expect((await inProcess(['reprocess', '--db', ws.db])).code).toBe(EXIT.ok);
    expect(query(ws, 'SELECT count(*) AS n FROM posts')).toEqual([{ n: 35 }]);
    expect(query(ws, 'SELECT count(*) AS n FROM answer_anomalies')).toEqual([{ n: 35 }]);
  });

  it('URLs naming no activity: the first answer is stored under its PostId, another URL answered with the same PostId is not merged', async () => {
    const urls = ['https://www.network.com/pulse/first-article-jane', 'https://www.network.com/pulse/second-article-jane'];
    const service = await fakeService(() => ({ status: 200, body: post('activity-77') }));
    const ws = await newWorkspace();
    const jobs = await ws.load(await postsJob(ws, urls, { rate: { ...FAST_RATE, concurrency: 1 } }));
    const summary = await runJobs({ dbPath: ws.db, jobs, api: { baseUrl: service.url, token: TOKEN } });
    expect(summary.jobs[0]).toMatchObject({ done: 2, otherPost: 1 });
    expect(query(ws, 'SELECT post_id, url FROM posts')).toEqual([{ post_id: 'activity-77', url: 'https://www.network.com/pulse/first-article-jane' }]);
    expect(query(ws, 'SELECT kind, asked_id, answered_id FROM answer_anomalies')).toEqual([
      { kind: 'other_post', asked_id: 'https://www.network.com/pulse/second-article-jane', answered_id: 'activity-77' },
    ]);
  });
});
