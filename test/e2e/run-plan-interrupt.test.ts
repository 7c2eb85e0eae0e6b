/**
 * SIGINT while a run is still reading a large input into the task ledger, before its first call: the run
 * stops within a moment, not once the whole file is read, with whole batches in the ledger, no call made, its
 * books closed as interrupted, and the invalid rows of the lines it did not read still on record. The next run
 * reads the input again and plans and calls each input once.
 */
import { describe, expect, it } from 'vitest';
import BetterSqlite3 from 'better-sqlite3';
import { PLAN_DEFAULTS } from '../../src/runner/plan-into-ledger.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';
import { FAST_RETRY, cliEnv, count, csv, lookupKey, inProcess, mostlyInvalidLeads, postUrls, query, spawnCli, taskStatuses, useWorkspaces, waitWhileRunning, type Workspace, operationRequests } from '../support/run-helpers.ts';

const TOKEN = 'plan-interrupt-token-3c9e';
/**
 * Eight batches of the ledger: the SIGINT, sent once the first is committed, lands with most of the file unread
 * (150,000 rows were 10 s of the suite's CPU, read three times; 60,000 still a third more than these). Most are
 * invalid, so that the next run's calls are few.
 */
const ROWS = 40_000;
/** One row in this many is a company page (a task); the others are profile pages (invalid rows). */
const VALID_EVERY = 500;
const VALID = ROWS / VALID_EVERY;
const LATER_POSTS = 5;
/**
 * Only a bound for a hang: the test reads the input three times (two stopped part way) and its checks are about
 * rows, not time, so a loaded machine (CI's two cores shared by parallel test files) only makes it slower.
 */
const HANG_MS = 300_000;

const sandboxes = useSandboxes();
const workspaces = useWorkspaces();

/** The large job, then a small one that a run stopped during the first must not start reading. */
async function jobs(ws: Workspace): Promise<[string, string]> {
  await ws.write('leads.csv', mostlyInvalidLeads(ROWS, VALID_EVERY));
  await ws.write('posts.csv', csv(['post_url'], postUrls(LATER_POSTS).map((u) => [u])));
  const rate = { requestsPerMinute: 600_000, concurrency: 8 };
  return [
    await ws.job('big-leads', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, rate, retry: FAST_RETRY }),
    await ws.job('later-posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate, retry: FAST_RETRY }),
  ];
}

/** Whether run `runId` has committed a batch of its read (false while the database or its tables do not exist). */
function readStarted(ws: Workspace, runId: number): boolean {
  try {
    return count(ws, 'SELECT EXISTS (SELECT 1 FROM invalid_inputs WHERE run_id = ?)', runId) === 1;
  } catch {
    return false;
  }
}

/** Starts `netingest <args>` as run `runId` and sends SIGINT once its first batch is in the ledger. */
async function interruptPlanning(ws: Workspace, env: Record<string, string>, args: string[], runId: number) {
  const cli = spawnCli(args, { cwd: ws.dir, env });
  await waitWhileRunning(cli, () => readStarted(ws, runId), 'the first batch in the ledger');
  cli.child.kill('SIGINT');
  return cli.done;
}

function integrity(ws: Workspace): string {
  const db = new BetterSqlite3(ws.db, { readonly: true, fileMustExist: true });
  try {
    return db.pragma('integrity_check', { simple: true }) as string;
  } finally {
    db.close();
  }
}

describe('SIGINT while the input is read into the ledger', () => {
  it('exits 130 at once with whole batches and no call; the next run plans the rest and calls each input once', { timeout: HANG_MS }, async () => {
    const sandbox = await sandboxes({ tokens: { [TOKEN]: 100_000 } });
    const ws = await workspaces();
    const files = await jobs(ws);
    const env = cliEnv(sandbox, TOKEN);

    const stopped = await interruptPlanning(ws, env, ['run', ...files, '--db', ws.db, '--json'], 1);
    expect(stopped.code, stopped.stderr).toBe(130);
    expect(sandbox.requests).toHaveLength(0);
    expect(integrity(ws)).toBe('ok');
    // Whole batches of the first rows only: the read stopped part way, and no transaction was cut.
    const tasks = count(ws, 'SELECT count(*) FROM tasks');
    const read = tasks + count(ws, 'SELECT count(*) FROM invalid_inputs');
    expect(read % PLAN_DEFAULTS.batchRows).toBe(0);
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(ROWS);
    expect(tasks).toBe(read / VALID_EVERY);
    // Line 1 is the header: the rows read are lines 2 to read + 1.
    expect(count(ws, 'SELECT max(line) FROM invalid_inputs')).toBe(read + 1);
    expect(taskStatuses(ws, 'big-leads')).toEqual({ deferred: tasks });
    expect(count(ws, `SELECT count(*) FROM tasks WHERE job = 'later-posts'`)).toBe(0);
    expect(query(ws, 'SELECT status, ended_at IS NOT NULL AS ended, exit_code AS exitCode, calls, tasks_total AS total, tasks_deferred AS deferred FROM runs')).toEqual([
      { status: 'interrupted', ended: 1, exitCode: 130, calls: 0, total: tasks, deferred: tasks },
    ]);
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
    const summary = JSON.parse(stopped.stdout);
    expect(summary).toMatchObject({ status: 'interrupted', calls: 0, stop: { reason: 'interrupted' } });
    expect(summary.jobs.map((j: { name: string; status: string; planned: number; deferred: number }) => [j.name, j.status, j.planned, j.deferred])).toEqual([
      ['big-leads', 'not_reached', tasks, tasks],
      ['later-posts', 'not_reached', 0, 0],
    ]);
    expect(stopped.stderr).toMatch(/WARN {2}job stopped while reading its input/);

    // The run between the two interrupted ones is the CLI's code in this process: what it plans and calls is
    // checked, not its process.
    const resumed = await inProcess(['run', ...files, '--db', ws.db, '--json'], env, { cwd: ws.dir });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(taskStatuses(ws, 'big-leads')).toEqual({ done: VALID });
    expect(taskStatuses(ws, 'later-posts')).toEqual({ done: LATER_POSTS });
    expect(count(ws, `SELECT count(DISTINCT input_key) FROM tasks WHERE job = 'big-leads'`)).toBe(VALID);
    expect(count(ws, 'SELECT count(*) FROM invalid_inputs')).toBe(ROWS - VALID);
    const lookups = operationRequests(sandbox).map(lookupKey);
    expect(lookups).toHaveLength(VALID + LATER_POSTS);
    expect(new Set(lookups).size).toBe(lookups.length);

    // Stopped again part way through a read: the invalid rows of the lines it did not reach stay on record.
    const again = await interruptPlanning(ws, env, ['run', ...files, '--db', ws.db], 3);
    expect(again.code, again.stderr).toBe(130);
    // What it read was done by the run before and is still fresh: nothing of it is deferred.
    expect(again.stdout).toMatch(/^Run 3: interrupted/);
    expect(again.stdout).toMatch(/^ {2}big-leads \(similar-companies\): stopped while reading its input \(\d+ tasks planned so far, 0 deferred\): no call made; the next run reads it again and does it$/m);
    expect(again.stdout).toMatch(/^ {2}later-posts \(post-details\): not reached/m);
    expect(operationRequests(sandbox)).toHaveLength(VALID + LATER_POSTS);
    expect(count(ws, 'SELECT count(*) FROM invalid_inputs')).toBe(ROWS - VALID);
    expect(count(ws, `SELECT count(*) FROM invalid_inputs WHERE run_id = 3`)).toBeLessThan(ROWS - VALID);
    expect(integrity(ws)).toBe('ok');
  });
});
