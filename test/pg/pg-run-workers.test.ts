/**
 * `run` on PostgreSQL with workers as real processes: a worker killed with SIGKILL and run again loses at most
 * its in-flight calls; two workers started apart share one job (one killed halfway and restarted) without
 * calling a task twice outside the in-flight bound, and together never exceed the shared rate limit in any
 * sliding window; a dataset copied from SQLite is run on PostgreSQL without paying again.
 */
import { describe, expect, it } from 'vitest';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { copyDataset } from '../../src/store/copy-dataset.ts';
import { FAST_RATE, cliEnv, csv, inProcess, operationRequests, postUrls } from '../support/run-helpers.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import {
  BINDING_REQUESTS_PER_MINUTE, busiestWindow, chargedPerUrl, CONCURRENCY, expectWholeAndUnique, LEASE_MS, limitOf, one, RATE_WINDOW_MS, setUp, startWorker, TOKEN, useCleanups, waitFor,
} from './run-workers.ts';

useCleanups();

describe.skipIf(!pgClusterUrl)(`run on PostgreSQL, several workers${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('a worker killed with SIGKILL and run again (the CLI, NETINGEST_DATABASE_URL) ends every task, paying at most its in-flight calls twice', async () => {
    // As run-crash's SQLite kill: a third of the calls made, the rest for the CLI (150 tasks instead of 300 and
    // a kill at 100 calls: the same checks, half the calls and stored answers).
    const TASKS = 150;
    const s = await setUp(TASKS, 'kill');
    const victim = startWorker(s);
    await waitFor(() => operationRequests(s.sandbox).length >= 50 || victim.child.exitCode !== null, 30_000, 'calls of the first worker');
    victim.child.kill('SIGKILL');
    expect(await victim.exited).toBe('SIGKILL');
    expect(operationRequests(s.sandbox).length).toBeLessThan(TASKS);
    // Whatever the kill cut off, each done task has its whole answer: raw body, api_calls row, post row.
    const doneAtKill = await one(s.pool, `SELECT count(*) AS n FROM tasks WHERE status = 'done'`);
    expect(doneAtKill).toBeGreaterThan(0);
    expect(await one(s.pool, `SELECT count(*) AS n FROM tasks t WHERE t.status = 'done' AND (NOT EXISTS (SELECT 1 FROM raw_responses r WHERE r.task_id = t.id)
      OR NOT EXISTS (SELECT 1 FROM api_calls c WHERE c.task_id = t.id AND c.status = 200))`)).toBe(0);
    expect(await one(s.pool, 'SELECT count(*) AS n FROM posts')).toBe(doneAtKill);

    const env = { ...cliEnv(s.sandbox, TOKEN), NETINGEST_DATABASE_URL: s.url, NETINGEST_LOCK_LEASE_SECONDS: String(LEASE_MS / 1000) };
    // The CLI's code in this process (the killed worker is the process here): the dataset from the variable.
    const resumed = await inProcess(['run', s.file, '--json'], env, { cwd: s.ws.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    const summary = JSON.parse(resumed.stdout) as { status: string; jobs: Array<{ name: string; fresh: number }> };
    expect(summary.status).toBe('completed');
    expect(summary.jobs[0]!.fresh).toBe(doneAtKill);
    await expectWholeAndUnique(s.pool, TASKS);
    const charged = chargedPerUrl(s.sandbox);
    expect(charged.size).toBe(TASKS);
    expect([...charged.values()].every((n) => n <= 2)).toBe(true);
    expect(s.sandbox.requests.filter((r) => r.charged > 0).length).toBeLessThanOrEqual(TASKS + CONCURRENCY);
    // The killed worker's run is closed by the next one (its session no longer holds the dataset lock), as on SQLite.
    const runs = (await s.pool.query<{ status: string; calls: number }>('SELECT status, calls FROM runs ORDER BY id')).rows;
    expect(runs.map((r) => r.status)).toEqual(['abandoned', 'completed']);
    expect(runs[0]!.calls).toBeGreaterThan(0);
    // With the figures its committed rows show, as on SQLite: its credits stay in status's total of all runs.
    const [closed] = (await s.pool.query(`SELECT tasks_total AS total, tasks_done AS done, tasks_deferred AS deferred,
      credits_spent AS spent, credits_at_end AS "atEnd" FROM runs WHERE id = 1`)).rows;
    const paid = await one(s.pool, 'SELECT max(credits_used) AS n FROM api_calls WHERE run_id = 1 AND status = 200');
    expect(closed).toEqual({ total: TASKS, done: doneAtKill, deferred: TASKS - doneAtKill, spent: paid, atEnd: 1_000_000 - paid });
  }, 60_000);

  it('two workers started apart share one job; one killed halfway and restarted: every task once (in-flight aside), the shared rate never exceeded', async () => {
    // Twice what the shared rate allows in a window (as the four workers' test): the check below can fail, and
    // the first worker is killed at half the calls, a window in (100 tasks at half the binding rate, 50 a window:
    // 200 at 100 and 400 at 200 before were more rows planned, called and stored for the same edges).
    const TASKS = 100;
    const RATE = BINDING_REQUESTS_PER_MINUTE / 2;
    const s = await setUp(TASKS, 'two', undefined, RATE);
    const first = startWorker(s);
    // The second starts once the first is calling (a second or so later).
    await waitFor(() => operationRequests(s.sandbox).length >= TASKS / 4, 30_000, 'calls of the first worker');
    const second = startWorker(s);
    await waitFor(() => operationRequests(s.sandbox).length >= TASKS / 2, 60_000, 'half of the calls');
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');
    const restarted = startWorker(s);
    expect(await second.exited, second.stderr()).toBe(0);
    expect(await restarted.exited, restarted.stderr()).toBe(0);

    await expectWholeAndUnique(s.pool, TASKS);
    // Paid twice: only the calls the killed worker had in flight.
    const charged = chargedPerUrl(s.sandbox);
    expect(charged.size).toBe(TASKS);
    expect([...charged.values()].every((n) => n <= 2)).toBe(true);
    expect(s.sandbox.requests.filter((r) => r.charged > 0).length).toBeLessThanOrEqual(TASKS + CONCURRENCY);
    // The job was shared: the first and the second worker both made calls (the restarted one may find little left).
    expect(await one(s.pool, 'SELECT count(DISTINCT run_id) AS n FROM api_calls')).toBeGreaterThanOrEqual(2);
    for (const w of [second, restarted]) expect((JSON.parse(w.stdout().split('\n').filter(Boolean).pop()!) as { status: string }).status).toBe('completed');
    // The shared limit held across the workers, in every sliding window.
    expect(busiestWindow(s.sandbox, RATE_WINDOW_MS)).toBeLessThanOrEqual(limitOf(RATE));
  }, 90_000);

  it('inputs removed from the CSV since an earlier run left them deferred are not called, as on SQLite', async () => {
    const s = await setUp(20, 'removed');
    const api = { baseUrl: s.sandbox.url, token: TOKEN };
    // The default rate (60 calls a minute, shared across runs by the rate slots) would make this 8 s of waiting.
    const posts = { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE };
    const capped = await s.ws.job('posts', { ...posts, credits: { maxPerRun: 5 } });
    const first = await runJobs({ dbPath: s.url, jobs: await s.ws.load(capped), api, requestTimeoutMs: 5000 });
    expect(first.stop?.reason).toBe('credits');
    expect(await one(s.pool, `SELECT count(*) AS n FROM tasks WHERE status = 'deferred'`)).toBeGreaterThanOrEqual(10);
    const kept = postUrls(20).slice(0, 5);
    const added = postUrls(3, 100);
    await s.ws.write('posts.csv', csv(['post_url'], [...kept, ...added].map((u) => [u])));
    const before = operationRequests(s.sandbox).length;
    // The same job, its cap lifted.
    const uncapped = await s.ws.job('posts', posts);
    const second = await runJobs({ dbPath: s.url, jobs: await s.ws.load(uncapped), api, requestTimeoutMs: 5000 });
    expect(second.status, JSON.stringify(second.stop)).toBe('completed');
    const asked = new Set(operationRequests(s.sandbox).slice(before).map((r) => r.query['url']));
    const removed = postUrls(20).slice(5);
    expect(removed.filter((u) => asked.has(u))).toEqual([]);
    for (const u of added) expect(asked.has(u), u).toBe(true);
  }, 60_000);

  it('a dataset copied from SQLite, then run on PostgreSQL, bills nothing for fresh tasks', async () => {
    const TASKS = 60;
    const s = await setUp(TASKS, 'copied');
    const jobs = await s.ws.load(s.file);
    const api = { baseUrl: s.sandbox.url, token: TOKEN };
    const onSqlite = await runJobs({ dbPath: s.ws.db, jobs, api, requestTimeoutMs: 5000 });
    expect(onSqlite.status).toBe('completed');
    const paid = operationRequests(s.sandbox).length;
    expect(paid).toBe(TASKS);
    await copyDataset(s.ws.db, s.url);
    const onPg = await runJobs({ dbPath: s.url, jobs, api, requestTimeoutMs: 5000 });
    expect(onPg.status).toBe('completed');
    expect(onPg.jobs[0]!.fresh).toBe(TASKS);
    expect(operationRequests(s.sandbox).length).toBe(paid);
    // The run is recorded after the copied one, its id past the copied ids.
    expect(await one(s.pool, 'SELECT count(*) AS n FROM runs')).toBe(2);
  }, 60_000);
});
