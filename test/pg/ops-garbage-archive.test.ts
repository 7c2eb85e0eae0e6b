/**
 * A 200 of the wrong shape is paid for: its body is archived in raw_responses (marked by error_code, never an
 * answer) in the transaction that fails its task and logs its call, and `netingest reprocess` reports it while
 * it still does not validate, and recovers it (rows written, task done, no call) once it does.
 */
import { join, resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { runJobs, type RunSummary } from '../../src/runner/run-jobs.ts';
import { reprocess } from '../support/store-helpers.ts';
import { openDatabase } from '../../src/store/open.ts';
import { registerRawBodyFunction } from '../../src/store/raw-body.ts';
import { loadJob } from '../../src/jobs/load.ts';
import { REDACTED } from '../../src/api/redact.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { runCli } from '../soak/cli-process.ts';
import { apiEnv, opsWorkspace, STACK_LINE, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { postResponse } from '../support/db-fixtures.ts';
import { inProcess } from '../support/run-helpers.ts';
import { forEachEngine } from './engines.ts';

const TOKEN = 'ops-archive-token-0001';
const POSTS = 8;
let ws: OpsWorkspace;
const startFake = useFakeServices();
/** The exact body sent for each post URL asked. */
let sent: Map<string, string>;

beforeEach(async () => {
  ws = await opsWorkspace({ posts: POSTS, retries: 1 });
  sent = new Map();
});

afterEach(() => {
  ws.cleanup();
});

/**
 * A service whose post answers changed shape (the post moved under `data`, where no contract looks for it: a
 * member of another type such as reactions "1.2K" is only drift now, read as NULL), still charging a credit a
 * call, and echoing the token in a note (as a misbehaving proxy might): the token must never be stored.
 */
async function startDriftedService(): Promise<string> {
  let used = 0;
  return startFake((req, res) => {
    // No free balance check here: the calls counted are the lookups.
    if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
    used += 1;
    const url = new URL(req.url ?? '/', 'http://x').searchParams.get('url') ?? '';
    const { total_credits: _t, credits_used: _u, credits_remaining: _r, ...post } = postResponse({ engagement: { reactions: 1200, comments_count: 7 } });
    const body = JSON.stringify({
      data: post,
      note: `served for ${TOKEN}`,
      total_credits: 100,
      credits_used: used,
      credits_remaining: 100 - used,
    });
    sent.set(url, body);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
}

/** Runs the posts job into `db`: a file name in the workspace, or a dataset's locator. */
async function runPosts(baseUrl: string, db: string): Promise<RunSummary> {
  const job = await loadJob(ws.postsJob, { cwd: ws.dir });
  const dbPath = /^postgres(ql)?:\/\//.test(db) ? db : resolve(ws.dir, db);
  // Every answer unusable would stop the run after max(5, concurrency) (test/e2e/run-live-answers.test.ts): here every task must show how one is kept.
  return runJobs({ dbPath, jobs: [job], api: { baseUrl, token: TOKEN }, unusableMinAnswers: 100 });
}

function read<T>(db: string, sql: string, ...params: unknown[]): T[] {
  const sqlite = new BetterSqlite3(join(ws.dir, db), { readonly: true });
  registerRawBodyFunction(sqlite);
  try {
    return sqlite.prepare(sql).all(...params) as T[];
  } finally {
    sqlite.close();
  }
}

interface RawRow {
  id: number;
  operation: string;
  request_key: string;
  request_json: string;
  body: string;
  received_at: string;
  run_id: number;
  task_id: number;
  error_code: string | null;
}

interface TaskRow {
  id: number;
  input_key: string;
  status: string;
  retryable: number | null;
  last_error_code: string | null;
  completed_at: string | null;
}

const RAWS_SQL = 'SELECT id, operation, request_key, request_json, raw_body(body, body_encoding) AS body, received_at, run_id, task_id, error_code FROM raw_responses ORDER BY id';
const TASKS_SQL = 'SELECT id, input_key, status, retryable, last_error_code, completed_at FROM tasks ORDER BY id';
const raws = (db: string) => read<RawRow>(db, RAWS_SQL);
const tasks = (db: string) => read<TaskRow>(db, TASKS_SQL);

// The archive is written by each engine's outcome writer: checked on both, and that a next run does not pay again.
forEachEngine('a paid 200 of the wrong shape, archived', (engine) => {
  it('is archived with its request, time, run and task, in the transaction that fails the task and logs the call', async () => {
    const drift = await engine.open(ws.dir, 'drift.db');
    const service = await startDriftedService();
    const summary = await runPosts(service, drift.locator);
    expect(summary.jobs[0]).toMatchObject({ planned: POSTS, failed: POSTS, done: 0 });

    const stored = await drift.rows<RawRow>(RAWS_SQL);
    const ledger = await drift.rows<TaskRow>(TASKS_SQL);
    expect(stored).toHaveLength(POSTS);
    expect(sent.size).toBe(POSTS);
    for (const raw of stored) {
      const task = ledger.find((t) => t.id === raw.task_id)!;
      expect(task).toMatchObject({ status: 'failed', retryable: 0, last_error_code: 'SCHEMA' });
      expect(raw).toMatchObject({ operation: 'post-details', request_key: task.input_key, run_id: summary.runId, error_code: 'SCHEMA' });
      expect(JSON.parse(raw.request_json)).toEqual({ operation: 'post-details', postUrl: task.input_key });
      expect(raw.received_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      // The exact body, but never the token.
      expect(raw.body).toBe(sent.get(task.input_key)!.split(TOKEN).join(REDACTED));
      expect(raw.body).not.toContain(TOKEN);
    }
    // One api_calls row per call (not one from the attempt and another from the failure), with its counters.
    const calls = await drift.rows<{ task_id: number; error_code: string; credits_remaining: number | null }>(
      'SELECT task_id, error_code, credits_remaining FROM api_calls ORDER BY id',
    );
    expect(calls).toHaveLength(POSTS);
    expect(new Set(calls.map((c) => c.task_id))).toEqual(new Set(stored.map((r) => r.task_id)));
    expect(calls.every((c) => c.error_code === 'SCHEMA' && c.credits_remaining !== null)).toBe(true);
    // Nothing was read as an answer.
    expect(await drift.count('SELECT count(*) AS n FROM posts')).toBe(0);

    // Paid once: the next run does not call them again (only --refresh or reprocess would take them up).
    const again = await runPosts(service, drift.locator);
    expect(again.calls).toBe(0);
    expect(again.jobs[0]).toMatchObject({ failedBefore: POSTS, failed: POSTS });
    expect(await drift.count('SELECT count(*) AS n FROM api_calls')).toBe(POSTS);
  }, 60_000);

  it('through the CLI: every answer unusable stops the run after 5 (exit 6), their bodies archived, no stack trace and no token in the output', async () => {
    const url = await startDriftedService();
    const cliDb = await engine.open(ws.dir, 'cli.db');
    const first = await runCli(['run', ws.postsJob, '--db', cliDb.locator], { cwd: ws.dir, env: apiEnv(url, TOKEN) });
    expect(first.code).toBe(EXIT.unusableAnswers);
    expect(first.stdout + first.stderr).not.toMatch(STACK_LINE);
    expect(first.stdout + first.stderr).not.toContain(TOKEN);
    // max(5, concurrency 4) in a row, and the calls that were in flight when the fifth came back.
    const archived = await cliDb.rows<RawRow>(RAWS_SQL);
    expect(archived.length).toBeGreaterThanOrEqual(5);
    expect(archived.length).toBeLessThan(5 + 4);
    expect(archived.every((r) => r.error_code === 'SCHEMA' && !r.body.includes(TOKEN))).toBe(true);
  }, 60_000);
});

describe('a paid 200 of the wrong shape', () => {
  it('reprocess reports the bodies that still do not validate, by id and request, and leaves their tasks failed', async () => {
    await runPosts(await startDriftedService(), 'still.db');
    const before = tasks('still.db');
    const database = openDatabase(join(ws.dir, 'still.db'));
    try {
      const report = await reprocess(database);
      expect(report).toMatchObject({ responses: POSTS, replayed: 0, invalid: POSTS, stillRejected: POSTS, recovered: 0, tasksRecovered: 0 });
      const stored = raws('still.db');
      expect(report.rejected.map((r) => r.id)).toEqual(stored.map((r) => r.id));
      for (const r of report.rejected) {
        const raw = stored.find((s) => s.id === r.id)!;
        expect(r).toMatchObject({ operation: 'post-details', requestKey: raw.request_key, taskId: raw.task_id, errorCode: 'SCHEMA' });
        expect(r.reason).toMatch(/^still does not match the API's documented interface \(its task stays failed\): .*\(root\): none of PostId, author, post, engagement is there/);
      }
    } finally {
      database.close();
    }
    expect(tasks('still.db')).toEqual(before);
    expect(raws('still.db').every((r) => r.error_code === 'SCHEMA')).toBe(true);
    expect(read<{ n: number }>('still.db', 'SELECT count(*) AS n FROM posts')[0]!.n).toBe(0);

    // The command says the same, naming the raw response, its request and task, without a stack trace.
    const cli = await runCli(['reprocess', '--db', 'still.db'], { cwd: ws.dir });
    // Bodies left out are paid data the user does not have: exit 5, as for failed items.
    expect(cli.code).toBe(EXIT.failedItems);
    expect(cli.stdout).toMatch(new RegExp(`${POSTS} bodies kept from wrong-shape answers still do not validate: their tasks stay failed`));
    const first = raws('still.db')[0]!;
    expect(cli.stderr).toContain(`raw response ${first.id} (post-details ${first.request_key}, task ${first.task_id}) skipped: still does not match the API's documented interface`);
    expect(cli.stdout + cli.stderr).not.toMatch(STACK_LINE);
    expect(tasks('still.db')).toEqual(before);
  }, 60_000);

  it('reprocess recovers a body that validates and normalizes now: rows written, task done, no call; others stay failed', async () => {
    await runPosts(await startDriftedService(), 'fix.db');
    const calls = read<{ n: number }>('fix.db', 'SELECT count(*) AS n FROM api_calls')[0]!.n;
    const [fixed, unnormalizable] = raws('fix.db');
    // A contract fix that reads the post under `data` cannot be made from a test; making the stored body one the
    // contract reads exercises the same path. The second body reads too but cannot be normalized (its time is unusable).
    const rw = new BetterSqlite3(join(ws.dir, 'fix.db'));
    registerRawBodyFunction(rw);
    try {
      const relax = `UPDATE raw_responses SET body = json_extract(raw_body(body, body_encoding), '$.data'), body_encoding = NULL WHERE id = ?`;
      rw.prepare(relax).run(fixed!.id);
      rw.prepare(relax).run(unnormalizable!.id);
      rw.prepare(`UPDATE raw_responses SET received_at = 'yesterday' WHERE id = ?`).run(unnormalizable!.id);
    } finally {
      rw.close();
    }
    // The commands' own code in this process: the spawned CLI's output is the case above.
    const statusBefore = await inProcess(['status', '--db', 'fix.db', '--json'], {}, { cwd: ws.dir });
    expect(JSON.parse(statusBefore.stdout)).toMatchObject({ wrongShapeBodiesKept: POSTS });
    const cli = await inProcess(['reprocess', '--db', 'fix.db', '--json'], {}, { cwd: ws.dir });
    expect(cli.code).toBe(EXIT.failedItems);
    const report = JSON.parse(cli.stdout) as Record<string, unknown> & { rejected: Array<{ id: number; reason: string }> };
    expect(report).toMatchObject({ responses: POSTS, replayed: 1, invalid: POSTS - 1, stillRejected: POSTS - 1, recovered: 1, tasksRecovered: 1 });
    expect(report.rejected.find((r) => r.id === unnormalizable!.id)?.reason).toMatch(/yesterday/);

    const after = tasks('fix.db');
    expect(after.find((t) => t.id === fixed!.task_id)).toMatchObject({ status: 'done', last_error_code: null, completed_at: fixed!.received_at });
    expect(after.find((t) => t.id === unnormalizable!.task_id)).toMatchObject({ status: 'failed', last_error_code: 'SCHEMA' });
    expect(after.filter((t) => t.status === 'failed')).toHaveLength(POSTS - 1);
    const rows = raws('fix.db');
    expect(rows.find((r) => r.id === fixed!.id)!.error_code).toBeNull();
    expect(rows.filter((r) => r.error_code === 'SCHEMA')).toHaveLength(POSTS - 1);
    expect(read<{ reactions: number }>('fix.db', 'SELECT reactions FROM posts')).toEqual([{ reactions: 1200 }]);
    expect(read<{ n: number }>('fix.db', 'SELECT count(*) AS n FROM api_calls')[0]!.n).toBe(calls);
    // status counts the bodies still kept, and says what recovers them.
    const status = await inProcess(['status', '--db', 'fix.db'], {}, { cwd: ws.dir });
    expect(status.code).toBe(EXIT.ok);
    expect(status.stdout).toContain(`Paid answers of the wrong shape kept, not used: ${POSTS - 1} (their tasks failed;`);
  }, 60_000);

  it('a recovered body does not settle a task whose latest outcome is a newer body', async () => {
    await runPosts(await startDriftedService(), 'newer.db');
    const first = raws('newer.db')[0]!;
    // The same task answered again later, wrong-shaped again: the newer body is its outcome, not the old one.
    const rw = new BetterSqlite3(join(ws.dir, 'newer.db'));
    registerRawBodyFunction(rw);
    try {
      rw.prepare(
        `INSERT INTO raw_responses (operation, request_key, request_json, body, body_encoding, received_at, run_id, task_id, error_code)
         SELECT operation, request_key, request_json, body, body_encoding, received_at, run_id, task_id, error_code FROM raw_responses WHERE id = ?`,
      ).run(first.id);
      rw.prepare(`UPDATE raw_responses SET body = json_extract(raw_body(body, body_encoding), '$.data'), body_encoding = NULL WHERE id = ?`).run(first.id);
    } finally {
      rw.close();
    }
    const database = openDatabase(join(ws.dir, 'newer.db'));
    try {
      expect(await reprocess(database)).toMatchObject({ recovered: 1, tasksRecovered: 0 });
    } finally {
      database.close();
    }
    expect(tasks('newer.db').find((t) => t.id === first.task_id)).toMatchObject({ status: 'failed', last_error_code: 'SCHEMA' });
  }, 60_000);
});
