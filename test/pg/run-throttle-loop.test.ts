/**
 * A 429 whose Retry-After asks for no wait (0, negative, a date in the past) or is garbage: every wait has a
 * floor and the throttled attempts a cap, so the run stops as throttled (exit 3, the rest deferred) after a
 * bounded number of calls, instead of calling again at once, forever (the wait cap counts only time waited).
 */
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { maxCallsPerTask } from '../../src/runner/error-policy.ts';
import { RUN_DEFAULTS } from '../../src/runner/run-options.ts';
import { exitCodeForRun } from '../../src/cli/exit-codes.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { csv, postUrls, spawnCli, taskStatuses, useWorkspaces, type Workspace } from '../support/run-helpers.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'throttle-loop-token-77ab';
const RETRY = { retries: 2, minTimeoutMs: 50, maxTimeoutMs: 100 } as const;
const CONCURRENCY = 2;
const TASKS = 6;
/** Far above what a bounded run needs (well under a second of waits); today's code loops past it. */
const GIVE_UP_MS = 30_000;
const workspace = useWorkspaces();
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (closers.length > 0) await closers.pop()!();
});

/** A service that answers every request 429 with the next of `retryAfters`, in turn; counts the requests. */
async function throttlingServer(retryAfters: string[]): Promise<{ url: string; requests: () => number; arrivals: number[] }> {
  let n = 0;
  const arrivals: number[] = [];
  const server: Server = createServer((req, res) => {
    req.resume();
    // The free balance check is not offered here, and is not one of the calls the bound counts.
    if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
    arrivals.push(performance.now());
    const value = retryAfters[n++ % retryAfters.length]!;
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': value });
    res.end(JSON.stringify({ message: 'Too many requests' }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => n, arrivals };
}

async function postsJob(ws: Workspace): Promise<string> {
  await ws.write('posts.csv', csv(['post_url'], postUrls(TASKS).map((u) => [u])));
  return ws.job('posts', {
    operation: 'post-details',
    input: { csv: 'posts.csv', column: 'post_url' },
    rate: { requestsPerMinute: 600_000, concurrency: CONCURRENCY },
    retry: RETRY,
  });
}

const PAST_DATE = new Date(Date.now() - 3_600_000).toUTCString();

/**
 * A run of the workspace's job that may loop: once ended, its exit code and whether it said it stopped as throttled
 * (the CLI's summary line, or the summary's stop); `stop` ends it if it does not end.
 */
interface LoopingRun { done: Promise<{ code: number | null; throttled: boolean }>; stop(): void }

function spawnedRun(ws: Workspace, db: string, apiUrl: string): LoopingRun {
  const cli = spawnCli(['run', 'posts.json', '--db', db], { cwd: ws.dir, env: { NETINGEST_API_URL: apiUrl, NETINGEST_API_TOKEN: TOKEN } });
  const line = /stopped: the API throttled past the wait cap or the cap of throttled attempts/;
  return { done: cli.done.then((r) => ({ code: r.code, throttled: line.test(r.stdout) })), stop: () => cli.child.kill('SIGKILL') };
}

function inProcessRun(ws: Workspace, db: string, apiUrl: string): LoopingRun {
  const controller = new AbortController();
  const done = ws.load(join(ws.dir, 'posts.json')).then(async (jobs) => {
    const summary = await runJobs({ dbPath: db, jobs, api: { baseUrl: apiUrl, token: TOKEN }, requestTimeoutMs: 5000, signal: controller.signal });
    return { code: exitCodeForRun(summary), throttled: summary.status === 'stopped_throttled' && summary.stop?.reason === 'throttled' };
  });
  return { done, stop: () => controller.abort() };
}

// PostgreSQL's gate shares a 429's pause with every worker through the database: the floor and cap hold there too.
forEachEngine('a 429 that asks for no wait', (engine) => {
  it('Retry-After 0, -5 and a past date: the CLI stops as throttled (exit 3) within the bound on calls, the tasks deferred', async () => {
    const api = await throttlingServer(['0', '-5', PAST_DATE, '-0.5']);
    const ws = await workspace();
    const db = await engine.open(ws.dir);
    await postsJob(ws);
    // SQLite's run is the built CLI (exit 3 and its line as cron sees them, killed if it loops); PostgreSQL's the
    // same run in this process (runJobs, as the CLI calls it), stopped by a signal if it loops.
    const run = engine.name === 'sqlite' ? spawnedRun(ws, db.locator, api.url) : inProcessRun(ws, db.locator, api.url);
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), GIVE_UP_MS)));
    const outcome = await Promise.race([run.done, gaveUp]);
    clearTimeout(timer);
    if (outcome === 'still running') {
      run.stop();
      await run.done;
    }
    expect(outcome, `still calling after ${GIVE_UP_MS} ms and ${api.requests()} requests`).not.toBe('still running');

    // Only `CONCURRENCY` tasks ever start: none ends, every answer being a 429.
    const bound = CONCURRENCY * maxCallsPerTask(RETRY, RUN_DEFAULTS.maxThrottledAttemptsPerTask);
    expect(api.requests()).toBeGreaterThanOrEqual(RUN_DEFAULTS.maxThrottledAttemptsPerTask);
    expect(api.requests()).toBeLessThanOrEqual(bound);
    // Each wait had its floor: the calls came in rounds of at most CONCURRENCY, each after a pause of minTimeoutMs.
    const rounds = Math.ceil(api.requests() / CONCURRENCY);
    expect(api.arrivals.at(-1)! - api.arrivals[0]!).toBeGreaterThanOrEqual((rounds - 1) * RETRY.minTimeoutMs);
    const result = await run.done;
    expect(result.code).toBe(3);
    expect(result.throttled).toBe(true);
    expect(await db.taskStatuses('posts')).toEqual({ deferred: TASKS });
  }, GIVE_UP_MS + 15_000);
});

describe('a 429 that asks for no wait, or garbage', () => {
  it('garbage among them ("soon") is capped too: a run with a cap of 3 throttled attempts sends at most its bound', async () => {
    const api = await throttlingServer(['0', '-5', 'soon']);
    const ws = await workspace();
    const jobs = await ws.load(await postsJob(ws));
    const cap = 3;
    // "soon" waits the fallback for a Retry-After that does not parse: 5 s in a run, 0.2 s here (the bound on calls is
    // what is checked, not that wait).
    const summary = await runJobs({
      dbPath: ws.db, jobs, api: { baseUrl: api.url, token: TOKEN }, requestTimeoutMs: 5000, maxThrottledAttemptsPerTask: cap, retryAfterFallbackMs: 200,
    });
    expect(summary.status).toBe('stopped_throttled');
    expect(exitCodeForRun(summary)).toBe(3);
    expect(summary.stop).toMatchObject({ reason: 'throttled', message: expect.stringMatching(/^the API throttled \(429\) one task 3 times/) });
    expect(api.requests()).toBeLessThanOrEqual(CONCURRENCY * maxCallsPerTask(RETRY, cap));
    expect(taskStatuses(ws, 'posts')).toEqual({ deferred: TASKS });
  }, GIVE_UP_MS);
});
