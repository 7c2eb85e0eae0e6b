/**
 * enrich shows what the API answered last for each page of an input (issue #5), after real runs against the
 * sandbox. A refresh is run against a second sandbox with another seed: the same requests then get other
 * lists, as a real service's answers change over time; a sandbox where every input has no data answers the
 * refresh with 404s. The link tables keep the earlier answers' rows (they are cumulative), so each test first
 * checks that stale rows are there to be left out.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { canonicalCompanyUrl, canonicalJobUrl } from '../../src/urls/canonical.ts';
import { DEFAULT_NETWORK_HOST } from '../../src/spec/types.ts';
import type { Job } from '../../src/jobs/schema.ts';
import { FAST_RATE, FAST_RETRY, companyUrls, count, csv, useWorkspaces, postUrls, query, run, taskStatuses, type Workspace } from '../support/run-helpers.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';
import { enrichedRows } from './export-helpers.ts';

const TOKEN = 'enrich-latest-token';
const newSandbox = useSandboxes();
const workspaces = useWorkspaces();
let ws: Workspace;
beforeEach(async () => {
  ws = await workspaces();
});

interface RawAnswer {
  runId: number;
  taskId: number;
  requestJson: string;
  body: string;
}

/**
 * The oracle: per input (in ledger order), the result URLs of each page's latest answer, read from the raw
 * bodies. A page settled in `refreshRun` (done or not found) shows that run's answer, or nothing when it got
 * none (404, past the last page); a page the run did not reach shows the earlier run's answer.
 */
function latestAnswers(job: string, refreshRun: number, urlsOf: (body: unknown) => string[]): Map<string, string[]> {
  const tasks = query<{ id: number; inputKey: string; page: number; status: string; runId: number }>(
    ws,
    'SELECT id, input_key AS inputKey, page, status, run_id AS runId FROM tasks WHERE job = ? ORDER BY id',
    job,
  );
  const raws = query<RawAnswer>(ws, 'SELECT run_id AS runId, task_id AS taskId, request_json AS requestJson, raw_body(body, body_encoding) AS body FROM raw_responses ORDER BY id');
  const out = new Map<string, string[]>();
  for (const task of tasks) {
    const settledNow = task.runId === refreshRun && (task.status === 'done' || task.status === 'not_found');
    const answers = raws.filter((r) => r.taskId === task.id && (settledNow ? r.runId === refreshRun : r.runId !== refreshRun));
    const latest = answers.at(-1);
    const urls = latest === undefined ? [] : urlsOf(JSON.parse(latest.body));
    out.set(task.inputKey, [...(out.get(task.inputKey) ?? []), ...urls]);
  }
  return out;
}

const companyUrlsOf = (body: unknown) =>
  (body as { data: { content: Array<{ url: string }> } }).data.content.map((c) => {
    const url = canonicalCompanyUrl(c.url, DEFAULT_NETWORK_HOST);
    return url.ok ? url.url : c.url;
  });
const jobUrlsOf = (body: unknown) =>
  (body as { results: Array<{ url: string }> }).results.map((j) => {
    const url = canonicalJobUrl(j.url, DEFAULT_NETWORK_HOST);
    return url.ok ? url.url : j.url;
  });

/** The result URLs enrich lists per input key, in output order. */
async function enrichedUrls(file: string, column: 'similar_url' | 'job_url'): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const row of await enrichedRows({ db: ws.db, job: file, cwd: ws.dir })) {
    const key = row['netingest_input_key'] as string;
    const url = row[column] as string | null;
    out.set(key, [...(out.get(key) ?? []), ...(url === null ? [] : [url])]);
  }
  return out;
}

async function similarJob(): Promise<{ file: string; job: Job }> {
  await ws.write('leads.csv', csv(['company_url'], companyUrls(6).map((u) => [u])));
  const file = await ws.job('lookalikes', {
    operation: 'similar-companies',
    input: { csv: 'leads.csv', column: 'company_url' },
    request: { account: { location: ['germany'] }, num: 5 },
    pages: 2,
    rate: { ...FAST_RATE, concurrency: 1 },
    retry: FAST_RETRY,
  });
  const [job] = await ws.load(file);
  return { file, job: job! };
}

async function searchJob(): Promise<{ file: string; job: Job }> {
  await ws.write('searches.csv', csv(['keywords', 'location'], [['rust developer', 'berlin'], ['nurse', 'oslo'], ['welder', 'lyon'], ['chef', 'rome']]));
  const file = await ws.job('searches', { operation: 'search-jobs', input: { csv: 'searches.csv' }, pages: 3, rate: FAST_RATE, retry: FAST_RETRY });
  const [job] = await ws.load(file);
  return { file, job: job! };
}

describe('enrich after a refresh that got other answers', () => {
  it('similar-companies: lists only the lookalikes of each page\'s latest answer, ranked as in it', async () => {
    const { file, job } = await similarJob();
    expect((await run(ws, await newSandbox({ tokens: { [TOKEN]: 1000 } }), TOKEN, [job])).status).toBe('completed');
    const refresh = await run(ws, await newSandbox({ seed: 7, tokens: { [TOKEN]: 1000 } }), TOKEN, [job], { refresh: true });
    expect(refresh.status).toBe('completed');

    const expected = latestAnswers('lookalikes', refresh.runId, companyUrlsOf);
    const listed = [...expected.values()].reduce((n, urls) => n + urls.length, 0);
    // The earlier answers' rows are still stored: there is something to leave out.
    expect(count(ws, 'SELECT count(*) FROM similar_companies')).toBeGreaterThan(listed);
    expect(await enrichedUrls(file, 'similar_url')).toEqual(expected);

    const rows = await enrichedRows({ db: ws.db, job: file, cwd: ws.dir });
    const firstInput = rows.filter((r) => r['netingest_input_key'] === rows[0]!['netingest_input_key']);
    expect(firstInput.map((r) => r['similar_rank'])).toEqual(firstInput.map((_, i) => i + 1));
    const refreshedAt = query<{ at: string }>(ws, 'SELECT min(received_at) AS at FROM raw_responses WHERE run_id = ?', refresh.runId)[0]!.at;
    for (const r of rows) expect(r['similar_last_seen_at'] as string >= refreshedAt).toBe(true);
  });

  it('similar-companies: a refresh answered with 404s leaves every input not_found, whatever it had before', async () => {
    const { file, job } = await similarJob();
    expect((await run(ws, await newSandbox({ tokens: { [TOKEN]: 1000 } }), TOKEN, [job])).status).toBe('completed');
    const before = await enrichedRows({ db: ws.db, job: file, cwd: ws.dir });
    expect(before.every((r) => r['netingest_status'] === 'ok')).toBe(true);

    const refresh = await run(ws, await newSandbox({ notFoundRate: 1, tokens: { [TOKEN]: 1000 } }), TOKEN, [job], { refresh: true });
    expect(refresh.status).toBe('completed');
    expect(taskStatuses(ws, 'lookalikes')).toEqual({ not_found: 12 });
    expect(count(ws, 'SELECT count(*) FROM similar_companies')).toBe(before.length);

    const after = await enrichedRows({ db: ws.db, job: file, cwd: ws.dir });
    expect(after.map((r) => [r['netingest_status'], r['similar_url']])).toEqual(Array.from({ length: 6 }, () => ['not_found', null]));
  });

  it('similar-companies: a refresh stopped by credits keeps the pages it did not reach as last answered', async () => {
    const { file, job } = await similarJob();
    expect((await run(ws, await newSandbox({ tokens: { [TOKEN]: 1000 } }), TOKEN, [job])).status).toBe('completed');
    // One call, then the run stops: page 1 of the first input is refreshed, every other page deferred.
    const refresh = await run(ws, await newSandbox({ seed: 7, tokens: { [TOKEN]: 1000 } }), TOKEN, [job], {
      refresh: true,
      overrides: { maxCredits: 1 },
    });
    expect(refresh.status).toBe('stopped_credits');
    expect(count(ws, 'SELECT count(*) FROM raw_responses WHERE run_id = ?', refresh.runId)).toBe(1);

    const expected = latestAnswers('lookalikes', refresh.runId, companyUrlsOf);
    expect(count(ws, 'SELECT count(*) FROM similar_companies')).toBeGreaterThan([...expected.values()].flat().length);
    expect(await enrichedUrls(file, 'similar_url')).toEqual(expected);
  });

  it('search-jobs: lists only the jobs of each page\'s latest answer, and nothing once the search answers 404', async () => {
    const { file, job } = await searchJob();
    expect((await run(ws, await newSandbox({ tokens: { [TOKEN]: 1000 } }), TOKEN, [job])).status).toBe('completed');
    const refresh = await run(ws, await newSandbox({ seed: 7, tokens: { [TOKEN]: 1000 } }), TOKEN, [job], { refresh: true });
    expect(refresh.status).toBe('completed');

    const expected = latestAnswers('searches', refresh.runId, jobUrlsOf);
    expect(count(ws, 'SELECT count(*) FROM job_search_results')).toBeGreaterThan([...expected.values()].flat().length);
    expect(await enrichedUrls(file, 'job_url')).toEqual(expected);

    const gone = await run(ws, await newSandbox({ notFoundRate: 1, tokens: { [TOKEN]: 1000 } }), TOKEN, [job], { refresh: true });
    expect(gone.status).toBe('completed');
    const after = await enrichedRows({ db: ws.db, job: file, cwd: ws.dir });
    expect(after.map((r) => [r['netingest_status'], r['job_url']])).toEqual(Array.from({ length: 4 }, () => ['not_found', null]));
  });

  it('post-details: a post answered 404 since it was stored (deleted) is not_found, not its old text', async () => {
    await ws.write('posts.csv', csv(['post_url'], postUrls(4).map((u) => [u])));
    const file = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    const [job] = await ws.load(file);
    expect((await run(ws, await newSandbox({ notFoundRate: 0, tokens: { [TOKEN]: 1000 } }), TOKEN, [job!])).status).toBe('completed');
    const before = await enrichedRows({ db: ws.db, job: file, cwd: ws.dir });
    expect(before.map((r) => r['netingest_status'])).toEqual(['ok', 'ok', 'ok', 'ok']);

    const gone = await run(ws, await newSandbox({ notFoundRate: 1, tokens: { [TOKEN]: 1000 } }), TOKEN, [job!], { refresh: true });
    expect(gone.status).toBe('completed');
    // The posts are still stored (nothing is deleted), but the latest answer for each is "not found".
    expect(count(ws, 'SELECT count(*) FROM posts')).toBe(4);
    const after = await enrichedRows({ db: ws.db, job: file, cwd: ws.dir });
    expect(after.map((r) => [r['netingest_status'], r['post_text']])).toEqual(Array.from({ length: 4 }, () => ['not_found', null]));
  });
});
