/**
 * The credit caps with paid answers whose cost cannot be read: a 200 without usable counters (missing, strings,
 * "NaN", 1e400, 1e308, credits used below zero), over the size limit, or HTML is billed by the service all the same. Each is charged at the
 * highest cost learned for its operation (or the default before any), so credits.maxPerRun and credits.reserve
 * stop the run where readable counters would have, and the summary says how many were estimated.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { runJobs, type RunSummary } from '../../src/runner/run-jobs.ts';
import { CreditGuard } from '../../src/credits/credit-guard.ts';
import { FAST_RATE, FAST_RETRY, csv, inProcess, postUrls, taskStatuses, useWorkspaces, type Workspace } from '../support/run-helpers.ts';
import { postResponse } from '../support/db-fixtures.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';

const TOKEN = 'unread-credits-token-77';
const TOTAL = 100_000;
const newWorkspace = useWorkspaces();
const startFake = useFakeServices();

type Mode = 'missing' | 'strings' | 'nan' | 'infinite' | 'huge' | 'negative' | 'html' | 'too-large';

/** A post-details answer for `url` with the account's counters written as `counters` (JSON text of its members). */
function postBody(url: string, counters: string): string {
  const id = /activity-(\d+)/.exec(url)?.[1] ?? '1';
  // The answer without its counters, which `counters` writes as this test needs them.
  const { total_credits: _t, credits_used: _u, credits_remaining: _r, ...post } = postResponse({ PostId: `activity-${id}` });
  const json = JSON.stringify(post);
  return counters === '' ? json : `${json.slice(0, -1)},${counters}}`;
}

/**
 * A service that bills 1 credit for every post-details call it answers with a 200, shows readable counters on
 * the first `readable` answers and then answers as `mode` says.
 */
async function billingService(mode: Mode, readable: number, offersBalance = false): Promise<{ url: string; billed: () => number }> {
  let used = 0;
  const url = await startFake((req: IncomingMessage, res: ServerResponse) => {
    // The free balance check, when offered, answers the counters; it is not billed.
    if (req.url === '/v1/api/auth') {
      if (!offersBalance) return void res.writeHead(404).end('{}');
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ total_credits: TOTAL, credits_used: used, credits_remaining: TOTAL - used }));
    }
    const asked = new URL(req.url ?? '/', 'http://x').searchParams.get('url') ?? '';
    used += 1;
    const counters = (u: string, t: string, r: string) => `"total_credits":${t},"credits_used":${u},"credits_remaining":${r}`;
    if (used <= readable) return void res.writeHead(200, { 'content-type': 'application/json' }).end(postBody(asked, counters(`${used}`, `${TOTAL}`, `${TOTAL - used}`)));
    switch (mode) {
      case 'missing':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(postBody(asked, ''));
      case 'strings':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(postBody(asked, counters(`"${used}"`, `"${TOTAL}"`, `"${TOTAL - used}"`)));
      case 'nan':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(postBody(asked, counters('"NaN"', '"NaN"', '"NaN"')));
      case 'infinite':
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(postBody(asked, counters('1e400', '1e400', '1e400')));
      case 'huge':
        // Finite, but no balance: summed, they made Infinity, stored for good in runs.credits_spent.
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(postBody(asked, counters('1e308', '1e308', '1e308')));
      case 'negative':
        // A counter of credits used below zero: read as a renewal, it made the run's spend negative, past its cap.
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(postBody(asked, counters(`${used - TOTAL}`, `${TOTAL}`, `${TOTAL - used}`)));
      case 'html':
        return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>Service busy</body></html>');
      case 'too-large':
        // Announced far over the client's limit: it reads the start for its message and hangs up.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(64 * 1024 * 1024) });
        res.write(' '.repeat(64 * 1024));
        return;
    }
  });
  return { url, billed: () => used };
}

async function postsJob(ws: Workspace, n: number, credits: Record<string, number>): Promise<string> {
  await ws.write('posts.csv', csv(['post_url'], postUrls(n).map((u) => [u])));
  // Answers over the size limit are unusable (exit 6 after a few in a row): the bound is raised here so that the
  // credit guard, which must see every paid call, is what stops the run.
  const retry = { ...FAST_RETRY, maxUnusableAnswers: 100 };
  return ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry, credits });
}

async function runAgainst(mode: Mode, readable: number, credits: Record<string, number>, offersBalance = false): Promise<{ summary: RunSummary; billed: number; ws: Workspace }> {
  const service = await billingService(mode, readable, offersBalance);
  const ws = await newWorkspace();
  const jobs = await ws.load(await postsJob(ws, 40, credits));
  // HTML answers look like an outage; here every call must be seen by the credit guard.
  const summary = await runJobs({ dbPath: ws.db, jobs, api: { baseUrl: service.url, token: TOKEN }, requestTimeoutMs: 5000, outageMinTasks: 1000 });
  return { summary, billed: service.billed(), ws };
}

const MODES: Mode[] = ['missing', 'strings', 'nan', 'infinite', 'huge', 'negative', 'html', 'too-large'];

describe('paid answers whose cost cannot be read', () => {
  it.each(MODES)('%s: credits.maxPerRun 10 stops at exactly 10 billed, as readable counters would', async (mode) => {
    const { summary, billed } = await runAgainst(mode, 3, { maxPerRun: 10 });
    expect(billed).toBe(10);
    expect(summary.status).toBe('stopped_credits');
    expect(summary.stop?.limit).toBe('max-per-run');
    expect(summary.creditsSpent).toBe(10);
    expect(summary.creditsEstimatedAnswers).toBe(7);
    expect(summary.creditsSpentEstimated).toBe(true);
  });

  it.each(MODES)('%s: a reserve of 99,990 on 100,000 stops at exactly 10 billed', async (mode) => {
    const { summary, billed } = await runAgainst(mode, 3, { reserve: TOTAL - 10 });
    expect(billed).toBe(10);
    expect(summary.stop?.limit).toBe('reserve');
    expect(summary.creditsRemaining).toBe(TOTAL - 10);
    expect(summary.creditsEstimatedAnswers).toBe(7);
  });

  it('with no readable counters at all, each answer is charged at the default and the cap still holds', async () => {
    const { summary, billed, ws } = await runAgainst('missing', 0, { maxPerRun: 10, reserve: TOTAL - 10 });
    expect(billed).toBeLessThanOrEqual(10);
    expect(billed).toBeGreaterThan(0);
    expect(summary.status).toBe('stopped_credits');
    expect(summary.creditsEstimatedAnswers).toBe(billed);
    expect(summary.creditsSpent).toBe(billed * 5);
    expect(summary.creditsRemaining).toBeNull();
    expect(taskStatuses(ws, 'posts')).toMatchObject({ deferred: 40 - billed });
  });

  it('with the balance read before the first call and no readable answer, the reserve holds at the default cost', async () => {
    const { summary, billed } = await runAgainst('missing', 0, { reserve: TOTAL - 10 }, true);
    // 5 credits assumed per answer: two fit above the reserve.
    expect(billed).toBe(2);
    expect(summary.stop?.limit).toBe('reserve');
    expect(summary.creditsRemaining).toBe(TOTAL - 10);
    expect(summary.creditsSpent).toBe(10);
  });

  it('the text and --json summaries of the CLI say how many were estimated', async () => {
    const service = await billingService('missing', 3);
    const ws = await newWorkspace();
    const file = await postsJob(ws, 40, { maxPerRun: 10 });
    const env = { NETINGEST_API_URL: service.url, NETINGEST_API_TOKEN: TOKEN };
    // The CLI's code in this process: what the summaries say (a credit stop's exit from a real process is
    // run-credits'). Two spawned runs were 10 s of this file's 16 with the CPU busy.
    const json = await inProcess(['run', file, '--db', ws.db, '--json'], env, { cwd: ws.dir });
    expect(json.code, json.stderr).toBe(3);
    expect(JSON.parse(json.stdout)).toMatchObject({ creditsSpent: 10, creditsEstimatedAnswers: 7, creditsSpentEstimated: true });
    const text = await inProcess(['run', file, '--db', ws.db, '--max-credits', '3'], env, { cwd: ws.dir });
    expect(text.code, text.stderr).toBe(3);
    expect(service.billed()).toBe(13);
    expect(text.stdout).toContain('credits: about 3 spent (3 paid answers without readable credit counters, each counted at the highest cost learned for its operation)');
  }, 60_000);
});

describe('an estimate stands until readable counters cover the call', () => {
  const at = (used: number) => ({ total_credits: 1000, credits_used: used, credits_remaining: 1000 - used });

  it('is replaced by the counters of a call sent after the unread answer came back, and kept otherwise', async () => {
    const guard = new CreditGuard({ reserve: 0, maxPerRun: null }, { lastCreditsUsed: 0 });
    const op = 'post-details' as const;
    for (let used = 1; used <= 5; used++) guard.settle((await guard.acquire(op))!, at(used));
    guard.settle((await guard.acquire(op))!, 'unread');
    expect(guard.spent).toBe(6);
    expect(guard.balance).toBe(994);
    // Charged 7th, sent after the unread answer (charged 6th) came back: its counters count that one.
    guard.settle((await guard.acquire(op))!, at(7));
    expect(guard.spent).toBe(7);
    expect(guard.spentIsEstimate).toBe(false);
    // Two calls in flight together; the unread one answers first, the readable one was sent before: not covered.
    const a = (await guard.acquire(op))!;
    const b = (await guard.acquire(op))!;
    guard.settle(b, 'unread');
    guard.settle(a, at(8));
    expect(guard.spent).toBe(9);
    expect(guard.spentIsEstimate).toBe(true);
    expect(guard.estimatedAnswers).toBe(2);
  });

  it('an unreadable 200 with a non-finite counter is charged as unread, never read as a balance', async () => {
    const guard = new CreditGuard({ reserve: 0, maxPerRun: 7 }, { lastCreditsUsed: 0 });
    guard.settle((await guard.acquire('post-details'))!, at(1));
    guard.settle((await guard.acquire('post-details'))!, { total_credits: Infinity, credits_used: Infinity, credits_remaining: Infinity });
    expect(guard.balance).not.toBeNaN();
    expect(guard.estimatedAnswers).toBe(1);
    expect(Number.isFinite(guard.spent)).toBe(true);
  });
});
