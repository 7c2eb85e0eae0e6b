import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptionsInput } from '../../src/sandbox/server.ts';
import { runJobs, type RunSummary } from '../../src/runner/run-jobs.ts';
import { loadJob } from '../../src/jobs/load.ts';
import type { Job } from '../../src/jobs/schema.ts';
import { CLIENT_DEFAULTS } from '../../src/api/client.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { runCli } from '../soak/cli-process.ts';
import { apiEnv, opsWorkspace, STACK_LINE, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';

const TOKEN = 'ops-garbage-token-0001';
let ws: OpsWorkspace;
let sandbox: Sandbox | null = null;
const startFake = useFakeServices();

beforeEach(async () => {
  ws = await opsWorkspace({ posts: POSTS, companies: 2, retries: 1 });
});

afterEach(async () => {
  await sandbox?.stop();
  sandbox = null;
  ws.cleanup();
});

async function runAgainst(options: SandboxOptionsInput, db: string, retry: Partial<Job['retry']> = {}): Promise<RunSummary> {
  sandbox = await startSandbox({ tokens: { [TOKEN]: 1_000_000 }, ...options });
  const loaded = await loadJob(ws.postsJob, { cwd: ws.dir });
  const job = { ...loaded, retry: { ...loaded.retry, ...retry } };
  // An HTML page on every call looks like the API down and would stop the run after a few tasks (see
  // test/pg/run-outage.test.ts); here every task must show how such an answer is recorded.
  // Likewise every answer of the wrong shape would stop it after max(5, concurrency) (test/e2e/run-live-answers.test.ts).
  return runJobs({ dbPath: join(ws.dir, db), jobs: [job], api: { baseUrl: sandbox.url, token: TOKEN }, outageMinTasks: 100, unusableMinAnswers: 100 });
}

/** Posts of the workspace's job, all of them unless a test keeps fewer. */
const POSTS = 8;
/**
 * The bodies over the size limit are megabytes each (the client's limit is 8 MiB): three tasks show how every
 * one is recorded as well as eight, for less than half the bytes sent, read and archived.
 */
const HUGE_TASKS = 3;

/** Keeps the first `n` rows of the posts job's CSV. */
function keepPosts(n: number): void {
  const file = join(ws.dir, 'posts.csv');
  const lines = readFileSync(file, 'utf8').split('\n');
  writeFileSync(file, `${lines.slice(0, n + 1).join('\n')}\n`);
}

interface TaskRow {
  status: string;
  retryable: number | null;
  attempts: number;
  code: string | null;
  error: string | null;
}

function read<T>(db: string, sql: string): T[] {
  const sqlite = new BetterSqlite3(join(ws.dir, db), { readonly: true });
  try {
    return sqlite.prepare(sql).all() as T[];
  } finally {
    sqlite.close();
  }
}

const tasksOf = (db: string) =>
  read<TaskRow>(db, `SELECT status, retryable, attempts, last_error_code AS code, last_error AS error FROM tasks ORDER BY id`);
const countOf = (db: string, table: string) => read<{ n: number }>(db, `SELECT count(*) AS n FROM ${table}`)[0]!.n;

describe('garbage from the API is recorded against the task and never crashes the run', () => {
  const cases = [
    // A proxy's HTML error page with status 200: not JSON, possibly transient, so retried, then failed (retryable).
    { fault: 'htmlRate', code: 'INVALID_JSON', excerpt: /<!DOCTYPE html>.*Something went wrong/i, retryable: 1, attempts: 2, archived: 0 },
    // Valid JSON of the wrong shape: deterministic, so not retried (a retry would only pay again). Paid for, so
    // its body is archived, marked as not an answer (test/pg/ops-garbage-archive.test.ts).
    { fault: 'wrongShapeRate', code: 'SCHEMA', excerpt: /"status":"ok"/, retryable: 0, attempts: 1, archived: POSTS },
    // A body over the size limit (9 MiB, announced by Content-Length): paid, not retried, not stored as an
    // answer; within the kept bound, so its body is archived for reprocess (test/pg/run-oversize-kept.test.ts).
    { fault: 'hugeRate', code: 'BODY_TOO_LARGE', excerpt: /{"success":true/, retryable: 0, attempts: 1, archived: HUGE_TASKS, tasks: HUGE_TASKS },
  ] as const;

  for (const c of cases) {
    it(`${c.fault}: every task failed with ${c.code} and a body excerpt; no row stored as an answer`, async () => {
      const tasks = 'tasks' in c ? c.tasks : POSTS;
      keepPosts(tasks);
      const options: SandboxOptionsInput = { [c.fault]: 1, hugeBytes: CLIENT_DEFAULTS.maxBodyBytes + 1024 * 1024 };
      const summary = await runAgainst(options, 'garbage.db');
      expect(summary.status).toBe('completed_with_failures');
      expect(summary.jobs[0]).toMatchObject({ planned: tasks, failed: tasks, done: 0 });
      for (const task of tasksOf('garbage.db')) {
        expect(task).toMatchObject({ status: 'failed', code: c.code, retryable: c.retryable, attempts: c.attempts });
        expect(task.error).toMatch(c.excerpt);
        expect(task.error!.length).toBeLessThanOrEqual(1000);
      }
      expect(countOf('garbage.db', 'posts')).toBe(0);
      expect(countOf('garbage.db', 'raw_responses WHERE error_code IS NULL')).toBe(0);
      expect(countOf('garbage.db', `raw_responses WHERE error_code = '${c.code}'`)).toBe(c.archived);
      // Every failed attempt is in the call log with its code.
      const calls = read<{ code: string | null; n: number }>('garbage.db', `SELECT error_code AS code, count(*) AS n FROM api_calls GROUP BY 1`);
      expect(calls).toEqual([{ code: c.code, n: tasks * c.attempts }]);
    }, 60_000);
  }

  // A 200 came back, so the call was most likely charged: a fault that repeats must not be paid `retries` times.
  it.each([
    { fault: 'htmlRate', paidRetries: 1, attempts: 2, code: 'INVALID_JSON' },
    { fault: 'htmlRate', paidRetries: 0, attempts: 1, code: 'INVALID_JSON' },
    // The allowance is for paid answers only: a 5xx still uses every retry.
    { fault: 'serverErrorRate', paidRetries: 0, attempts: 5, code: 'SERVER_ERROR' },
  ] as const)('$fault with retries 4 and paidRetries $paidRetries: $attempts attempts, then failed and left for the next run', async (c) => {
    const summary = await runAgainst({ [c.fault]: 1 }, 'paid.db', { retries: 4, paidRetries: c.paidRetries });
    expect(summary.jobs[0]).toMatchObject({ planned: POSTS, failed: POSTS, done: 0 });
    for (const task of tasksOf('paid.db')) {
      expect(task).toMatchObject({ status: 'failed', code: c.code, retryable: 1, attempts: c.attempts });
    }
    expect(countOf('paid.db', 'api_calls')).toBe(POSTS * c.attempts);
  }, 60_000);

  it('bodies over the limit are refused even when the server sends no length', async () => {
    // The cases above send Content-Length (refused before reading); here a chunked 64 MiB body must be cut.
    const sentPerRequest: number[] = [];
    const baseUrl = await startFake((_req, res) => {
      const i = sentPerRequest.push(0) - 1;
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => {
        while (sentPerRequest[i]! < 64 * 1024 * 1024) {
          sentPerRequest[i]! += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end('"}');
      };
      res.on('error', () => undefined);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"success":true,"padding":"');
      pump();
    });
    keepPosts(HUGE_TASKS);
    const job = await loadJob(ws.postsJob, { cwd: ws.dir });
    // Every task must show how such an answer is recorded: the unusable-answer stop is the next test's.
    const summary = await runJobs({ dbPath: join(ws.dir, 'chunked.db'), jobs: [job], api: { baseUrl, token: TOKEN }, unusableMinAnswers: 100 });
    expect(summary.status).toBe('completed_with_failures');
    const tasks = tasksOf('chunked.db');
    expect(tasks.map((t) => t.code)).toEqual(Array(HUGE_TASKS).fill('BODY_TOO_LARGE'));
    for (const t of tasks) expect(t.error).toMatch(/body: {"success":true,"padding":"x+/);
    // Reading stopped at the kept bound (plus what the socket buffers held), far from the 64 MiB on offer, and
    // nothing of it kept.
    expect(Math.max(...sentPerRequest)).toBeLessThan(CLIENT_DEFAULTS.maxKeptBodyBytes + CLIENT_DEFAULTS.maxBodyBytes);
    expect(countOf('chunked.db', 'raw_responses')).toBe(0);
  }, 60_000);

  it('paid answers over the size limit, one after another, stop the run as unusable (exit 6) instead of paying for every task', async () => {
    let calls = 0;
    const baseUrl = await startFake((req, res) => {
      if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
      calls += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"success":true,"padding":"${'x'.repeat(CLIENT_DEFAULTS.maxBodyBytes)}"}`);
    });
    const loaded = await loadJob(ws.postsJob, { cwd: ws.dir });
    const job = { ...loaded, rate: { ...loaded.rate, concurrency: 1 }, retry: { ...loaded.retry, maxUnusableAnswers: 3 } };
    const summary = await runJobs({ dbPath: join(ws.dir, 'oversize.db'), jobs: [job], api: { baseUrl, token: TOKEN } });
    expect(summary.stop?.reason).toBe('unusable');
    expect(summary.status).toBe('stopped_unusable');
    expect(calls).toBe(3);
    expect(tasksOf('oversize.db').filter((t) => t.code === 'BODY_TOO_LARGE')).toHaveLength(3);
  }, 60_000);

  it('a paid body of the wrong shape still counts: its credit counters reach the call log and the run\'s spend', async () => {
    // A service whose answers changed shape but still carry (and charge) the counters, one credit a call.
    let used = 0;
    const baseUrl = await startFake((req, res) => {
      // No free balance check here: the calls counted are the lookups.
      if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
      used += 1;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', item: {}, total_credits: 100, credits_used: used, credits_remaining: 100 - used }));
    });
    const job = await loadJob(ws.postsJob, { cwd: ws.dir });
    const summary = await runJobs({ dbPath: join(ws.dir, 'shape.db'), jobs: [job], api: { baseUrl, token: TOKEN }, unusableMinAnswers: 100 });
    expect(summary.jobs[0]).toMatchObject({ failed: 8 });
    expect(summary.creditsRemaining).toBe(100 - used);
    const calls = read<{ code: string; remaining: number | null }>('shape.db', `SELECT error_code AS code, credits_remaining AS remaining FROM api_calls ORDER BY id`);
    expect(calls).toHaveLength(used);
    expect(calls.every((c) => c.code === 'SCHEMA' && c.remaining !== null)).toBe(true);
  }, 60_000);

  it('mixed with good answers through the CLI: good rows stored, garbage recorded, exit 5, no stack trace', async () => {
    sandbox = await startSandbox({ tokens: { [TOKEN]: 1_000_000 }, htmlRate: 0.15, wrongShapeRate: 0.15, hugeRate: 0.1, hugeBytes: 9 * 1024 * 1024, seed: 3 });
    const result = await runCli(['run', ws.postsJob, ws.lookalikesJob, '--db', 'mixed.db'], { cwd: ws.dir, env: apiEnv(sandbox.url, TOKEN) });
    expect([EXIT.ok, EXIT.failedItems]).toContain(result.code);
    expect(result.stdout + result.stderr).not.toMatch(STACK_LINE);
    const tasks = tasksOf('mixed.db');
    const failed = tasks.filter((t) => t.status === 'failed');
    const done = tasks.filter((t) => t.status === 'done');
    expect(done.length).toBeGreaterThan(0);
    expect(result.code).toBe(failed.length > 0 ? EXIT.failedItems : EXIT.ok);
    for (const t of failed) {
      expect(['INVALID_JSON', 'SCHEMA', 'BODY_TOO_LARGE']).toContain(t.code);
      expect(t.error).toMatch(/body: /);
    }
    // Every done task has its answer; no failed task left an answer behind, only the wrong-shape bodies it paid for.
    expect(countOf('mixed.db', 'raw_responses WHERE error_code IS NULL')).toBe(done.length);
    expect(countOf('mixed.db', "raw_responses WHERE error_code = 'SCHEMA'")).toBe(failed.filter((t) => t.code === 'SCHEMA').length);
  }, 60_000);
});
