/**
 * The run engine end to end, one job per operation against the real sandbox and a real SQLite file: tasks,
 * normalized rows, api_calls, raw_responses, the run row and the summary; then a re-run (nothing called) and a
 * refresh (called again, no duplicate rows). Expected data is fetched from a second sandbox with the same seed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type LoggedRequest, type Sandbox } from '../../src/sandbox/server.ts';
import { canonicalCompanyUrl, canonicalJobUrl, canonicalPostUrl } from '../../src/urls/canonical.ts';
import { filterKey, searchKey } from '../../src/jobs/request-keys.ts';
import type { Job } from '../../src/jobs/schema.ts';
import type { RunSummary } from '../../src/runner/run-jobs.ts';
import { DEFAULT_NETWORK_HOST, type CompanyRecord, type JobRecord, type PostDetailsResponse } from '../../src/spec/types.ts';
import { FAST_RATE, FAST_RETRY, count, makeWorkspace, query, run, taskStatuses, type Workspace, operationRequests } from '../support/run-helpers.ts';

const TOKEN = 'ops-token-3f9a1c';
const PROBE_TOKEN = 'probe-token';

let sandbox: Sandbox;
let probe: Sandbox;
let ws: Workspace;
let jobs: Job[];
let first: RunSummary;

function canon(f: (u: unknown, host: string) => { ok: true; url: string } | { ok: false; reason: string }, u: string): string {
  const r = f(u, DEFAULT_NETWORK_HOST);
  if (!r.ok) throw new Error(`not canonical: ${u}`);
  return r.url;
}

/** A 200/404 answer of the probe sandbox (same seed, own token): what the run must have been served. */
async function probeCall(path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(probe.url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${PROBE_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

const SIMILAR_CSV = [
  'company_url,owner',
  'https://www.network.com/company/acme-robotics,jane',
  'www.network.com/company/globex-logistics/,omar',
  'network.com/company/initech?trk=x,li',
  'WWW.NETWORK.COM/company/Acme-Robotics/about/,jane',
  'https://www.network.com/company/notfound-ghost-corp,omar',
  'https://www.network.com/in/jane-doe,li',
  ',li',
].join('\n');

const POSTS_CSV = [
  'post_url;campaign',
  'https://www.network.com/posts/jane-doe_robots-activity-7123456789012345678-abcd;a',
  'www.network.com/posts/omar-h_logistics-activity-7123456789012345679-efgh/;a',
  'https://network.com/feed/update/urn:li:activity:7123456789012345681;b',
  'https://www.network.com/posts/jane-doe_robots-activity-7123456789012345678-abcd/?utm_source=share;b',
  'https://www.network.com/posts/notfound-deleted-activity-7000000000000000000-zzzz;a',
  'https://www.network.com/company/acme-robotics;oops',
].join('\n');

const SEARCH_CSV = [
  'keywords,location,experienceLevels,jobTypes',
  'robotics engineer,,entry level;associate,"full time,part time"',
  'data analyst,france,,',
  'warehouse notfound,,,',
  'robotics engineer , germany,entry level ; associate,"full time,part time"',
].join('\n');

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 10_000 }, notFoundRate: 0 });
  probe = await startSandbox({ port: 0, tokens: { [PROBE_TOKEN]: 10_000 }, notFoundRate: 0 });
  ws = await makeWorkspace();
  await ws.write('leads.csv', SIMILAR_CSV + '\n');
  await ws.write('posts.csv', POSTS_CSV + '\n');
  await ws.write('queries.csv', SEARCH_CSV + '\n');
  const files = [
    await ws.job('lookalikes', {
      operation: 'similar-companies',
      input: { csv: 'leads.csv', column: 'company_url' },
      request: { account: { location: ['Germany', 'france'], employeeSize: { range: [{ start: 11, end: 50 }] } }, num: 5 },
      pages: 2,
      rate: FAST_RATE,
      retry: FAST_RETRY,
    }),
    await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY }),
    await ws.job('searches', {
      operation: 'search-jobs',
      input: { csv: 'queries.csv' },
      request: { timePosted: 'past_week', location: 'germany' },
      pages: 2,
      rate: FAST_RATE,
      retry: FAST_RETRY,
    }),
  ];
  jobs = await ws.load(...files);
  first = await run(ws, sandbox, TOKEN, jobs);
});

afterAll(async () => {
  await sandbox?.stop();
  await probe?.stop();
  await ws?.cleanup();
});

function requestsTo(op: string, log: LoggedRequest[] = sandbox.requests): LoggedRequest[] {
  return log.filter((r) => r.path === `/v1/api/${op}`);
}

describe('a run of the three operations', () => {
  it('similar-companies: pages in order with the filters, short lists end early, rows match what was served', async () => {
    const account = { location: ['germany', 'france'], employeeSize: { type: 'RANGE', range: [{ start: 11, end: 50 }] } };
    const companies = ['acme-robotics', 'globex-logistics', 'initech', 'notfound-ghost-corp'].map(
      (slug) => `https://www.network.com/company/${slug}`,
    );
    const logged = requestsTo('similar-companies');
    // Every body carries the job's filters (locations lower-cased, the size type filled in) and page size.
    for (const r of logged) {
      expect(r.body).toMatchObject({ account, num: 5 });
      expect(companies).toContain((r.body as { url: string }).url);
      expect(r.headers['authorization']).toBe(`Bearer ${TOKEN}`);
    }
    const fkey = filterKey(account);
    let expectedCalls = 0;
    for (const ref of companies) {
      const p1 = await probeCall('/v1/api/similar-companies', { url: ref, account, page: 1, num: 5 });
      const content1 = p1.status === 200 ? ((p1.json['data'] as { content: CompanyRecord[] }).content) : [];
      const callPage2 = p1.status === 200 && content1.length === 5;
      const p2 = callPage2 ? await probeCall('/v1/api/similar-companies', { url: ref, account, page: 2, num: 5 }) : null;
      const content2 = p2?.status === 200 ? (p2.json['data'] as { content: CompanyRecord[] }).content : [];
      const mine = logged.filter((r) => (r.body as { url: string }).url === ref).map((r) => (r.body as { page: number }).page);
      expect(mine, ref).toEqual(callPage2 ? [1, 2] : [1]);
      expectedCalls += mine.length;

      const tasks = query<{ page: number; status: string; attempts: number }>(
        ws,
        `SELECT page, status, attempts FROM tasks WHERE job = 'lookalikes' AND input_key = ? ORDER BY page`,
        ref,
      );
      expect(tasks.map((t) => t.page)).toEqual([1, 2]);
      expect(tasks[0]!.status).toBe(p1.status === 200 ? 'done' : 'not_found');
      expect(tasks[1]!.status).toBe(p2?.status === 200 ? 'done' : 'not_found');
      // A page settled after a short or missing page was never paid for.
      if (!callPage2) expect(tasks[1]!.attempts).toBe(0);

      const rows = query<{ company_url: string; rank: number; page: number; relevancy_score: number; relevancy_grade: string; filter_key: string }>(
        ws,
        'SELECT company_url, rank, page, relevancy_score, relevancy_grade, filter_key FROM similar_companies WHERE reference_url = ? ORDER BY page, rank',
        ref,
      );
      const served = [...content1.map((c, i) => ({ c, page: 1, rank: i + 1 })), ...content2.map((c, i) => ({ c, page: 2, rank: i + 1 }))];
      expect(rows).toEqual(
        served.map(({ c, page, rank }) => ({
          company_url: canon(canonicalCompanyUrl, c.url),
          rank,
          page,
          relevancy_score: c.relevancy.score,
          relevancy_grade: c.relevancy.value,
          filter_key: fkey,
        })),
      );
      for (const { c } of served) {
        const [row] = query<Record<string, unknown>>(ws, 'SELECT * FROM companies WHERE url = ?', canon(canonicalCompanyUrl, c.url));
        expect(row).toMatchObject({
          name: c.name,
          universal_name: c.universalName,
          type: c.type,
          object_urn: c.objectUrn,
          description: c.description,
          website: c.website,
          founded_year: c.foundedYear,
          staff_total: c.staff.total,
          staff_range_start: c.staff.range.start,
          staff_range_end: c.staff.range.end,
        });
        expect(count(ws, 'SELECT count(*) FROM company_industries WHERE company_url = ?', canon(canonicalCompanyUrl, c.url))).toBe(c.industries.length);
        expect(count(ws, 'SELECT count(*) FROM company_locations WHERE company_url = ?', canon(canonicalCompanyUrl, c.url))).toBe(
          1 + c.locations.other.length,
        );
      }
    }
    expect(logged).toHaveLength(expectedCalls);
    // The fixture covers both ways: a list that needed page 2 and one that ended on page 1.
    expect(expectedCalls).toBeGreaterThan(companies.length + 1);
    expect(expectedCalls).toBeLessThan(companies.length * 2);
    // The notfound company was asked once (page 1: 404) and its page 2 settled without a call.
    expect(taskStatuses(ws, 'lookalikes')).toEqual({ done: expect.any(Number), not_found: expect.any(Number) });
  });

  it('post-details: one call per distinct post, rows and media as served', async () => {
    const logged = requestsTo('post-details');
    const expected = [
      'https://www.network.com/posts/jane-doe_robots-activity-7123456789012345678-abcd',
      'https://www.network.com/posts/omar-h_logistics-activity-7123456789012345679-efgh',
      'https://www.network.com/feed/update/urn:li:activity:7123456789012345681',
      'https://www.network.com/posts/notfound-deleted-activity-7000000000000000000-zzzz',
    ];
    expect(logged.map((r) => r.query['url']).sort()).toEqual([...expected].sort());
    for (const url of expected) {
      const p = await probeCall(`/v1/api/post-details?url=${encodeURIComponent(url)}`);
      const [task] = query<{ status: string }>(ws, `SELECT status FROM tasks WHERE job = 'posts' AND input_key = ?`, url);
      expect(task?.status, url).toBe(p.status === 200 ? 'done' : 'not_found');
      if (p.status !== 200) {
        expect(count(ws, 'SELECT count(*) FROM posts WHERE url = ?', url)).toBe(0);
        continue;
      }
      const body = p.json as unknown as PostDetailsResponse;
      const [row] = query<Record<string, unknown>>(ws, 'SELECT * FROM posts WHERE url = ?', canon(canonicalPostUrl, url));
      expect(row).toMatchObject({
        post_id: body.PostId,
        author_name: body.author.name,
        author_headline: body.author.headline,
        text_content: body.post.text_content,
        posted_raw: body.post.timestamp,
        media_description: body.post.post_media_description,
        reactions: body.engagement.reactions,
        comments_count: body.engagement.comments_count,
      });
      const media = query<{ url: string; position: number }>(ws, 'SELECT url, position FROM post_media WHERE post_id = ? ORDER BY position', body.PostId);
      expect(media).toEqual(body.post.post_media_url.map((u, i) => ({ url: u, position: i + 1 })));
    }
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 3, not_found: 1 });
  });

  it('search-jobs: request defaults fill empty cells, list cells become comma lists, pages by start', async () => {
    const logged = requestsTo('search-jobs');
    const robotics = { keywords: 'robotics engineer', location: 'germany', timePosted: 'past_week', experienceLevels: 'entry level,associate', jobTypes: 'full time,part time' };
    const analyst = { keywords: 'data analyst', location: 'france', timePosted: 'past_week' };
    const missing = { keywords: 'warehouse notfound', location: 'germany', timePosted: 'past_week' };
    // Row 4 is row 1 spelled with blanks: a duplicate, not a second search.
    const byQuery = new Map<string, LoggedRequest[]>();
    for (const r of logged) {
      const { start, ...q } = r.query;
      expect(start).toMatch(/^(0|10)$/);
      const key = JSON.stringify(Object.entries(q).sort());
      byQuery.set(key, [...(byQuery.get(key) ?? []), r]);
    }
    const keyOf = (q: Record<string, string>) => JSON.stringify(Object.entries(q).sort());
    expect(new Set(byQuery.keys())).toEqual(new Set([keyOf(robotics), keyOf(analyst), keyOf(missing)]));
    expect(byQuery.get(keyOf(missing))!.map((r) => r.query['start'])).toEqual(['0']);

    for (const [q, listQuery] of [
      [robotics, { ...robotics, experienceLevels: ['entry level', 'associate'], jobTypes: ['full time', 'part time'] }],
      [analyst, analyst],
      [missing, missing],
    ] as const) {
      const key = searchKey(listQuery as never);
      const sent = byQuery.get(keyOf(q))!;
      const tasks = query<{ page: number; status: string }>(ws, `SELECT page, status FROM tasks WHERE job = 'searches' AND input_key = ? ORDER BY page`, key);
      expect(tasks.map((t) => t.page)).toEqual([1, 2]);
      const served: JobRecord[] = [];
      for (const r of sent) {
        const p = await probeCall(`${r.path}?${r.rawQuery}`);
        if (p.status === 200) served.push(...(p.json['results'] as JobRecord[]));
      }
      const p1 = await probeCall(`${sent[0]!.path}?${sent[0]!.rawQuery}`);
      expect(tasks[0]!.status).toBe(p1.status === 200 ? 'done' : 'not_found');
      if (p1.status !== 200) {
        expect(tasks[1]!.status).toBe('not_found');
        expect(sent).toHaveLength(1);
        expect(count(ws, 'SELECT count(*) FROM job_searches WHERE search_key = ?', key)).toBe(0);
        continue;
      }
      // A first page of fewer than 10 results ends the list: page 2 is settled without a call.
      expect(sent).toHaveLength((p1.json['results'] as unknown[]).length < 10 ? 1 : 2);
      const [search] = query<Record<string, unknown>>(ws, 'SELECT * FROM job_searches WHERE search_key = ?', key);
      expect(search).toMatchObject({
        keywords: q.keywords,
        location: q.location,
        time_posted: 'past_week',
        experience_levels: 'experienceLevels' in q ? q.experienceLevels : null,
        job_types: 'jobTypes' in q ? q.jobTypes : null,
      });
      const results = query<{ job_url: string; position: number }>(ws, 'SELECT job_url, position FROM job_search_results WHERE search_key = ? ORDER BY position', key);
      expect(results).toEqual(served.map((j, i) => ({ job_url: canon(canonicalJobUrl, j.url), position: i })));
      for (const j of served) {
        const [row] = query<Record<string, unknown>>(ws, 'SELECT * FROM jobs WHERE url = ?', canon(canonicalJobUrl, j.url));
        expect(row).toMatchObject({
          title: j.title,
          company_name: j.company_name,
          location: j.location,
          posted_date: j.posted_date,
          posted_timestamp: j.posted_timestamp,
          is_actively_hiring: j.is_actively_hiring ? 1 : 0,
          description: j.description,
          employment_type: j.criteria['Employment type'],
          seniority_level: j.criteria['Seniority level'],
        });
      }
    }
  });

  it('logs every call in api_calls and every 200 body in raw_responses, counters included', () => {
    const calls = query<{ path: string; status: number; error_code: string | null; credits_remaining: number | null; credits_used: number | null; task_id: number; run_id: number }>(
      ws,
      'SELECT path, status, error_code, credits_remaining, credits_used, task_id, run_id FROM api_calls ORDER BY id',
    );
    expect(calls).toHaveLength(operationRequests(sandbox).length);
    expect(calls.every((c) => c.run_id === first.runId && c.error_code === null && c.task_id > 0)).toBe(true);
    expect(calls.map((c) => c.status).sort()).toEqual(operationRequests(sandbox).map((r) => r.status).sort());
    const ok = operationRequests(sandbox).filter((r) => r.status === 200);
    const raws = query<{ body: string; operation: string; task_id: number }>(ws, 'SELECT raw_body(body, body_encoding) AS body, operation, task_id FROM raw_responses ORDER BY id');
    expect(raws).toHaveLength(ok.length);
    // Each raw body is the exact 200 answer: its counters are the ones its api_calls row logged.
    const used = raws.map((r) => (JSON.parse(r.body) as { credits_used: number }).credits_used).sort((a, b) => a - b);
    expect(used).toEqual(calls.filter((c) => c.status === 200).map((c) => c.credits_used!).sort((a, b) => a - b));
    const doneTasks = query<{ id: number }>(ws, `SELECT id FROM tasks WHERE status = 'done' ORDER BY id`).map((t) => t.id);
    expect(raws.map((r) => r.task_id).sort((a, b) => a - b)).toEqual(doneTasks);
  });

  it('records the run and returns a summary that adds up', () => {
    const charged = operationRequests(sandbox).reduce((n, r) => n + r.charged, 0);
    const balance = sandbox.credits(TOKEN);
    expect(first.status).toBe('completed');
    expect(first.error).toBeNull();
    expect(first.calls).toBe(operationRequests(sandbox).length);
    expect(first.creditsRemaining).toBe(balance.credits_remaining);
    expect(first.creditsSpent).toBeCloseTo(charged, 6);
    const byName = Object.fromEntries(first.jobs.map((j) => [j.name, j]));
    expect(byName['lookalikes']).toMatchObject({ planned: 8, invalidRows: 2, duplicates: 1, fresh: 0, failed: 0, deferred: 0 });
    expect(byName['posts']).toMatchObject({ planned: 4, invalidRows: 1, duplicates: 1, fresh: 0, done: 3, notFound: 1, failed: 0, deferred: 0 });
    expect(byName['searches']).toMatchObject({ planned: 6, invalidRows: 0, duplicates: 1, fresh: 0, failed: 0, deferred: 0 });
    for (const j of first.jobs) expect(j.done + j.notFound, j.name).toBe(j.planned);
    expect(byName['lookalikes']!.invalidSamples.map((s) => [s.file, s.line, s.field])).toEqual([
      ['leads.csv', 7, 'company_url'],
      ['leads.csv', 8, 'company_url'],
    ]);

    const [row] = query<Record<string, unknown>>(ws, 'SELECT * FROM runs WHERE id = ?', first.runId);
    expect(row).toMatchObject({
      status: 'completed',
      tasks_total: 18,
      tasks_done: first.jobs.reduce((n, j) => n + j.done, 0),
      tasks_not_found: first.jobs.reduce((n, j) => n + j.notFound, 0),
      tasks_failed: 0,
      tasks_deferred: 0,
      invalid_rows: 3,
      calls: operationRequests(sandbox).length,
      credits_at_end: balance.credits_remaining,
      pid: process.pid,
    });
    expect(row!['credits_spent']).toBeCloseTo(charged, 6);
    expect(row!['credits_at_start']).toBeCloseTo(balance.total_credits, 6);
    expect(row!['ended_at']).toEqual(expect.any(String));
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
    expect(query(ws, 'SELECT job, file, line, field FROM invalid_inputs ORDER BY job, line')).toEqual([
      { job: 'lookalikes', file: 'leads.csv', line: 7, field: 'company_url' },
      { job: 'lookalikes', file: 'leads.csv', line: 8, field: 'company_url' },
      { job: 'posts', file: 'posts.csv', line: 7, field: 'post_url' },
    ]);
  });

  it('a second run finds every task fresh and calls nothing', async () => {
    const before = operationRequests(sandbox).length;
    const tables = snapshotCounts();
    const again = await run(ws, sandbox, TOKEN, jobs);
    expect(operationRequests(sandbox).length).toBe(before);
    expect(again.status).toBe('completed');
    expect(again.calls).toBe(0);
    for (const j of again.jobs) {
      expect(j.fresh, j.name).toBe(j.planned);
      expect(j.worked, j.name).toBe(0);
    }
    expect(snapshotCounts()).toEqual({ ...tables, runs: tables.runs! + 1 });
  });

  it('refresh calls every task again and leaves no duplicate rows', async () => {
    const tables = snapshotCounts();
    const callsBefore = operationRequests(sandbox).length;
    sandbox.clearLog();
    const refreshed = await run(ws, sandbox, TOKEN, jobs, { refresh: true });
    expect(refreshed.status).toBe('completed');
    expect(operationRequests(sandbox).length).toBe(callsBefore);
    for (const j of refreshed.jobs) expect(j.fresh, j.name).toBe(0);
    const after = snapshotCounts();
    expect({ ...after, raw_responses: 0, api_calls: 0, runs: 0 }).toEqual({ ...tables, raw_responses: 0, api_calls: 0, runs: 0 });
    expect(after.raw_responses).toBe(tables.raw_responses! * 2);
    expect(count(ws, 'SELECT count(*) FROM tasks')).toBe(18);
  });
});

function snapshotCounts(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of [
    'companies', 'company_locations', 'company_industries', 'company_specialities', 'company_hashtags', 'similar_companies',
    'posts', 'post_media', 'jobs', 'job_searches', 'job_search_results', 'tasks', 'invalid_inputs', 'raw_responses', 'api_calls', 'runs',
  ]) {
    out[t] = count(ws, `SELECT count(*) FROM ${t}`);
  }
  return out;
}
