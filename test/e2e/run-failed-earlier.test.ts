/**
 * Tasks that failed for good in an earlier run are not called again without --refresh. The run summary, its
 * --json, the human summary and `netingest plan` count them as "failed earlier, not retried", never as fresh
 * (their data is not fresh: there is none), and the run still ends with exit 5 (items failed for good).
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { runJobs, type RunSummary } from '../../src/runner/run-jobs.ts';
import { planReport } from '../../src/runner/plan-report.ts';
import { loadJob } from '../../src/jobs/load.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { runCli } from '../soak/cli-process.ts';
import { inProcess } from '../support/run-helpers.ts';
import { apiEnv, opsWorkspace, STACK_LINE, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { postResponse } from '../support/db-fixtures.ts';

const TOKEN = 'failed-earlier-token-01';
const POSTS = 8;
let ws: OpsWorkspace;
const startFake = useFakeServices();
let calls = 0;

beforeEach(async () => {
  ws = await opsWorkspace({ posts: POSTS, companies: 2, retries: 1 });
  calls = 0;
});

afterEach(() => {
  ws.cleanup();
});

/**
 * Post lookups answered by input: `notfound` inputs a 404, odd-numbered ones a 200 of the wrong shape (failed
 * for good: SCHEMA is never retried), the others a valid post. Company lookups are refused (400, failed for
 * good). One credit a call.
 */
async function startService(): Promise<string> {
  return startFake((req, res) => {
    // The free balance check is not offered here (400), and is no lookup: not counted.
    if (req.url === '/v1/api/auth') return void res.writeHead(400).end();
    calls += 1;
    const counters = { total_credits: 1000, credits_used: calls, credits_remaining: 1000 - calls };
    const target = new URL(req.url ?? '/', 'http://x').searchParams.get('url') ?? '';
    const index = Number(/user(\d+)_/.exec(target)?.[1] ?? 0);
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (!req.url?.includes('post-details')) return reply(400, { message: 'bad request' });
    if (target.includes('notfound')) return reply(404, { message: 'not found' });
    if (index % 2 === 1) return reply(200, { status: 'ok', item: {}, ...counters });
    reply(200, { ...postResponse(), ...counters });
  });
}

async function runPosts(baseUrl: string, refresh = false): Promise<RunSummary> {
  const job = await loadJob(ws.postsJob, { cwd: ws.dir });
  return runJobs({ dbPath: join(ws.dir, 'data.db'), jobs: [job], api: { baseUrl, token: TOKEN }, refresh });
}

// Inputs 0..7: 6 is a notfound input, 1, 3, 5 and 7 answer the wrong shape, 0, 2 and 4 a post.
const FAILED = 4;
const DONE = 3;
const NOT_FOUND = 1;

describe('tasks that failed for good in an earlier run', () => {
  it('are counted as failed earlier, not fresh, by the run and by plan; --refresh calls them again', async () => {
    const url = await startService();
    const first = await runPosts(url);
    expect(first.jobs[0]).toMatchObject({ planned: POSTS, worked: POSTS, fresh: 0, failedBefore: 0, done: DONE, notFound: NOT_FOUND, failed: FAILED });

    // What plan says the next run does, and what it does: no call, the failures not taken for fresh data.
    const job = await loadJob(ws.postsJob, { cwd: ws.dir });
    const plan = await planReport(job, join(ws.dir, 'data.db'));
    expect(plan).toMatchObject({ tasks: POSTS, fresh: DONE + NOT_FOUND, failedBefore: FAILED, calls: 0 });

    const before = calls;
    const second = await runPosts(url);
    expect(calls).toBe(before);
    expect(second.status).toBe('completed_with_failures');
    expect(second.jobs[0]).toMatchObject({
      planned: POSTS,
      worked: plan.calls,
      fresh: plan.fresh,
      failedBefore: plan.failedBefore,
      done: DONE,
      notFound: NOT_FOUND,
      failed: FAILED,
    });

    // With --refresh they are due again, like every other task, and nothing counts as failed earlier.
    const refreshPlan = await planReport(job, join(ws.dir, 'data.db'), true);
    expect(refreshPlan).toMatchObject({ fresh: 0, failedBefore: 0, calls: POSTS });
    const third = await runPosts(url, true);
    expect(calls).toBe(before + POSTS);
    expect(third.jobs[0]).toMatchObject({ worked: POSTS, fresh: 0, failedBefore: 0, failed: FAILED });
  }, 60_000);

  it('through the CLI: exit 5, --json keeps every field and adds failedBefore, the text says what to do', async () => {
    const env = apiEnv(await startService(), TOKEN);
    // The first run a real process (its exit code as cron sees it); the ones after it the CLI's code in this process.
    const first = await runCli(['run', ws.postsJob, '--db', 'data.db'], { cwd: ws.dir, env });
    expect(first.code).toBe(EXIT.failedItems);
    expect(first.stdout + first.stderr).not.toMatch(STACK_LINE);

    const json = await inProcess(['run', ws.postsJob, '--db', 'data.db', '--json'], env, { cwd: ws.dir });
    expect(json.code).toBe(EXIT.failedItems);
    const job = (JSON.parse(json.stdout) as RunSummary).jobs[0]!;
    for (const key of ['name', 'operation', 'planned', 'invalidRows', 'duplicates', 'fresh', 'worked', 'done', 'notFound', 'failed', 'deferred', 'invalidSamples']) {
      expect(job, key).toHaveProperty(key);
    }
    expect(job).toMatchObject({ fresh: DONE + NOT_FOUND, failedBefore: FAILED, worked: 0, failed: FAILED });

    const text = await inProcess(['run', ws.postsJob, '--db', 'data.db'], env, { cwd: ws.dir });
    expect(text.code).toBe(EXIT.failedItems);
    expect(text.stdout).toContain(`${POSTS} tasks, ${DONE + NOT_FOUND} still fresh, ${DONE} done, ${NOT_FOUND} not found, ${FAILED} failed (${FAILED} failed earlier, not retried: use --refresh)`);
    expect(text.stdout + text.stderr).not.toMatch(STACK_LINE);

    const plan = await inProcess(['plan', ws.postsJob, '--db', 'data.db'], {}, { cwd: ws.dir });
    expect(plan.code).toBe(EXIT.ok);
    expect(plan.stdout).toContain(`ledger: ${DONE + NOT_FOUND} tasks still fresh, ${FAILED} failed earlier and not retried (use --refresh); at most 0 calls to make`);
  }, 60_000);

  it('plan agrees with the run when the request changed: the failed tasks are due again', async () => {
    const url = await startService();
    const lookalikes = () => loadJob(ws.lookalikesJob, { cwd: ws.dir });
    const dbPath = join(ws.dir, 'data.db');
    const first = await runJobs({ dbPath, jobs: [await lookalikes()], api: { baseUrl: url, token: TOKEN } });
    expect(first.jobs[0]).toMatchObject({ planned: 4, failed: 4 });
    expect(await planReport(await lookalikes(), dbPath)).toMatchObject({ failedBefore: 4, calls: 0 });

    // Other filters: a different request, which the ledger sets back to pending when the job is planned.
    const file = join(ws.dir, ws.lookalikesJob);
    const { readFileSync } = await import('node:fs');
    const definition = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    writeFileSync(file, JSON.stringify({ ...definition, request: { num: 5 } }));
    const plan = await planReport(await lookalikes(), dbPath);
    expect(plan).toMatchObject({ tasks: 4, fresh: 0, failedBefore: 0, calls: 4 });
    const before = calls;
    const second = await runJobs({ dbPath, jobs: [await lookalikes()], api: { baseUrl: url, token: TOKEN } });
    expect(second.jobs[0]).toMatchObject({ worked: plan.calls, fresh: plan.fresh, failedBefore: plan.failedBefore });
    expect(calls - before).toBe(plan.calls);
  }, 60_000);
});
