/**
 * A run frozen mid-way (Ctrl-Z, a suspended laptop or VM, `docker pause`) while its calls are in flight. On this
 * host it keeps its lock however long it is stopped: a second run exits LOCKED. Where its lock is taken over
 * anyway (a lock seen from another host, past its lease), it stops when it wakes up before its next call and
 * its next commit: nothing is paid twice beyond its calls in flight, and its `runs` row stays as the takeover
 * closed it.
 */
import { readFileSync } from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { heldPostsJob, type HeldAnswersServer } from './held-answers-server.ts';
import { count, inProcess, query, runCli, spawnCli, taskStatuses, waitFor, waitWhileRunning, type CliProcess, type Workspace } from '../support/run-helpers.ts';

const FIRST_TOKEN = 'frozen-run-token-a1';
const SECOND_TOKEN = 'second-run-token-b2';
const CONCURRENCY = 2;
/** Calls answered at once: the first ones go one at a time while the credit guard learns the cost. */
const FIRST = 2;
const TASKS = 30;
const LONG_AGO = '2000-01-01T00:00:00.000Z';
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

interface Setting {
  server: HeldAnswersServer;
  ws: Workspace;
  job: string;
  env: (token: string) => Record<string, string>;
}

async function setUp(): Promise<Setting> {
  const { server, ws, job } = await heldPostsJob(TASKS, CONCURRENCY, cleanups);
  // A short lease (the heartbeat runs every 100 ms): another host may take a stopped run's lock over a second after.
  const env = (token: string) => ({ NETINGEST_API_URL: server.url, NETINGEST_API_TOKEN: token, NETINGEST_LOCK_LEASE_SECONDS: '1' });
  return { server, ws, job, env };
}

/** Starts the first run and stops it (SIGSTOP) while it has `CONCURRENCY` calls in flight. */
async function frozenFirstRun({ server, ws, job, env }: Setting): Promise<CliProcess> {
  server.hold(FIRST, FIRST_TOKEN);
  const first = spawnCli(['run', job, '--db', ws.db], { cwd: ws.dir, env: env(FIRST_TOKEN) });
  cleanups.push(async () => {
    if (first.child.exitCode === null && first.child.signalCode === null) {
      first.child.kill('SIGCONT');
      first.child.kill('SIGKILL');
    }
    await first.done;
  });
  // Waits on the run's own progress, not a clock: under load its start and its stop both take a while.
  await waitWhileRunning(first, () => server.heldCount() === CONCURRENCY, 'calls in flight');
  first.child.kill('SIGSTOP');
  await waitWhileRunning(first, () => processState(first.child.pid!) === 'T', 'the first run stopped');
  return first;
}

function processState(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

/** Rewrites the lock row, as a clock gone by or a look from another host would see it. */
function ageLock(ws: Workspace, set: string): void {
  const db = new BetterSqlite3(ws.db, { timeout: 10_000 });
  try {
    db.prepare(`UPDATE run_lock SET ${set}`).run();
  } finally {
    db.close();
  }
}

const callsWith = (server: HeldAnswersServer, token: string) => server.calls.filter((c) => c.token === token).length;

describe('a run stopped (SIGSTOP) on this host', () => {
  it('keeps its lock however old its heartbeat: a second run exits LOCKED, saying it is stopped, and calls nothing', { timeout: 120_000 }, async () => {
    const setting = await setUp();
    const { server, ws, job, env } = setting;
    const first = await frozenFirstRun(setting);
    // Hours without a heartbeat, yet its process is there and is the one that took the lock.
    ageLock(ws, `heartbeat_at = '${LONG_AGO}'`);

    // The refused run is the CLI's code in this process (it reads the lock and the holder's state in /proc):
    // the stopped first run is what needs a process.
    const second = await inProcess(['run', job, '--db', ws.db], env(SECOND_TOKEN), { cwd: ws.dir });
    expect(second.code, second.stderr).toBe(4);
    expect(second.stderr).toContain(`is in use by run 1 (pid ${first.child.pid} on `);
    expect(second.stderr).toContain(`which is stopped (Ctrl-Z or SIGSTOP): resume it (fg, or kill -CONT ${first.child.pid}) or end it`);
    expect(callsWith(server, SECOND_TOKEN)).toBe(0);
    expect(query(ws, 'SELECT id, status FROM runs')).toEqual([{ id: 1, status: 'running' }]);

    // Woken up, the first run finishes its work as if nothing happened.
    first.child.kill('SIGCONT');
    server.release();
    const result = await first.done;
    expect(result.code, result.stderr).toBe(0);
    expect(callsWith(server, FIRST_TOKEN)).toBe(TASKS);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: TASKS });
    expect(query(ws, 'SELECT id, status FROM runs')).toEqual([{ id: 1, status: 'completed' }]);
  });
});

describe('a run whose lock was taken over while it was stopped', () => {
  it('stops when it wakes, before its next call and commit; its run row stays as the takeover closed it', { timeout: 120_000 }, async () => {
    const setting = await setUp();
    const { server, ws, job, env } = setting;
    const first = await frozenFirstRun(setting);
    // Its lock as another host sharing the file sees it; its lease (1 s, written by the run) runs out while it is stopped.
    ageLock(ws, `host = 'other-host.example'`);
    const [lock] = query<{ heartbeatAt: string; leaseMs: number }>(ws, 'SELECT heartbeat_at AS heartbeatAt, lease_ms AS leaseMs FROM run_lock');
    expect(lock!.leaseMs).toBe(1000);
    await waitFor(() => Date.now() > Date.parse(lock!.heartbeatAt) + lock!.leaseMs + 200, 10_000, 'the end of the lease');
    // Its calls in flight are answered (charged) now: the answers wait in its sockets until it wakes.
    server.release();

    const second = await runCli(['run', job, '--db', ws.db, '--json'], { cwd: ws.dir, env: env(SECOND_TOKEN) });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(/closed runs whose process ended without finishing them, as abandoned.*runs=1/);
    expect(callsWith(server, SECOND_TOKEN)).toBe(TASKS - FIRST);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: TASKS });
    const closedByTakeover = query(ws, 'SELECT * FROM runs WHERE id = 1');
    expect(closedByTakeover).toMatchObject([{ status: 'abandoned', calls: FIRST, tasks_done: FIRST }]);
    const firstRunCalls = count(ws, 'SELECT count(*) FROM api_calls WHERE run_id = 1');
    const answers = count(ws, 'SELECT count(*) FROM raw_responses');
    const callsBeforeWaking = callsWith(server, FIRST_TOKEN);
    expect(callsBeforeWaking).toBe(FIRST + CONCURRENCY);

    first.child.kill('SIGCONT');
    const woken = await first.done;
    expect(woken.code, woken.stderr).toBe(4);
    expect(woken.stderr).toMatch(/run 1 lost the lock of .* while it was not running .*no run holds it now.*It stopped before its next call and stored nothing more/);
    // No call after waking, no answer stored, and the books as the run that took over closed them.
    expect(callsWith(server, FIRST_TOKEN)).toBe(callsBeforeWaking);
    expect(count(ws, 'SELECT count(*) FROM api_calls WHERE run_id = 1')).toBe(firstRunCalls);
    expect(count(ws, 'SELECT count(*) FROM raw_responses')).toBe(answers);
    expect(query(ws, 'SELECT * FROM runs WHERE id = 1')).toEqual(closedByTakeover);
    expect(query(ws, 'SELECT id, status FROM runs')).toEqual([{ id: 1, status: 'abandoned' }, { id: 2, status: 'completed' }]);
    expect(taskStatuses(ws, 'posts')).toEqual({ done: TASKS });
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
    // Paid twice: only the calls that were in flight when it was stopped.
    const paid = new Map<string, number>();
    for (const c of server.calls) paid.set(c.postUrl, (paid.get(c.postUrl) ?? 0) + 1);
    expect([...paid.values()].filter((n) => n > 1)).toHaveLength(CONCURRENCY);
  });
});
