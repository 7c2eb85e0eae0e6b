/**
 * SIGHUP, what a dropped ssh session or a closed terminal sends: `run` treats it as SIGTERM, so the answers
 * already paid for and in flight are stored and the run's books are closed, instead of the process dying.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { heldPostsJob, type HeldAnswersServer } from './held-answers-server.ts';
import { BIN, count, processAlive, query, spawnCli, taskStatuses, waitFor, type CliProcess, type Workspace } from '../support/run-helpers.ts';

const TOKEN = 'sighup-token-5e0a';
const CONCURRENCY = 4;
const TASKS = 60;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function setUp(): Promise<{ server: HeldAnswersServer; ws: Workspace; job: string }> {
  return heldPostsJob(TASKS, CONCURRENCY, cleanups);
}

/** Whether the process ended, by itself or by a signal (exitCode stays null for the latter). */
function ended(cli: CliProcess): boolean {
  return cli.child.exitCode !== null || cli.child.signalCode !== null;
}

describe('SIGHUP during run', () => {
  it('stores the answers in flight, closes the run row as interrupted and exits 130, as SIGTERM does', { timeout: 90_000 }, async () => {
    const { server, ws, job } = await setUp();
    // The first calls go one at a time (the credit guard learns the cost from them); then the run fills its concurrency.
    const FIRST = 2;
    server.hold(FIRST);
    const cli = spawnCli(['run', job, '--db', ws.db], { cwd: ws.dir, env: { NETINGEST_API_URL: server.url, NETINGEST_API_TOKEN: TOKEN } });
    await waitFor(() => server.heldCount() === CONCURRENCY || ended(cli), 30_000, 'calls in flight');

    cli.child.kill('SIGHUP');
    await waitFor(() => /signal received/.test(cli.stderr()) || ended(cli), 30_000, 'the notice of the signal');
    server.release();
    const result = await cli.done;

    expect(result.signal, result.stderr).toBeNull();
    expect(result.code, result.stderr).toBe(130);
    expect(result.stderr).toMatch(/signal received: finishing calls in flight.*signal=SIGHUP/);
    // Every answer the server sent (each one charged) is stored, and no call was made after the signal.
    const answered = server.calls.filter((c) => c.answered);
    expect(server.calls).toHaveLength(FIRST + CONCURRENCY);
    expect(answered).toHaveLength(FIRST + CONCURRENCY);
    expect(count(ws, 'SELECT count(*) FROM raw_responses')).toBe(answered.length);
    expect(count(ws, `SELECT count(*) FROM api_calls WHERE status = 200`)).toBe(answered.length);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: answered.length, deferred: TASKS - answered.length });
    expect(query(ws, 'SELECT status, exit_code AS exitCode, calls, tasks_done AS done FROM runs')).toEqual([
      { status: 'interrupted', exitCode: 130, calls: answered.length, done: answered.length },
    ]);
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
  });
});

/** util-linux `script`: runs a command on a terminal of its own, as an ssh session does. */
const HAS_SCRIPT = process.platform === 'linux' && spawnSync('script', ['--version']).status === 0;


/** Whether a live process still has a controlling terminal (/proc/<pid>/stat field 7, tty_nr). */
function hasTerminal(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[4] !== '0';
  } catch {
    return false;
  }
}

describe('a terminal that hangs up during run (an ssh session that drops)', () => {
  it.skipIf(!HAS_SCRIPT)('the SIGHUP and the log writes that fail with EIO after it neither kill the run nor lose its answers in flight', { timeout: 90_000 }, async () => {
    const { server, ws, job } = await setUp();
    const FIRST = 2;
    server.hold(FIRST);
    const command = `exec '${process.execPath}' '${BIN}' run '${job}' --db '${ws.db}'`;
    const terminal = spawn('script', ['-qfec', command, '/dev/null'], {
      cwd: ws.dir,
      env: { ...process.env, NETINGEST_API_URL: server.url, NETINGEST_API_TOKEN: TOKEN },
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    const terminalGone = new Promise((resolve) => terminal.once('exit', resolve));
    cleanups.push(async () => {
      if (terminal.exitCode === null && terminal.signalCode === null) terminal.kill('SIGKILL');
      await terminalGone;
    });
    await waitFor(() => server.heldCount() === CONCURRENCY || terminal.exitCode !== null, 30_000, 'calls in flight');
    const pid = count(ws, 'SELECT pid FROM runs');

    // The terminal's end hangs it up: the kernel sends SIGHUP to the run, and its writes to it fail from then on.
    terminal.kill('SIGKILL');
    // The kernel hangs the terminal up a moment after: it takes it from the run as it sends the SIGHUP.
    await waitFor(() => !hasTerminal(pid), 30_000, 'the hang-up');
    server.release();
    await waitFor(() => !processAlive(pid), 60_000, 'the end of the run');

    // The kernel's SIGHUP may reach the run a moment after the answers: a wave of calls more is then no fault.
    const answered = server.calls.filter((c) => c.answered);
    expect(answered.length).toBeGreaterThanOrEqual(FIRST + CONCURRENCY);
    expect(answered.length).toBeLessThan(TASKS);
    expect(server.calls).toHaveLength(answered.length);
    expect(count(ws, 'SELECT count(*) FROM raw_responses')).toBe(answered.length);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: answered.length, deferred: TASKS - answered.length });
    expect(query(ws, 'SELECT status, exit_code AS exitCode FROM runs')).toEqual([{ status: 'interrupted', exitCode: 130 }]);
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
  });
});
