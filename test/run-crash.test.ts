/**
 * A run that does not end by itself: killed with SIGKILL mid-way, or interrupted with SIGINT. The database
 * stays consistent, the next run resumes, and at most the calls that were in flight are paid for twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../src/sandbox/server.ts';
import { cliEnv, count, csv, makeWorkspace, postUrls, query, run, runCli, spawnCli, taskStatuses, waitFor, type Workspace } from './run-helpers.ts';

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

describe('SIGKILL mid-run', () => {
  it('leaves a consistent database; the next run resumes and repeats at most the calls in flight', async () => {
    const TASKS = 150;
    const { sandbox, ws, file } = await setUp([20, 60], TASKS);
    const env = cliEnv(sandbox, TOKEN);
    const victim = spawnCli(['run', file, '--db', ws.db], { cwd: ws.dir, env });
    await waitFor(() => sandbox.requests.length >= 50 || victim.child.exitCode !== null, 20_000, 'calls of the first run');
    victim.child.kill('SIGKILL');
    const killed = await victim.done;
    expect(killed.signal).toBe('SIGKILL');
    const beforeResume = sandbox.requests.length;
    expect(beforeResume).toBeLessThan(TASKS);
    const doneAtKill = count(ws, `SELECT count(*) FROM tasks WHERE status = 'done'`);
    expect(doneAtKill).toBeGreaterThan(0);
    // Whatever the kill cut off, each done task has its whole answer: raw body, api_calls row, post row.
    expect(count(ws, `SELECT count(*) FROM tasks t WHERE t.status = 'done' AND NOT EXISTS (SELECT 1 FROM raw_responses r WHERE r.task_id = t.id)`)).toBe(0);
    expect(count(ws, 'SELECT count(*) FROM posts')).toBe(doneAtKill);

    const resumed = await runCli(['run', file, '--db', ws.db, '--json'], { cwd: ws.dir, env });
    expect(resumed.code, resumed.stderr).toBe(0);
    const summary = JSON.parse(resumed.stdout) as { jobs: Array<{ fresh: number; worked: number }> };
    expect(summary.jobs[0]!.fresh).toBe(doneAtKill);

    expect(taskStatuses(ws, 'posts')).toEqual({ done: TASKS });
    // No duplicate rows anywhere: each table holds one row per key and exactly what the tasks asked for.
    expect(count(ws, 'SELECT count(*) FROM posts')).toBe(TASKS);
    expect(count(ws, 'SELECT count(DISTINCT post_id) FROM posts')).toBe(TASKS);
    expect(count(ws, 'SELECT count(DISTINCT url) FROM posts')).toBe(TASKS);
    expect(count(ws, 'SELECT count(*) FROM post_media')).toBe(count(ws, 'SELECT count(*) FROM (SELECT DISTINCT post_id, position FROM post_media)'));
    expect(count(ws, 'SELECT count(*) FROM tasks')).toBe(TASKS);
    expect(count(ws, 'SELECT count(DISTINCT task_id) FROM raw_responses')).toBe(TASKS);

    // Paid for twice: only calls that were on the wire when the process died.
    const charged = chargedPerUrl(sandbox);
    expect(charged.size).toBe(TASKS);
    const paidTwice = [...charged.values()].filter((n) => n > 1).length;
    expect([...charged.values()].every((n) => n <= 2)).toBe(true);
    expect(paidTwice).toBeLessThanOrEqual(CONCURRENCY);
    expect(sandbox.requests.filter((r) => r.charged > 0).length).toBeLessThanOrEqual(TASKS + CONCURRENCY);

    // The killed run's books are closed by the next one; the lock it left was taken over and released.
    const runs = query<{ status: string }>(ws, 'SELECT status FROM runs ORDER BY id');
    expect(runs.map((r) => r.status)).toEqual(['interrupted', 'completed']);
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
  });
});

describe('SIGINT', () => {
  it('exits 130 after writing the calls in flight; the rest is deferred and the next run resumes it', async () => {
    const TASKS = 60;
    const { sandbox, ws, file } = await setUp([50, 100], TASKS);
    const child = spawnCli(['run', file, '--db', ws.db], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    await waitFor(() => sandbox.requests.length >= 10 || child.child.exitCode !== null, 20_000, 'calls of the run');
    child.child.kill('SIGINT');
    const interrupted = await child.done;
    expect(interrupted.code, interrupted.stderr).toBe(130);
    expect(interrupted.stdout).toMatch(/interrupted/);

    // Every answer the sandbox charged for is stored: the calls in flight were finished and written.
    const charged = chargedPerUrl(sandbox);
    const done = count(ws, `SELECT count(*) FROM tasks WHERE status = 'done'`);
    expect(charged.size).toBeGreaterThan(0);
    expect(done).toBe(charged.size);
    expect(count(ws, 'SELECT count(*) FROM raw_responses')).toBe(charged.size);
    expect(taskStatuses(ws, 'posts')).toEqual({ done, deferred: TASKS - done });
    expect(query(ws, 'SELECT status, tasks_deferred AS deferred FROM runs')).toEqual([{ status: 'interrupted', deferred: TASKS - done }]);
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);

    const next = await run(ws, sandbox, TOKEN, await ws.load(file));
    expect(next.status).toBe('completed');
    expect(next.jobs[0]).toMatchObject({ fresh: done, worked: TASKS - done });
    expect(taskStatuses(ws, 'posts')).toEqual({ done: TASKS });
    const all = chargedPerUrl(sandbox);
    expect(all.size).toBe(TASKS);
    expect([...all.values()].every((n) => n === 1)).toBe(true);
  });
});
