/**
 * The credit guard end to end: the reserve, the per-run cap and a 402 each stop the run with the rest
 * deferred; a top-up and another run finish the work without paying for anything twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptionsInput } from '../../src/sandbox/server.ts';
import { FAST_RATE, FAST_RETRY, cliEnv, count, csv, inProcess, makeWorkspace, postUrls, query, run, runCli, spawnCli, taskStatuses, waitFor, type Workspace, operationRequests } from '../support/run-helpers.ts';
import { forEachEngine } from './engines.ts';
import { planReport } from '../../src/runner/plan-report.ts';

const TOKEN = 'credits-token-51be';
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function setUp(total: number, options: SandboxOptionsInput = {}): Promise<{ sandbox: Sandbox; ws: Workspace }> {
  const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: total }, costs: { 'post-details': 1 }, notFoundRate: 0, ...options });
  const ws = await makeWorkspace();
  cleanups.push(() => sandbox.stop(), () => ws.cleanup());
  return { sandbox, ws };
}

async function postsJob(ws: Workspace, n: number, credits: Record<string, number> = {}, name = 'posts'): Promise<string> {
  await ws.write(`${name}.csv`, csv(['post_url'], postUrls(n).map((u) => [u])));
  return ws.job(name, { operation: 'post-details', input: { csv: `${name}.csv`, column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY, credits });
}

/**
 * `netingest <args>` in this process, in the workspace: the command's own code, exit code and output without a
 * Node start per call. One test below spawns the built CLI, the end-to-end path of a credit stop (exit 3).
 */
function netingest(ws: Workspace, args: string[], env: Record<string, string> = {}) {
  return inProcess(args, env, { cwd: ws.dir });
}

/** URLs the sandbox charged for, with how often. */
function chargedUrls(sandbox: Sandbox): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of sandbox.requests) if (r.charged > 0) out.set(r.query['url']!, (out.get(r.query['url']!) ?? 0) + 1);
  return out;
}

// The credit guard is another on PostgreSQL (the budget shared in the database): each promise is checked on both.
forEachEngine('credits.reserve', (engine) => {
  it('stops before the balance would fall below the reserve (exit 3), defers the rest, and a top-up resumes it', async () => {
    const RESERVE = 3;
    const { sandbox, ws } = await setUp(10);
    const db = await engine.open(ws.dir);
    const file = await postsJob(ws, 20, { reserve: RESERVE });
    const cli = await netingest(ws, ['run', file, '--db', db.locator], cliEnv(sandbox, TOKEN));
    expect(cli.code, cli.stderr).toBe(3);
    expect(cli.stdout).toMatch(/stopped on credits/);

    const balance = sandbox.credits(TOKEN);
    expect(balance.credits_remaining).toBeGreaterThanOrEqual(RESERVE);
    expect(operationRequests(sandbox).every((r) => r.status === 200)).toBe(true);
    const done = operationRequests(sandbox).length;
    expect(done).toBeGreaterThan(0);
    expect(await db.taskStatuses('posts')).toEqual({ done, deferred: 20 - done });
    const [runRow] = await db.rows<Record<string, unknown>>('SELECT status, tasks_deferred, tasks_done, credits_at_end, exit_code FROM runs');
    expect(runRow).toEqual({ status: 'stopped_credits', tasks_deferred: 20 - done, tasks_done: done, credits_at_end: balance.credits_remaining, exit_code: 3 });

    // Top up and run again: the deferred tasks are resumed, nothing done is paid for again.
    sandbox.setCredits(TOKEN, 100);
    const second = await run(ws, sandbox, TOKEN, await ws.load(file), { dbPath: db.locator });
    expect(second.status).toBe('completed');
    // done/deferred count the job's tasks by state; fresh ones were not worked again.
    expect(second.jobs[0]).toMatchObject({ fresh: done, worked: 20 - done, done: 20, deferred: 0, failed: 0 });
    expect(second.calls).toBe(20 - done);
    expect(await db.taskStatuses('posts')).toEqual({ done: 20 });
    const charged = chargedUrls(sandbox);
    expect(charged.size).toBe(20);
    expect([...charged.values()].every((n) => n === 1)).toBe(true);
    expect(sandbox.credits(TOKEN).credits_remaining).toBeGreaterThanOrEqual(RESERVE);
  });

  it('spends down to the reserve when the balance can pay: does not stop while calls would still fit', async () => {
    const RESERVE = 3;
    const { sandbox, ws } = await setUp(10);
    const db = await engine.open(ws.dir);
    const summary = await run(ws, sandbox, TOKEN, await ws.load(await postsJob(ws, 20, { reserve: RESERVE })), { dbPath: db.locator });
    expect(summary.status).toBe('stopped_credits');
    // 10 credits, cost 1, reserve 3: seven calls fit. Stopping far earlier (on guessed costs of calls in
    // flight) defers work the balance could pay for: the nightly run says "out of credits" with most unused.
    expect(sandbox.credits(TOKEN).credits_remaining).toBeLessThanOrEqual(RESERVE + 1);
    const done = summary.jobs[0]!.done;
    expect(done).toBe(sandbox.requests.filter((r) => r.charged > 0).length);
    expect(summary.jobs[0]).toMatchObject({ deferred: 20 - done, failed: 0 });
  });
});

describe('credits.maxPerRun', () => {
  it('the --max-credits override caps what one run spends; the next run goes on', async () => {
    const CAP = 5;
    const { sandbox, ws } = await setUp(1_000);
    const jobs = await ws.load(await postsJob(ws, 20));
    const first = await run(ws, sandbox, TOKEN, jobs, { overrides: { maxCredits: CAP } });
    expect(first.status).toBe('stopped_credits');
    const spent1 = sandbox.credits(TOKEN).credits_used;
    expect(spent1).toBeLessThanOrEqual(CAP);
    expect(spent1).toBeGreaterThan(0);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: spent1, deferred: 20 - spent1 });
    expect(first.jobs[0]).toMatchObject({ done: spent1, deferred: 20 - spent1, failed: 0 });

    const second = await run(ws, sandbox, TOKEN, jobs, { overrides: { maxCredits: CAP } });
    expect(second.status).toBe('stopped_credits');
    const spent2 = sandbox.credits(TOKEN).credits_used - spent1;
    expect(spent2).toBeLessThanOrEqual(CAP);
    expect(spent2).toBeGreaterThan(0);
    const charged = chargedUrls(sandbox);
    expect([...charged.values()].every((n) => n === 1)).toBe(true);
    expect(count(ws, `SELECT count(*) FROM tasks WHERE status = 'done'`)).toBe(spent1 + spent2);
  });

  it('a --refresh run stopped by the cap defers what it did not reach: the next run, even without --refresh, refreshes only those', async () => {
    const CAP = 5;
    const { sandbox, ws } = await setUp(1_000);
    const jobs = await ws.load(await postsJob(ws, 12));
    expect((await run(ws, sandbox, TOKEN, jobs)).status).toBe('completed');

    const refreshing = await run(ws, sandbox, TOKEN, jobs, { refresh: true, overrides: { maxCredits: CAP } });
    expect(refreshing.status).toBe('stopped_credits');
    const refreshed = refreshing.jobs[0]!.done;
    expect(refreshed).toBeGreaterThan(0);
    // Tasks the refresh did not reach are due, not done: the summary and the ledger say so.
    expect(refreshing.jobs[0]).toMatchObject({ worked: 12, deferred: 12 - refreshed });
    expect(taskStatuses(ws, 'posts')).toEqual({ done: refreshed, deferred: 12 - refreshed });

    // Without --refresh, the deferred ones still look fresh by date; they must be resumed all the same, and the
    // ones refreshed already must not be paid for a third time.
    const resumed = await run(ws, sandbox, TOKEN, jobs);
    expect(resumed.status).toBe('completed');
    expect(resumed.calls).toBe(12 - refreshed);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 12 });
    const charged = chargedUrls(sandbox);
    expect(charged.size).toBe(12);
    expect([...charged.values()].every((n) => n === 2)).toBe(true);
  });


  it('spends up to the cap, not far below it', async () => {
    const CAP = 5;
    const { sandbox, ws } = await setUp(1_000);
    const summary = await run(ws, sandbox, TOKEN, await ws.load(await postsJob(ws, 20)), { overrides: { maxCredits: CAP } });
    expect(summary.status).toBe('stopped_credits');
    // Cost 1, cap 5: five calls fit in the cap; a run that stops after one call wastes the budget it was given.
    expect(sandbox.credits(TOKEN).credits_used).toBeGreaterThanOrEqual(CAP - 1);
    expect(sandbox.credits(TOKEN).credits_used).toBeLessThanOrEqual(CAP);
    expect(summary.creditsSpent).toBe(sandbox.credits(TOKEN).credits_used);
  });
});

forEachEngine('a --refresh run stopped by the cap, run again with --refresh', (engine) => {
  it('resumes that refresh: what it refreshed is not paid for a third time, and plan says so', async () => {
    const { sandbox, ws } = await setUp(1_000);
    const db = await engine.open(ws.dir);
    const file = await postsJob(ws, 12);
    const [job] = await ws.load(file);
    const json = async (...flags: string[]) => {
      const cli = await netingest(ws, ['run', file, '--db', db.locator, '--json', ...flags], cliEnv(sandbox, TOKEN));
      return JSON.parse(cli.stdout) as { status: string; calls: number; jobs: Array<{ done: number }> };
    };
    expect((await json()).status).toBe('completed');
    const refreshing = await json('--refresh', '--max-credits', '5');
    expect(refreshing.status).toBe('stopped_credits');
    const refreshed = refreshing.jobs[0]!.done;
    expect(refreshed).toBeGreaterThan(0);

    // The user runs the same command again (the up arrow after a stop or a Ctrl-C). Before: all 12 were paid again.
    expect((await planReport(job!, db.locator, true)).calls).toBe(12 - refreshed);
    const again = await json('--refresh');
    expect(again).toMatchObject({ status: 'completed', calls: 12 - refreshed });
    expect([...chargedUrls(sandbox).values()].every((n) => n === 2)).toBe(true);
    // Once that refresh is whole, a --refresh run refreshes everything again.
    expect((await json('--refresh')).calls).toBe(12);
  });
});

forEachEngine('a --refresh run killed with SIGKILL, run again with --refresh', (engine) => {
  it('resumes that refresh: what the killed run stored is not paid for again, only the calls in flight', async () => {
    const TASKS = 60;
    const { sandbox, ws } = await setUp(1_000, { latencyMs: [20, 60] });
    const db = await engine.open(ws.dir);
    const file = await postsJob(ws, TASKS);
    const args = ['run', file, '--db', db.locator];
    expect((await netingest(ws, args, cliEnv(sandbox, TOKEN))).code).toBe(0);
    const night = operationRequests(sandbox).length;
    const victim = spawnCli([...args, '--refresh'], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    await waitFor(() => operationRequests(sandbox).length >= night + 20 || victim.child.exitCode !== null, 20_000, 'calls of the refresh');
    victim.child.kill('SIGKILL');
    expect((await victim.done).signal).toBe('SIGKILL');

    // The user runs the same command again. Before: the killed run's tasks were pending, not deferred, and all 60 were paid again.
    const again = await netingest(ws, [...args, '--refresh'], cliEnv(sandbox, TOKEN));
    expect(again.code, again.stderr).toBe(0);
    expect(await db.taskStatuses('posts')).toEqual({ done: TASKS });
    const refreshCharges = operationRequests(sandbox).slice(night).filter((r) => r.charged > 0).length;
    expect(refreshCharges).toBeGreaterThanOrEqual(TASKS);
    expect(refreshCharges - TASKS).toBeLessThanOrEqual(FAST_RATE.concurrency);
  });
});

forEachEngine('a --refresh run of two jobs killed in the second, run again with --refresh', (engine) => {
  it('resumes the refresh of both: the first job, which the killed run finished, is not paid for again', async () => {
    const FIRST = 40;
    const SECOND = 40;
    const { sandbox, ws } = await setUp(1_000, { latencyMs: [20, 60] });
    const db = await engine.open(ws.dir);
    const first = await postsJob(ws, FIRST, {}, 'first');
    // Other lookups than the first's: the second job takes none of its answers.
    await ws.write('second.csv', csv(['post_url'], postUrls(SECOND, 1_000).map((u) => [u])));
    const second = await ws.job('second', { operation: 'post-details', input: { csv: 'second.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    const args = ['run', first, second, '--db', db.locator];
    expect((await netingest(ws, args, cliEnv(sandbox, TOKEN))).code).toBe(0);
    const night = operationRequests(sandbox).length;
    const victim = spawnCli([...args, '--refresh'], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    // The jobs run one after the other: calls of the second mean the first is refreshed and its books closed.
    await waitFor(() => operationRequests(sandbox).length >= night + FIRST + 10 || victim.child.exitCode !== null, 20_000, 'calls of the second job');
    victim.child.kill('SIGKILL');
    expect((await victim.done).signal).toBe('SIGKILL');

    // The same command again. Before: the first job had nothing pending or deferred, and all 40 were paid again.
    const again = await netingest(ws, [...args, '--refresh'], cliEnv(sandbox, TOKEN));
    expect(again.code, again.stderr).toBe(0);
    expect(await db.taskStatuses('first')).toEqual({ done: FIRST });
    expect(await db.taskStatuses('second')).toEqual({ done: SECOND });
    const refreshCharges = operationRequests(sandbox).slice(night).filter((r) => r.charged > 0).length;
    expect(refreshCharges).toBeGreaterThanOrEqual(FIRST + SECOND);
    expect(refreshCharges - FIRST - SECOND).toBeLessThanOrEqual(FAST_RATE.concurrency);
    // That refresh is whole: the next --refresh (a week later, as soon) refreshes everything again, and plan says so.
    const [firstJob] = await ws.load(first);
    expect((await planReport(firstJob!, db.locator, true)).calls).toBe(FIRST);
    const later = operationRequests(sandbox).length;
    expect((await netingest(ws, [...args, '--refresh'], cliEnv(sandbox, TOKEN))).code).toBe(0);
    expect(operationRequests(sandbox).length - later).toBe(FIRST + SECOND);
  });
});

forEachEngine('a run killed without --refresh, then a --refresh run', (engine) => {
  it('refreshes everything, what the killed run stored too', async () => {
    const TASKS = 60;
    const { sandbox, ws } = await setUp(1_000, { latencyMs: [20, 60] });
    const db = await engine.open(ws.dir);
    const args = ['run', await postsJob(ws, TASKS), '--db', db.locator];
    const victim = spawnCli(args, { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    await waitFor(() => operationRequests(sandbox).length >= 20 || victim.child.exitCode !== null, 20_000, 'calls of the run');
    victim.child.kill('SIGKILL');
    expect((await victim.done).signal).toBe('SIGKILL');
    const killed = operationRequests(sandbox).length;

    // Its tasks left pending are not a refresh to resume. Before: the answers it stored counted as refreshed.
    const refresh = await netingest(ws, [...args, '--refresh'], cliEnv(sandbox, TOKEN));
    expect(refresh.code, refresh.stderr).toBe(0);
    expect(operationRequests(sandbox).length - killed).toBe(TASKS);
  });
});

describe('credits spent', () => {
  /** Credits the sandbox charged from request `from` on. */
  const chargedSince = (sandbox: Sandbox, from: number) => operationRequests(sandbox).slice(from).reduce((n, r) => n + r.charged, 0);

  it('a run of one call on an account used before reports what that call cost, in the summary, runs and status', async () => {
    const { sandbox, ws } = await setUp(1_000, { costs: { 'post-details': 1, 'search-jobs': 0.25 } });
    // Earlier spending on the account (3 credits), then a new operation whose cost nothing has shown yet.
    await run(ws, sandbox, TOKEN, await ws.load(await postsJob(ws, 3)));
    const before = operationRequests(sandbox).length;
    await ws.write('searches.csv', csv(['keywords'], [['welder']]));
    const searches = await ws.job('searches', { operation: 'search-jobs', input: { csv: 'searches.csv' }, rate: FAST_RATE, retry: FAST_RETRY });
    // A short first page ends the list after one paid call.
    const summary = await run(ws, sandbox, TOKEN, await ws.load(searches));
    expect(operationRequests(sandbox).length - before).toBe(1);
    expect(chargedSince(sandbox, before)).toBe(0.25);
    expect(summary.creditsSpent).toBe(0.25);
    expect(query(ws, 'SELECT credits_spent FROM runs WHERE id = ?', summary.runId)).toEqual([{ credits_spent: 0.25 }]);
    const status = await netingest(ws, ['status', '--db', ws.db, '--json']);
    expect(JSON.parse(status.stdout).creditsSpentAllRuns).toBe(3.25);
  });

  it('a first call of an operation whose cost earlier runs learned is counted at that cost', async () => {
    const { sandbox, ws } = await setUp(1_000);
    await run(ws, sandbox, TOKEN, await ws.load(await postsJob(ws, 4)));
    const before = operationRequests(sandbox).length;
    // The account is used elsewhere in between (another tool, same token): the step from the last counters
    // would count that too; the cost learned from earlier steps does not.
    const elsewhere = await fetch(`${sandbox.url}/v1/api/post-details?url=${encodeURIComponent(postUrls(1, 500)[0]!)}`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    });
    expect(elsewhere.status).toBe(200);
    await elsewhere.text();
    const mine = operationRequests(sandbox).length;
    const summary = await run(ws, sandbox, TOKEN, await ws.load(await postsJob(ws, 6, {}, 'more')));
    expect(mine).toBe(before + 1);
    expect(summary.creditsSpent).toBe(chargedSince(sandbox, mine));
  });
});

describe('jobs after a credit stop', () => {
  it('are listed as not reached (text and --json), and the next run after a top-up does them', async () => {
    const { sandbox, ws } = await setUp(10);
    const first = await postsJob(ws, 20, { reserve: 3 }, 'first');
    const second = await postsJob(ws, 3, {}, 'second');
    const cli = await runCli(['run', first, second, '--db', ws.db, '--json'], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    expect(cli.code, cli.stderr).toBe(3);
    const summary = JSON.parse(cli.stdout) as { jobs: Array<{ name: string; status: string; planned: number }> };
    expect(summary.jobs.map((j) => [j.name, j.status])).toEqual([['first', 'ran'], ['second', 'not_reached']]);
    expect(count(ws, `SELECT count(*) FROM tasks WHERE job = 'second'`)).toBe(0);

    sandbox.setCredits(TOKEN, 100);
    const text = await netingest(ws, ['run', first, second, '--db', ws.db], cliEnv(sandbox, TOKEN));
    expect(text.code, text.stderr).toBe(0);
    expect(taskStatuses(ws, 'second')).toEqual({ done: 3 });
  }, 90_000);

  it('under --refresh, have their refresh deferred: the next run without --refresh does it and pays nothing twice', async () => {
    const { sandbox, ws } = await setUp(100);
    await ws.write('second.csv', csv(['post_url'], postUrls(3, 50).map((u) => [u])));
    const second = await ws.job('second', { operation: 'post-details', input: { csv: 'second.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    const first = await postsJob(ws, 10, { reserve: 3 }, 'first');
    const env = cliEnv(sandbox, TOKEN);
    expect((await netingest(ws, ['run', first, second, '--db', ws.db], env)).code).toBe(0);

    // 8 credits left: a few refreshed answers of the first job, then the reserve stops the run.
    sandbox.setCredits(TOKEN, 13 + 8);
    const stopped = await netingest(ws, ['run', first, second, '--db', ws.db, '--refresh'], env);
    expect(stopped.code, stopped.stderr).toBe(3);
    expect(stopped.stdout).toContain('\n  second (post-details): not reached: the run stopped before it; the next run does it (its refresh too: 3 tasks deferred)\n');
    expect(taskStatuses(ws, 'second')).toEqual({ deferred: 3 });
    // Some of the first job's lookups were refreshed before the stop: the next run must not pay for them again.
    const firstStatuses = taskStatuses(ws, 'first');
    expect(firstStatuses['done']).toBeGreaterThan(0);
    expect(firstStatuses['deferred']).toBeGreaterThan(0);

    sandbox.setCredits(TOKEN, 100);
    const resumed = await netingest(ws, ['run', first, second, '--db', ws.db], env);
    expect(resumed.code, resumed.stderr).toBe(0);
    // Every lookup paid exactly twice: its first answer and its one refresh.
    const charged = chargedUrls(sandbox);
    expect(charged.size).toBe(13);
    expect([...charged.values()].every((n) => n === 2), JSON.stringify([...charged])).toBe(true);
  }, 90_000);

  it('the text summary names a job not reached', async () => {
    const { sandbox, ws } = await setUp(5);
    const first = await postsJob(ws, 20, { reserve: 3 }, 'first');
    const second = await postsJob(ws, 3, {}, 'second');
    const cli = await netingest(ws, ['run', first, second, '--db', ws.db], cliEnv(sandbox, TOKEN));
    expect(cli.code, cli.stderr).toBe(3);
    expect(cli.stdout).toContain('\n  second (post-details): not reached: the run stopped before it; the next run does it\n');
  }, 90_000);
});

forEachEngine('which limit stopped the run', (engine) => {
  it('a reserve above the balance: the summary, --json, the log and runs.error name credits.reserve and the balance', async () => {
    const { sandbox, ws } = await setUp(9);
    const db = await engine.open(ws.dir);
    const file = await postsJob(ws, 10, { reserve: 100 });
    const cli = await netingest(ws, ['run', file, '--db', db.locator, '--json'], cliEnv(sandbox, TOKEN));
    expect(cli.code, cli.stderr).toBe(3);
    // The first call learns the balance (9, then 8 after its cost): already below the reserve.
    const left = sandbox.credits(TOKEN).credits_remaining;
    const summary = JSON.parse(cli.stdout) as { stop: { reason: string; limit: string; message: string } };
    expect(summary.stop).toEqual({ reason: 'credits', limit: 'reserve', message: expect.stringMatching(`^credits.reserve: the balance \\(${left}\\) is below the reserve of 100`) });
    expect(cli.stderr).toMatch(new RegExp(`WARN  run stopped early run=1 reason=credits limit=reserve detail="credits.reserve: the balance \\(${left}\\) is below the reserve of 100`));
    expect(cli.stderr).toMatch(/WARN  job stopped before its end job=posts .*reason=credits/);
    const [runRow] = await db.rows<{ status: string; error: string }>('SELECT status, error FROM runs');
    expect(runRow).toEqual({ status: 'stopped_credits', error: expect.stringMatching(/^credits\.reserve: the balance/) });

    const text = await netingest(ws, ['run', file, '--db', db.locator], cliEnv(sandbox, TOKEN));
    expect(text.code, text.stderr).toBe(3);
    expect(text.stdout).toMatch(/stopped on credits/);
    expect(text.stdout).toMatch(/\n  stopped: credits\.reserve: the balance \(\d+\) is below the reserve of 100; top up the account or lower credits\.reserve/);
  });

  it('the per-run cap: the summary names credits.maxPerRun with what was spent', async () => {
    const { sandbox, ws } = await setUp(1_000);
    const db = await engine.open(ws.dir);
    const summary = await run(ws, sandbox, TOKEN, await ws.load(await postsJob(ws, 20)), { dbPath: db.locator, overrides: { maxCredits: 5 } });
    expect(summary.status).toBe('stopped_credits');
    expect(summary.creditsSpent).toBe(sandbox.credits(TOKEN).credits_used);
    expect(summary.stop).toEqual({
      reason: 'credits',
      limit: 'max-per-run',
      message: expect.stringMatching(new RegExp(`^credits.maxPerRun of job \\S+: the run had spent ${summary.creditsSpent} of its cap of 5 and the next call \\(about 1 credit\\) would go over it`)),
    });
  });
});

describe('402 from the service', () => {
  it.each([
    ['a service without the balance check: the first call meets 402', false],
    ['the balance check shows it: no call at all', true],
  ])('a balance exhausted by another run (%s), the run stops with every task deferred', async (_name, balanceRoute) => {
    const { sandbox, ws } = await setUp(8, { balanceRoute });
    // Other runs on another database, sharing the token, spend it first (reserve 0: down to nothing).
    const other = await makeWorkspace();
    cleanups.push(() => other.cleanup());
    const otherJobs = await other.load(await postsJob(other, 30));
    for (let i = 0; i < 5 && sandbox.credits(TOKEN).credits_remaining >= 1; i++) await run(other, sandbox, TOKEN, otherJobs);
    const afterOther = operationRequests(sandbox).length;
    expect(sandbox.credits(TOKEN).credits_remaining).toBeLessThan(1);

    const mine = await ws.load(await postsJob(ws, 10));
    const summary = await run(ws, sandbox, TOKEN, mine);
    const log = operationRequests(sandbox).slice(afterOther);
    expect(summary.status).toBe('stopped_credits');
    expect(summary.jobs[0]).toMatchObject({ done: 0, failed: 0, deferred: 10 });
    expect(taskStatuses(ws, 'posts')).toEqual({ deferred: 10 });
    if (balanceRoute) {
      expect(log).toEqual([]);
      expect(summary.stop).toMatchObject({ reason: 'credits', limit: 'reserve', message: expect.stringMatching(/^credits: the balance \(\d+(\.\d+)?\) cannot pay for the next call \(assumed 5 credits/) });
      return;
    }
    expect(log.map((r) => r.status)).toEqual([402]);
    expect(summary.error?.code).toBe('OUT_OF_CREDITS');
    expect(summary.stop).toMatchObject({ reason: 'credits', limit: 'out-of-credits' });
    expect(count(ws, `SELECT count(*) FROM api_calls WHERE status = 402 AND error_code = 'OUT_OF_CREDITS'`)).toBe(1);
  });

});

forEachEngine('402 from the service, mid-run', (engine) => {
  it('402 in the middle of a run: calls in flight settle, charged answers are kept, the rest is deferred and resumed after a top-up', async () => {
    let drained = false;
    const { sandbox, ws } = await setUp(1_000, {
      // Some answers are charged at once but sent 200 ms late ("slow"). Another consumer of the token empties
      // the account right after such an answer is charged, so it is still on the wire when 402s come back.
      slowRate: 0.3,
      slowMs: 200,
      onRequest: (entry) => {
        if (!drained && entry.fault === 'slow' && entry.charged > 0 && entry.seq >= 3) {
          drained = true;
          queueMicrotask(() => sandbox.setCredits(TOKEN, sandbox.credits(TOKEN).credits_used));
        }
      },
    });
    const db = await engine.open(ws.dir);
    const jobs = await ws.load(await postsJob(ws, 30));
    const first = await run(ws, sandbox, TOKEN, jobs, { dbPath: db.locator });
    expect(first.status).toBe('stopped_credits');
    const charged = chargedUrls(sandbox);

    expect(drained).toBe(true);
    expect(sandbox.requests.some((r) => r.status === 402)).toBe(true);
    // Every answer that was paid for is stored; nothing failed; the rest waits for the next run.
    expect(await db.taskStatuses('posts')).toEqual({ done: charged.size, deferred: 30 - charged.size });
    expect(await db.count('SELECT count(*) FROM raw_responses')).toBe(charged.size);

    sandbox.setCredits(TOKEN, 1_000);
    const second = await run(ws, sandbox, TOKEN, jobs, { dbPath: db.locator });
    expect(second.status).toBe('completed');
    expect(await db.taskStatuses('posts')).toEqual({ done: 30 });
    const all = chargedUrls(sandbox);
    expect(all.size).toBe(30);
    expect([...all.values()].every((n) => n === 1)).toBe(true);
  });
});
