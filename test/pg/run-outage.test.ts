/**
 * The API down (every call a 503, or the connection refused): the run stops after a few tasks in a row failed
 * after every retry, instead of spending every task's retries on it, names the cause, exits 1, and leaves the
 * rest for the next run. A task failing now and then among answers does not stop it; the summary counts the
 * failures by code and the log names each failed task, counting them once there are many.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/runner/logger.ts';
import { RUN_DEFAULTS } from '../../src/runner/run-jobs.ts';
import { startSandbox, type Sandbox, type SandboxOptionsInput } from '../../src/sandbox/server.ts';
import { FAST_RATE, cliEnv, csv, inProcess, makeWorkspace, postUrls, run, runCli, taskStatuses, type Workspace, operationRequests } from '../support/run-helpers.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'outage-token-4d2a';
const RETRY = { retries: 2, minTimeoutMs: 5, maxTimeoutMs: 20 } as const;
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function sandboxWith(options: SandboxOptionsInput = {}): Promise<Sandbox> {
  const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 100_000 }, notFoundRate: 0, ...options });
  cleanups.push(() => sandbox.stop());
  return sandbox;
}

async function workspace(): Promise<Workspace> {
  const ws = await makeWorkspace();
  cleanups.push(() => ws.cleanup());
  return ws;
}

async function postsJob(ws: Workspace, n: number, extra: Record<string, unknown> = {}): Promise<string> {
  await ws.write('posts.csv', csv(['post_url'], postUrls(n).map((u) => [u])));
  return ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: RETRY, ...extra });
}

/** A logger writing text lines into an array. */
function captureLog(): { lines: string[]; logger: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const stream = { write: (s: string) => (lines.push(s.trimEnd()), true) } as unknown as NodeJS.WritableStream;
  return { lines, logger: createLogger({ stream }) };
}

/** The longest run of consecutive entries for which `test` holds. */
function longestStreak<T>(items: T[], test: (item: T) => boolean): number {
  let longest = 0;
  let current = 0;
  for (const item of items) {
    current = test(item) ? current + 1 : 0;
    longest = Math.max(longest, current);
  }
  return longest;
}

// The stop is the runner's, but what it leaves (failed, deferred, the run row) is written by each engine's store.
forEachEngine('the API down, every call a 503', (engine) => {
  it('every call a 503: stops after the threshold with far fewer calls, names the cause, and the next run finishes once the API is back', async () => {
    const TASKS = 40;
    const CONCURRENCY = 2;
    const threshold = Math.max(RUN_DEFAULTS.outageMinTasks, CONCURRENCY);
    const down = await sandboxWith({ unavailableRate: 1 });
    const ws = await workspace();
    const db = await engine.open(ws.dir);
    const jobs = await ws.load(await postsJob(ws, TASKS, { rate: { ...FAST_RATE, concurrency: CONCURRENCY } }));
    const log = captureLog();

    const summary = await run(ws, down, TOKEN, jobs, { dbPath: db.locator, logger: log.logger });
    expect(summary.status).toBe('failed');
    expect(summary.error?.code).toBe('API_UNAVAILABLE');
    expect(summary.error?.message).toMatch(/^the API fails with HTTP 503 .*\[SERVER_ERROR\]; \d+ tasks in a row failed after every retry/);
    expect(summary.stop).toMatchObject({ reason: 'outage', limit: null });

    // The tasks that tripped it failed (the next run retries them); those not reached wait, deferred.
    const failed = summary.jobs[0]!.failed;
    expect(failed).toBeGreaterThanOrEqual(threshold);
    expect(failed).toBeLessThan(threshold + CONCURRENCY);
    expect(await db.taskStatuses('posts')).toEqual({ failed, deferred: TASKS - failed });
    expect(summary.jobs[0]).toMatchObject({ failedByCode: { SERVER_ERROR: failed }, deferred: TASKS - failed });
    const attemptsPerTask = RETRY.retries + 1;
    expect(operationRequests(down).length).toBeLessThanOrEqual((threshold + CONCURRENCY) * attemptsPerTask);
    expect(operationRequests(down).length).toBeLessThan((TASKS * attemptsPerTask) / 4);

    const [runRow] = await db.rows<{ status: string; error: string }>('SELECT status, error FROM runs');
    expect(runRow!.status).toBe('failed');
    expect(runRow!.error).toMatch(/^API_UNAVAILABLE: the API fails with HTTP 503/);
    expect(log.lines.filter((l) => / ERROR /.test(l))).toEqual([expect.stringMatching(/run stopped: the API looks down .*code=API_UNAVAILABLE .*HTTP 503/)]);
    expect(log.lines.some((l) => /INFO {2}job finished/.test(l))).toBe(false);
    expect(log.lines.some((l) => /WARN {2}job stopped before its end job=posts .*failed_codes="SERVER_ERROR \d+" deferred=\d+ reason=outage/.test(l))).toBe(true);

    // The API is back: the next run resumes the deferred tasks and retries the failed ones, each once.
    const up = await sandboxWith();
    const second = await run(ws, up, TOKEN, jobs, { dbPath: db.locator });
    expect(second.status).toBe('completed');
    expect(second.stop).toBeNull();
    expect(second.calls).toBe(TASKS);
    expect(await db.taskStatuses('posts')).toEqual({ done: TASKS });
  });
});

describe('the API down', () => {

  it('connection refused, from the command line: exit 1, an ERROR line naming ECONNREFUSED, the summary by code', async () => {
    // Port 1: nothing listens, and no test's server is given it (a stopped sandbox's port was: a CI run met another
    // file's sandbox there, and a 401 for its token).
    const gone = { NETINGEST_API_URL: 'http://127.0.0.1:1', NETINGEST_API_TOKEN: TOKEN };
    const ws = await workspace();
    const file = await postsJob(ws, 30, { rate: { ...FAST_RATE, concurrency: 2 }, retry: { ...RETRY, retries: 1 } });

    const cli = await runCli(['run', file, '--db', ws.db], { cwd: ws.dir, env: gone });
    expect(cli.code, cli.stderr).toBe(1);
    expect(cli.stderr).toMatch(/ERROR run stopped: the API looks down .*code=API_UNAVAILABLE .*the API is unreachable: connection failed \(ECONNREFUSED/);
    expect(cli.stderr).toMatch(/WARN {2}task failed job=posts input=https:\/\/www\.network\.com\/posts\/\S+ page=1 code=NETWORK retryable=true/);
    expect(cli.stdout).toMatch(/^Run \d+: stopped: the API looks down/);
    const failed = taskStatuses(ws, 'posts').failed!;
    expect(cli.stdout).toContain(`    failed: ${failed} (NETWORK ${failed})`);
    expect(cli.stdout).toMatch(/error: the API is unreachable: .*ECONNREFUSED.* \[API_UNAVAILABLE\]/);
    expect(taskStatuses(ws, 'posts')).toEqual({ failed, deferred: 30 - failed });

    const up = await sandboxWith();
    // The resumed run through the CLI's code in this process: the outage's exit and log above are a real process's.
    const again = await inProcess(['run', file, '--db', ws.db], cliEnv(up, TOKEN), { cwd: ws.dir });
    expect(again.code, again.stderr).toBe(0);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 30 });
    expect(operationRequests(up)).toHaveLength(30);
  });
});

describe('failures that are not an outage', () => {
  it('a task failing now and then among answers does not stop the run; the summary and the log name the failures', async () => {
    // One call per task, one at a time, so the seeded 503s land on known tasks: two in a row at most, between answers.
    const sandbox = await sandboxWith({ unavailableRate: 0.2, seed: 1 });
    const ws = await workspace();
    const jobs = await ws.load(await postsJob(ws, 30, { rate: { ...FAST_RATE, concurrency: 1 }, retry: { ...RETRY, retries: 0 } }));
    const log = captureLog();

    const summary = await run(ws, sandbox, TOKEN, jobs, { logger: log.logger });
    const failedCalls = sandbox.requests.filter((r) => r.status === 503);
    expect(failedCalls.length).toBeGreaterThan(0);
    // Two failed tasks in a row at most: one short of the threshold, max(3, concurrency 1).
    expect(longestStreak(sandbox.requests, (r) => r.status === 503)).toBe(2);

    expect(summary.status).toBe('completed_with_failures');
    expect(summary.error).toBeNull();
    expect(summary.stop).toBeNull();
    expect(operationRequests(sandbox)).toHaveLength(30);
    expect(summary.jobs[0]).toMatchObject({ failed: failedCalls.length, failedByCode: { SERVER_ERROR: failedCalls.length }, deferred: 0 });
    const warned = log.lines.filter((l) => /WARN {2}task failed /.test(l));
    expect(warned).toHaveLength(failedCalls.length);
    for (const r of failedCalls) {
      expect(warned.some((l) => l.includes(`input=${r.query['url']} page=1 code=SERVER_ERROR retryable=true`)), r.query['url']).toBe(true);
    }
    expect(RUN_DEFAULTS.outageMinTasks).toBe(3);
  });

  it('many failures: the first ones get a line each, the rest are counted into one line by code', async () => {
    const sandbox = await sandboxWith({ wrongShapeRate: 1 });
    const ws = await workspace();
    const jobs = await ws.load(await postsJob(ws, 15));
    const log = captureLog();

    // A body of the wrong shape is an answer: the API is up, so 15 of them in a row are no outage (they would stop
    // the run as unusable answers after 5: test/e2e/run-live-answers.test.ts; raised here to show the failure log).
    const summary = await run(ws, sandbox, TOKEN, jobs, { logger: log.logger, failureLog: { detailedLines: 5 }, unusableMinAnswers: 100 });
    expect(summary.status).toBe('completed_with_failures');
    expect(summary.jobs[0]).toMatchObject({ failed: 15, failedByCode: { SCHEMA: 15 } });
    expect(log.lines.filter((l) => /WARN {2}task failed job=posts .*code=SCHEMA retryable=false/.test(l))).toHaveLength(5);
    expect(log.lines.filter((l) => /WARN {2}more tasks failed /.test(l))).toEqual([expect.stringMatching(/job=posts count=10 codes="SCHEMA 10" last_input=https:/)]);
    expect(log.lines.filter((l) => /more failed tasks are counted, not listed/.test(l))).toHaveLength(1);
  });

  it('exactly as many failures as get a line each: no word of more being counted', async () => {
    const sandbox = await sandboxWith({ wrongShapeRate: 1 });
    const ws = await workspace();
    const jobs = await ws.load(await postsJob(ws, 5));
    const log = captureLog();

    const summary = await run(ws, sandbox, TOKEN, jobs, { logger: log.logger, failureLog: { detailedLines: 5 } });
    expect(summary.jobs[0]).toMatchObject({ failed: 5 });
    expect(log.lines.filter((l) => /WARN {2}task failed /.test(l))).toHaveLength(5);
    expect(log.lines.filter((l) => /more failed tasks|more tasks failed/.test(l))).toEqual([]);
  });
});
