/**
 * The service's free credit check, GET /v1/api/auth: when it answers with readable counters the run starts from
 * them (exact spend from the first call, calls go together once a call showed the cost, no paid call when the balance cannot
 * pay), and `plan` and `status` show the balance; any other answer means "not offered" and changes nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { runJobs, type RunSummary } from '../../src/runner/run-jobs.ts';
import { CreditGuard } from '../../src/credits/credit-guard.ts';
import { CreditMeter } from '../../src/credits/credit-meter.ts';
import { FAST_RATE, FAST_RETRY, csv, inProcess, postUrls, runCli, taskStatuses, useWorkspaces, type Workspace } from '../support/run-helpers.ts';
import { postResponse } from '../support/db-fixtures.ts';
import { createLogger, type Logger } from '../../src/runner/logger.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'balance-check-token/42+x';
const newWorkspace = useWorkspaces();
const startFake = useFakeServices();

/** How /v1/api/auth answers: readable counters, or one of the ways of not offering them. */
type AuthMode = 'offered' | '404' | '401' | '500' | 'garbage' | 'strings' | 'redirect' | 'silent';

interface Account {
  url: string;
  total: number;
  used: number;
  /** Requests by path (without query). */
  hits: Map<string, number>;
  /** Post-details requests answered while another was in flight, at the time the first one was answered. */
  firstInFlight: number;
}

function postBody(url: string, a: Account): string {
  const id = /activity-(\d+)/.exec(url)?.[1] ?? '1';
  return JSON.stringify({
    ...postResponse({ PostId: `activity-${id}` }),
    total_credits: a.total,
    credits_used: a.used,
    credits_remaining: a.total - a.used,
  });
}

/**
 * A service whose account holds `total` credits with `used` spent before; post-details costs `cost` credits (402 when
 * the balance cannot pay). Its first post-details answer waits (up to `holdFirstMs`; none by default) for a
 * second call to arrive: what shows whether calls go together.
 */
async function service(auth: AuthMode, total: number, used: number, holdFirstMs = 0, cost = 1): Promise<Account> {
  const a: Account = { url: '', total, used, hits: new Map(), firstInFlight: 0 };
  let inFlight = 0;
  let firstHeld: (() => void) | null = null;
  let answered = 0;
  a.url = await startFake((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://x');
    a.hits.set(url.pathname, (a.hits.get(url.pathname) ?? 0) + 1);
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end();
    if (url.pathname === '/v1/api/auth') {
      const json = { 'content-type': 'application/json' };
      switch (auth) {
        case 'offered':
          return void res.writeHead(200, json).end(JSON.stringify({ uid: 'u-1', team: 't', total_credits: a.total, credits_used: a.used, credits_remaining: a.total - a.used }));
        case '404':
          return void res.writeHead(404, json).end('{"message":"Not Found"}');
        case '401':
          return void res.writeHead(401, json).end(`{"error":"bad token ${TOKEN}"}`);
        case '500':
          return void res.writeHead(500).end('oops');
        case 'garbage':
          return void res.writeHead(200, { 'content-type': 'text/html' }).end(`<html>${TOKEN}</html>`);
        case 'strings':
          return void res.writeHead(200, json).end('{"total_credits":"100","credits_used":"1","credits_remaining":"99"}');
        case 'redirect':
          return void res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
        case 'silent':
          return; // never answers: the check gives up on its own
      }
    }
    if (url.pathname !== '/v1/api/post-details') return void res.writeHead(404).end('{"message":"no"}');
    if (a.total - a.used < cost) return void res.writeHead(402, { 'content-type': 'application/json' }).end('{"message":"no credits"}');
    a.used += cost;
    const body = postBody(url.searchParams.get('url') ?? '', a);
    inFlight += 1;
    const answer = () => {
      inFlight -= 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    };
    if (answered++ === 0) {
      const timer = setTimeout(() => release(), holdFirstMs);
      const release = () => {
        clearTimeout(timer);
        firstHeld = null;
        a.firstInFlight = inFlight;
        answer();
      };
      firstHeld = release;
    } else {
      if (firstHeld) firstHeld();
      answer();
    }
  });
  return a;
}

async function postsJob(ws: Workspace, n: number, credits: Record<string, number> = {}): Promise<string> {
  await ws.write('posts.csv', csv(['post_url'], postUrls(n).map((u) => [u])));
  return ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY, credits });
}

function runOn(ws: Workspace, a: Account, file: string, extra: { maxCredits?: number; requestTimeoutMs?: number; logger?: Logger } = {}): Promise<RunSummary> {
  return ws.load(file).then((jobs) =>
    runJobs({
      dbPath: ws.db,
      jobs,
      api: { baseUrl: a.url, token: TOKEN },
      requestTimeoutMs: extra.requestTimeoutMs ?? 5000,
      overrides: extra.maxCredits === undefined ? undefined : { maxCredits: extra.maxCredits },
      logger: extra.logger,
    }),
  );
}

const posts = (a: Account) => a.hits.get('/v1/api/post-details') ?? 0;

/** `netingest <args>` in this process, in the workspace: the command's code and output without a Node start. */
function netingest(ws: Workspace, args: string[], env: Record<string, string> = {}) {
  return inProcess(args, env, { cwd: ws.dir });
}
/** The answers of the balance check that echo the token: the built CLI is spawned for them, so that all it prints is searched. */
const TOKEN_ECHOED = new Set<AuthMode>(['401', 'garbage']);

describe('the balance check before the first paid call', () => {
  it('a fresh database on an account used before: one 1-credit call is reported as 1 spent, not 5', async () => {
    const a = await service('offered', 1_000, 700);
    const ws = await newWorkspace();
    const summary = await runOn(ws, a, await postsJob(ws, 1));
    expect(a.hits.get('/v1/api/auth')).toBe(1);
    expect(summary.creditsSpent).toBe(1);
    expect(summary.creditsSpentEstimated).toBe(false);
    expect(summary.creditsRemaining).toBe(299);
  });

  it('--max-credits 5 on a fresh database spends 5 one-credit calls, not 1', async () => {
    const a = await service('offered', 1_000, 700);
    const ws = await newWorkspace();
    const summary = await runOn(ws, a, await postsJob(ws, 20), { maxCredits: 5 });
    expect(posts(a)).toBe(5);
    expect(summary.creditsSpent).toBe(5);
    expect(summary.stop?.limit).toBe('max-per-run');
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 5, deferred: 15 });
  });

  it('the first call of an operation whose cost no run learned goes alone; once learned, calls go together from the first', async () => {
    const ws = await newWorkspace();
    const first = await service('offered', 1_000, 0);
    expect((await runOn(ws, first, await postsJob(ws, 3))).creditsSpent).toBe(3);
    // Its answer is alone in flight (counted as 1 as it is answered).
    expect(first.firstInFlight).toBe(1);
    // The cost is in the dataset now: the next run's first answer waits (up to 2 s) for a second call to arrive.
    const a = await service('offered', 1_000, 3, 2000);
    const summary = await runOn(ws, a, await postsJob(ws, 8));
    expect(summary.status).toBe('completed');
    expect(a.firstInFlight).toBeGreaterThan(1);
    expect(summary.creditsSpent).toBe(5);
  });

  it('a run started after a credit stop with no top-up makes no paid call', async () => {
    const a = await service('offered', 10, 0);
    const ws = await newWorkspace();
    const file = await postsJob(ws, 20);
    const first = await runOn(ws, a, file);
    expect(first.status).toBe('stopped_credits');
    expect(posts(a)).toBe(10);
    const second = await runOn(ws, a, file);
    expect(posts(a)).toBe(10);
    expect(second.status).toBe('stopped_credits');
    expect(second.calls).toBe(0);
    expect(second.stop?.message).toBe('credits: the balance (0) cannot pay for the next call (about 1 credit); top up the account');
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 10, deferred: 10 });
  });

  it.each(['404', '401', '500', 'garbage', 'strings', 'redirect'] as const)(
    'not offered (%s): the run goes on as without it, and the token is printed nowhere',
    async (mode) => {
      // Whether calls go together is not asked here: no hold on the first answer.
      const a = await service(mode, 1_000, 0, 0);
      const ws = await newWorkspace();
      const file = await postsJob(ws, 3);
      const args = ['run', file, '--db', ws.db, '--json'];
      const env = { NETINGEST_API_URL: a.url, NETINGEST_API_TOKEN: TOKEN };
      const cli = TOKEN_ECHOED.has(mode) ? await runCli(args, { cwd: ws.dir, env }) : await netingest(ws, args, env);
      expect(cli.code, cli.stderr).toBe(0);
      expect(a.hits.get('/v1/api/auth')).toBe(1);
      expect(posts(a)).toBe(3);
      expect(JSON.parse(cli.stdout)).toMatchObject({ status: 'completed', creditsRemaining: 997 });
      expect(cli.stdout + cli.stderr).not.toContain(TOKEN);
      expect(cli.stderr).toContain('balance not offered by the API');
    },
    30_000,
  );

  it('not offered (no answer): the check gives up within the client\'s request timeout and the run goes on', async () => {
    // The check waits the client's timeout, at most 5 s: the CLI's 30 s timeout would make this a 5 s wait, so
    // the run is called with 1 s (the same code the CLI calls, its log written to a stream here).
    const a = await service('silent', 1_000, 0);
    const ws = await newWorkspace();
    const log = new PassThrough();
    let logged = '';
    log.on('data', (c: Buffer) => (logged += c.toString()));
    const startedAt = performance.now();
    const summary = await runOn(ws, a, await postsJob(ws, 3), { requestTimeoutMs: 1000, logger: createLogger({ stream: log, secrets: [TOKEN] }) });
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(1000);
    expect(summary).toMatchObject({ status: 'completed', creditsRemaining: 997 });
    expect(a.hits.get('/v1/api/auth')).toBe(1);
    expect(posts(a)).toBe(3);
    expect(logged).toContain('balance not offered by the API');
    expect(logged).not.toContain(TOKEN);
  });
});

describe('plan and status show the balance the service gives', () => {
  it('plan says the balance now and that the run will stop short of the reserve; status says it too', async () => {
    const a = await service('offered', 100, 40);
    const ws = await newWorkspace();
    const file = await postsJob(ws, 80, { reserve: 30 });
    const env = { NETINGEST_API_URL: a.url, NETINGEST_API_TOKEN: TOKEN };
    const plan = await netingest(ws, ['plan', file, '--db', ws.db], env);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('  balance: 60 (asked the service now)  — maybe not enough to finish above the reserve of 30');
    const json = await netingest(ws, ['plan', file, '--db', ws.db, '--json'], env);
    expect(JSON.parse(json.stdout)[0]).toMatchObject({ liveBalance: 60, lastKnownBalance: null });
    expect(posts(a)).toBe(0);

    await runOn(ws, a, file);
    // Two paid answers no run stored (lost in flight, or the token used elsewhere).
    a.used += 2;
    const status = await netingest(ws, ['status', '--db', ws.db, '--json'], env);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout).liveBalance).toEqual({ balance: 28, totalCredits: 100, creditsUsed: 72, usedSinceLastStoredAnswer: 2 });
    const text = await netingest(ws, ['status', '--db', ws.db], env);
    expect(text.stdout).toContain(
      "Balance now: 28 of 100 (asked the service's free credit check; 2 used since the last answer stored, by calls lost in flight or elsewhere)",
    );
    // Without an API configured, status reads the database alone.
    const offline = await netingest(ws, ['status', '--db', ws.db, '--json']);
    expect(offline.code, offline.stderr).toBe(0);
    expect(JSON.parse(offline.stdout).liveBalance).toBeNull();
  }, 60_000);
});

// On PostgreSQL every call must fit the account's shared budget as well, which hears of the balance check too.
forEachEngine('a run with a small balance read before its first call', (engine) => {
  it('sends one call alone to learn the cost the assumed one would not fit, then spends down to the reserve', async () => {
    // 7 credits left, reserve 3: the assumed 5 does not fit; the first answer shows 1, so four calls in all.
    const a = await service('offered', 100, 93, 0);
    const ws = await newWorkspace();
    const db = await engine.open(ws.dir);
    const jobs = await ws.load(await postsJob(ws, 20, { reserve: 3 }));
    const summary = await runJobs({ dbPath: db.locator, jobs, api: { baseUrl: a.url, token: TOKEN }, requestTimeoutMs: 5000 });
    expect(summary.stop?.limit).toBe('reserve');
    expect(posts(a)).toBe(4);
    expect(await db.taskStatuses('posts')).toEqual({ done: 4, deferred: 16 });
  });
});

// On PostgreSQL a worker's own answers cannot show the cost (other workers' calls step the same counters): its first
// call still goes alone, and that answer's step from the balance read bounds the cost until the account's answers show it.
forEachEngine('a run whose calls cost more than the assumed 5, the balance read before its first call', (engine) => {
  it.each([
    ['credits.maxPerRun', { maxPerRun: 20 }, 2_000, 8, 4],
    ['credits.reserve', { reserve: 10 }, 40, 8, 4],
    ['credits.maxPerRun at concurrency 20', { maxPerRun: 100 }, 5_000, 50, 20],
  ])('keeps %s: the first call goes alone and bounds the cost', async (_limit, credits, total, cost, concurrency) => {
    // A hostile tester's finding: 16 calls sent together at the assumed 5 that cost 8 each spent 32 of a cap of 20
    // (at 50 a call and concurrency 20, 950 of a cap of 100).
    const a = await service('offered', total, 0, 0, cost);
    const ws = await newWorkspace();
    const db = await engine.open(ws.dir);
    await ws.write('posts.csv', csv(['post_url'], postUrls(20).map((u) => [u])));
    const file = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: { ...FAST_RATE, concurrency }, retry: FAST_RETRY, credits });
    const summary = await runJobs({ dbPath: db.locator, jobs: await ws.load(file), api: { baseUrl: a.url, token: TOKEN }, requestTimeoutMs: 5000 });
    expect(summary.status).toBe('stopped_credits');
    expect(a.firstInFlight).toBe(1);
    if ('maxPerRun' in credits) expect(a.used).toBeLessThanOrEqual(credits.maxPerRun);
    else expect(a.total - a.used).toBeGreaterThanOrEqual(credits.reserve);
    expect(summary.creditsSpent).toBe(a.used);
  });
});

// Without the check, the last balance stored stands in for it: each nightly run paid one call below the reserve.
forEachEngine('runs on an account whose balance check is not offered', (engine) => {
  it('a last known balance that cannot pay the next call above the reserve makes no call; --reserve 0 shows a top-up', async () => {
    // A tester's repro: 30 credits, 3 a call, reserve 10; the first run stops with 12 left, each later one paid a call anyway.
    const a = await service('404', 30, 0, 0, 3);
    const ws = await newWorkspace();
    const db = await engine.open(ws.dir);
    const jobs = await ws.load(await postsJob(ws, 20, { reserve: 10 }));
    const run = (reserve?: number) =>
      runJobs({ dbPath: db.locator, jobs, api: { baseUrl: a.url, token: TOKEN }, requestTimeoutMs: 5000, overrides: reserve === undefined ? undefined : { reserve } });
    expect((await run()).stop?.limit).toBe('reserve');
    expect(a.total - a.used).toBe(12);
    const called = posts(a);
    for (const _ of [1, 2]) {
      const next = await run();
      expect(posts(a)).toBe(called);
      expect(next).toMatchObject({ status: 'stopped_credits', calls: 0, stop: { reason: 'credits', limit: 'reserve' } });
      expect(next.stop?.message).toMatch(
        /^credits\.reserve: the last known balance \(12, read at [^)]+\) minus the next call \(about 3 credits\) would fall below the reserve of 10; the service offers no free balance check, so a top-up cannot be seen before a paid call: after topping up, one run with --reserve 0 shows the new balance$/,
      );
    }
    expect(await db.taskStatuses('posts')).toEqual({ done: 6, deferred: 14 });
    // Topped up: one run with --reserve 0 calls, and its answers show the new balance to the runs after it.
    a.total += 100;
    expect(await run(0)).toMatchObject({ status: 'completed', creditsRemaining: 70 });
  });

  it('at a reserve of 0, a last known balance below one call does not stop the run after a top-up', async () => {
    // 30 credits, 4 a call: the first run spends 28 and its next call is refused (402) with 2 left.
    const a = await service('404', 30, 0, 0, 4);
    const ws = await newWorkspace();
    const db = await engine.open(ws.dir);
    const jobs = await ws.load(await postsJob(ws, 20));
    const run = () => runJobs({ dbPath: db.locator, jobs, api: { baseUrl: a.url, token: TOKEN }, requestTimeoutMs: 5000 });
    expect((await run()).status).toBe('stopped_credits');
    expect(a.total - a.used).toBe(2);
    // Topped up: the next nightly run calls (the service's 402 is the floor at a reserve of 0) and finishes.
    a.total += 100;
    expect(await run()).toMatchObject({ status: 'completed', creditsRemaining: 50 });
  });
});

describe('a run that started from the balance check', () => {
  const at = (used: number, total = 1000) => ({ total_credits: total, credits_used: used, credits_remaining: total - used });

  it('with a small balance and no cost learned, still sends one call alone to learn it, then keeps the reserve', async () => {
    const guard = new CreditGuard({ reserve: 3, maxPerRun: null });
    expect(guard.seed(at(93, 100))).toBe(true);
    // 7 left, reserve 3: the assumed 5 does not fit, but one call may show the cost.
    const first = await guard.acquire('post-details');
    expect(first).not.toBeNull();
    guard.settle(first!, at(94, 100));
    expect(guard.spent).toBe(1);
    for (let used = 95; used <= 97; used++) guard.settle((await guard.acquire('post-details'))!, at(used, 100));
    expect(await guard.acquire('post-details')).toBeNull();
    expect(guard.stopDetail).toMatchObject({ reason: 'reserve', balance: 3, costAssumed: false });
  });

  it('its answers, stored out of the order they were charged in, are replayed without a false renewal', () => {
    // Calls sent together from the start (the balance was read first) on a fresh database; a killed run's books
    // are closed by replaying what it stored, in the order it was written.
    const meter = new CreditMeter({});
    for (const used of [703, 701, 702, 704, 706, 705]) meter.observe('post-details', at(used));
    expect(meter.spent).toBe(6);
    expect(meter.balance).toBe(294);
  });
});
