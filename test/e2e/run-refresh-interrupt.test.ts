/**
 * SIGINT while a --refresh run that stopped on credits reads the input of a job it did not reach, to defer that
 * job's refresh: the read stops within a moment, not once the whole file is read, with whole batches in the
 * ledger and no refresh reopened, the jobs after it are not read, and the run exits 130 as after any interrupt.
 */
import { describe, expect, it } from 'vitest';
import { PLAN_DEFAULTS } from '../../src/runner/plan-into-ledger.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';
import { FAST_RATE, FAST_RETRY, cliEnv, count, csv, mostlyInvalidLeads, postUrls, query, spawnCli, taskStatuses, useWorkspaces, waitFor, operationRequests } from '../support/run-helpers.ts';

const TOKEN = 'refresh-interrupt-token-8d21';
/** Enough rows that reading them takes seconds here; most are invalid, so that the tasks written stay few. */
const ROWS = 150_000;
const VALID_EVERY = 500;
/** Catches a stop that waits for the whole read; generous, because CI runs test files in parallel on two cores. */
const PROMPT_EXIT_MS = 5000;

const sandboxes = useSandboxes();
const workspaces = useWorkspaces();

describe('SIGINT while a stopped --refresh run defers the refresh of a job it did not reach', () => {
  it('stops the read at once, keeps whole batches, reads no later job and exits 130', async () => {
    // 5 credits and a reserve of 3: the first job's third call would go below it, so the run stops on credits.
    const sandbox = await sandboxes({ tokens: { [TOKEN]: 5 }, costs: { 'post-details': 1 } });
    const ws = await workspaces();
    await ws.write('posts.csv', csv(['post_url'], postUrls(20).map((u) => [u])));
    await ws.write('leads.csv', mostlyInvalidLeads(ROWS, VALID_EVERY));
    await ws.write('later.csv', csv(['post_url'], postUrls(3, 50).map((u) => [u])));
    const common = { rate: FAST_RATE, retry: FAST_RETRY };
    const files = [
      await ws.job('first', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, credits: { reserve: 3 }, ...common }),
      await ws.job('big-leads', { operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' }, ...common }),
      await ws.job('later', { operation: 'post-details', input: { csv: 'later.csv', column: 'post_url' }, ...common }),
    ];

    const cli = spawnCli(['run', ...files, '--db', ws.db, '--refresh', '--json'], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    const readStarted = () => {
      try {
        return count(ws, `SELECT EXISTS (SELECT 1 FROM invalid_inputs WHERE job = 'big-leads')`) === 1;
      } catch {
        return false; // the database or its tables do not exist yet
      }
    };
    await waitFor(() => readStarted() || cli.child.exitCode !== null, 20_000, 'the first batch of big-leads in the ledger');
    const signalledAt = performance.now();
    cli.child.kill('SIGINT');
    const stopped = await cli.done;
    const exitMs = performance.now() - signalledAt;

    expect(stopped.code, stopped.stderr).toBe(130);
    expect(exitMs, stopped.stderr).toBeLessThan(PROMPT_EXIT_MS);
    const calls = operationRequests(sandbox).length;
    expect(calls).toBeGreaterThan(0);
    expect(operationRequests(sandbox).every((r) => r.path.includes('post'))).toBe(true);
    // Whole batches of the first rows only, their tasks deferred as after any read a signal cut short.
    const tasks = count(ws, `SELECT count(*) FROM tasks WHERE job = 'big-leads'`);
    const read = tasks + count(ws, `SELECT count(*) FROM invalid_inputs WHERE job = 'big-leads'`);
    expect(read % PLAN_DEFAULTS.batchRows).toBe(0);
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(ROWS);
    expect(taskStatuses(ws, 'big-leads')).toEqual({ deferred: tasks });
    expect(count(ws, `SELECT count(*) FROM tasks WHERE job = 'later'`)).toBe(0);
    expect(query(ws, 'SELECT status, exit_code AS exitCode, calls FROM runs')).toEqual([{ status: 'interrupted', exitCode: 130, calls }]);
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
    const summary = JSON.parse(stopped.stdout);
    expect(summary).toMatchObject({ status: 'interrupted', stop: { reason: 'interrupted' } });
    expect(summary.jobs.map((j: { name: string; status: string; planned: number; deferred: number }) => [j.name, j.status, j.planned, j.deferred])).toEqual([
      ['first', 'ran', 20, expect.any(Number)],
      ['big-leads', 'not_reached', tasks, tasks],
      ['later', 'not_reached', 0, 0],
    ]);
    expect(stopped.stderr).toMatch(/WARN {2}job stopped while reading its input/);
  }, 60_000);
});
