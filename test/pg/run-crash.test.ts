/**
 * A run that does not end by itself: killed with SIGKILL mid-way, or interrupted with SIGINT. The database
 * stays consistent, the next run resumes, and at most the calls that were in flight are paid for twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { cliEnv, count, csv, inProcess, makeWorkspace, postUrls, query, run, spawnCli, taskStatuses, waitFor, type Workspace, operationRequests } from '../support/run-helpers.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'crash-token-a81f';
const CONCURRENCY = 4;
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function setUp(latencyMs: [number, number], tasks: number): Promise<{ sandbox: Sandbox; ws: Workspace; file: string }> {
  const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 100_000 }, notFoundRate: 0, latencyMs });
  const ws = await makeWorkspace();
  cleanups.push(() => sandbox.stop(), () => ws.cleanup());
  await ws.write('posts.csv', csv(['post_url'], postUrls(tasks).map((u) => [u])));
  const file = await ws.job('posts', {
    operation: 'post-details',
    input: { csv: 'posts.csv', column: 'post_url' },
    rate: { requestsPerMinute: 600_000, concurrency: CONCURRENCY },
    retry: { retries: 3, minTimeoutMs: 10, maxTimeoutMs: 50 },
  });
  return { sandbox, ws, file };
}

/** How many times the sandbox charged for each post URL. */
function chargedPerUrl(sandbox: Sandbox): Map<string, number> {
  const out = new Map<string, number>();
  for (const r of sandbox.requests) if (r.charged > 0) out.set(r.query['url']!, (out.get(r.query['url']!) ?? 0) + 1);
  return out;
}

// One killed run for both promises (its books, then the resume): a second kill of the same run proved nothing more.
describe('SIGKILL mid-run', () => {
  it('leaves a consistent database whose books status reads; the next run closes them with their real figures, resumes, and repeats at most the calls in flight', async () => {
    const TASKS = 150;
    const { sandbox, ws, file } = await setUp([20, 60], TASKS);
    const env = cliEnv(sandbox, TOKEN);
    const victim = spawnCli(['run', file, '--db', ws.db], { cwd: ws.dir, env });
    await waitFor(() => operationRequests(sandbox).length >= 50 || victim.child.exitCode !== null, 20_000, 'calls of the first run');
    victim.child.kill('SIGKILL');
    const killed = await victim.done;
    expect(killed.signal).toBe('SIGKILL');
    const beforeKill = operationRequests(sandbox);
    expect(beforeKill.length).toBeLessThan(TASKS);
    const doneAtKill = count(ws, `SELECT count(*) FROM tasks WHERE status = 'done'`);
    expect(doneAtKill).toBeGreaterThan(0);
    // Whatever the kill cut off, each done task has its whole answer: raw body, api_calls row, post row.
    expect(count(ws, `SELECT count(*) FROM tasks t WHERE t.status = 'done' AND NOT EXISTS (SELECT 1 FROM raw_responses r WHERE r.task_id = t.id)`)).toBe(0);
    expect(count(ws, 'SELECT count(*) FROM posts')).toBe(doneAtKill);

    // What the account had been charged when the sandbox answered the last call whose answer the run wrote: a
    // fresh account's credits_used in that answer (the sandbox charges on arrival, so its log's order cannot
    // tell which calls came before it). Calls cut off by the kill after that were charged but never seen.
    const paid = query<{ used: number }>(ws, 'SELECT credits_used AS used FROM api_calls WHERE run_id = 1 AND status = 200');
    const charged = Math.max(...paid.map((c) => c.used));
    const chargedBeforeKill = beforeKill.reduce((n, r) => n + r.charged, 0);
    expect(paid.length).toBeGreaterThan(0);
    expect(charged).toBeGreaterThanOrEqual(paid.length);
    expect(charged).toBeLessThanOrEqual(chargedBeforeKill);
    expect(chargedBeforeKill - charged).toBeLessThanOrEqual(CONCURRENCY);
    const calls = count(ws, 'SELECT count(*) FROM api_calls WHERE run_id = 1');
    const lastCallAt = count(ws, 'SELECT max(at) FROM api_calls WHERE run_id = 1') as unknown as string;

    // status is the CLI's code in this process: the kill is what needs a process.
    const status = await inProcess(['status', '--db', ws.db], {}, { cwd: ws.dir });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).not.toMatch(/in progress/);
    expect(status.stdout).toMatch(/Run 1 stopped without finishing \(pid \d+ on .+ is gone, .*the next run closes it as abandoned/);
    expect(status.stdout).toMatch(new RegExp(`#1 \\S+ unfinished +jobs posts: ${doneAtKill} done, 0 not found, 0 failed, ${TASKS - doneAtKill} deferred, ${calls} calls, ${charged} credits`));
    expect(status.stdout).toContain(`Credits spent by all runs: ${charged}\n`);
    const report = JSON.parse((await inProcess(['status', '--db', ws.db, '--json'], {}, { cwd: ws.dir })).stdout);
    expect(report).toMatchObject({ lock: { alive: false, runId: 1 }, unfinishedRuns: [{ id: 1 }], creditsSpentAllRuns: charged });
    expect(report.runs[0]).toMatchObject({ id: 1, status: 'running', unfinished: true, calls, creditsSpent: charged });
    // status only reads: the run is still marked running until a run takes the lock.
    expect(query(ws, 'SELECT status, credits_spent AS spent FROM runs')).toEqual([{ status: 'running', spent: null }]);

    // The resume too: it takes over the dead process's lock and closes its books, what it writes is checked.
    const resumed = await inProcess(['run', file, '--db', ws.db, '--json'], env, { cwd: ws.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/closed runs whose process ended without finishing them, as abandoned.*runs=1/);
    const summary = JSON.parse(resumed.stdout) as { jobs: Array<{ fresh: number; worked: number }> };
    expect(summary.jobs[0]!.fresh).toBe(doneAtKill);
    const [closed] = query(ws, `SELECT status, ended_at AS endedAt, calls, tasks_total AS total, tasks_done AS done,
      tasks_not_found AS notFound, tasks_failed AS failed, tasks_deferred AS deferred, credits_spent AS spent,
      credits_at_end AS atEnd, exit_code AS exitCode, error FROM runs WHERE id = 1`);
    expect(closed).toEqual({
      status: 'abandoned',
      endedAt: lastCallAt,
      calls,
      total: TASKS,
      done: doneAtKill,
      notFound: 0,
      failed: 0,
      deferred: TASKS - doneAtKill,
      spent: charged,
      atEnd: 100_000 - charged,
      exitCode: null,
      error: 'the process ended without finishing the run',
    });

    expect(taskStatuses(ws, 'posts')).toEqual({ done: TASKS });
    // No duplicate rows anywhere: each table holds one row per key and exactly what the tasks asked for.
    expect(count(ws, 'SELECT count(*) FROM posts')).toBe(TASKS);
    expect(count(ws, 'SELECT count(DISTINCT post_id) FROM posts')).toBe(TASKS);
    expect(count(ws, 'SELECT count(DISTINCT url) FROM posts')).toBe(TASKS);
    expect(count(ws, 'SELECT count(*) FROM post_media')).toBe(count(ws, 'SELECT count(*) FROM (SELECT DISTINCT post_id, position FROM post_media)'));
    expect(count(ws, 'SELECT count(*) FROM tasks')).toBe(TASKS);
    expect(count(ws, 'SELECT count(DISTINCT task_id) FROM raw_responses')).toBe(TASKS);

    // Paid for twice: only calls that were on the wire when the process died.
    const chargedPerTask = chargedPerUrl(sandbox);
    expect(chargedPerTask.size).toBe(TASKS);
    const paidTwice = [...chargedPerTask.values()].filter((n) => n > 1).length;
    expect([...chargedPerTask.values()].every((n) => n <= 2)).toBe(true);
    expect(paidTwice).toBeLessThanOrEqual(CONCURRENCY);
    expect(sandbox.requests.filter((r) => r.charged > 0).length).toBeLessThanOrEqual(TASKS + CONCURRENCY);

    // The killed run's books are closed by the next one; the lock it left was taken over and released.
    expect(query<{ status: string }>(ws, 'SELECT status FROM runs ORDER BY id').map((r) => r.status)).toEqual(['abandoned', 'completed']);
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
    const after = await inProcess(['status', '--db', ws.db, '--json'], {}, { cwd: ws.dir });
    const total = count(ws, 'SELECT sum(credits_spent) FROM runs');
    expect(JSON.parse(after.stdout)).toMatchObject({ lock: null, unfinishedRuns: [], creditsSpentAllRuns: total });
    expect(total).toBeGreaterThan(charged);
  });
});

// A SIGKILL on PostgreSQL is test/pg/pg-run-workers.test.ts's (a worker killed, then the CLI resumes).
forEachEngine('SIGINT', (engine) => {
  it('exits 130 after writing the calls in flight; the rest is deferred and the next run resumes it', async () => {
    const TASKS = 60;
    const { sandbox, ws, file } = await setUp([50, 100], TASKS);
    const db = await engine.open(ws.dir);
    const child = spawnCli(['run', file, '--db', db.locator], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    await waitFor(() => operationRequests(sandbox).length >= 10 || child.child.exitCode !== null, 20_000, 'calls of the run');
    child.child.kill('SIGINT');
    const interrupted = await child.done;
    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(interrupted.stdout).toMatch(/interrupted/);

    // Every answer the sandbox charged for is stored: the calls in flight were finished and written.
    const charged = chargedPerUrl(sandbox);
    const done = await db.count(`SELECT count(*) FROM tasks WHERE status = 'done'`);
    expect(charged.size).toBeGreaterThan(0);
    expect(done).toBe(charged.size);
    expect(await db.count('SELECT count(*) FROM raw_responses')).toBe(charged.size);
    expect(await db.taskStatuses('posts')).toEqual({ done, deferred: TASKS - done });
    expect(await db.rows('SELECT status, tasks_deferred AS deferred FROM runs')).toEqual([{ status: 'interrupted', deferred: TASKS - done }]);
    // Nothing held: SQLite's run lock is released; PostgreSQL's task leases are given back, not left to run out.
    expect(await db.count(engine.name === 'sqlite' ? 'SELECT count(*) FROM run_lock' : 'SELECT count(*) FROM worker_task_leases')).toBe(0);

    const next = await run(ws, sandbox, TOKEN, await ws.load(file), { dbPath: db.locator });
    expect(next.status).toBe('completed');
    expect(next.jobs[0]).toMatchObject({ fresh: done, worked: TASKS - done });
    // Alone in its night (the interrupted run had ended): no share of its own to tell apart, its summary as before.
    expect(next.jobs[0]).not.toHaveProperty('thisWorker');
    expect(await db.taskStatuses('posts')).toEqual({ done: TASKS });
    const all = chargedPerUrl(sandbox);
    expect(all.size).toBe(TASKS);
    expect([...all.values()].every((n) => n === 1)).toBe(true);
  });
});
