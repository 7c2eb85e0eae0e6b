/**
 * A PostgreSQL server that goes away as a run ends (cut by a TCP proxy as a given statement goes by, so that it is
 * not back when the run writes its end): `netingest run` still prints the summary of what it paid for and stored,
 * marked as not recorded in the database, in text and in `--json`, and exits as DB_CONNECTION_LOST does (1). Its
 * `runs` row stays `running`, and the next run closes it as abandoned.
 */
import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { END_RUN_SQL } from '../../src/store/runs.ts';
import { BALANCE_PATH } from '../../src/spec/types.ts';
import { FAST_RATE, FAST_RETRY, csv, inProcess, makeWorkspace, operationRequests, postUrls, type Workspace } from '../support/run-helpers.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { cuttableProxy } from './cuttable-proxy.ts';
import { gatedApi } from './gated-api.ts';

const TOKEN = 'end-lost-token-7c41';
/** Trust authentication lets it through unasked: the test checks that no output names it. */
const PASSWORD = 'pw-end-lost-s3cret';
const TASKS = 12;

/** The run's end (the `runs` row's UPDATE), and the count of its calls read just before it (api-calls.ts OF_RUN). */
const END_STATEMENT = END_RUN_SQL.postgres.slice(0, 40);
const CALLS_COUNT = 'SELECT count(*) AS calls, min(id) AS "firstId"';

interface Bed {
  sandbox: Sandbox;
  ws: Workspace;
  file: string;
  /** The dataset, straight (for the test's reads and the next run). */
  url: string;
  pool: pg.Pool;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function setUp(prefix: string): Promise<Bed> {
  const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 1_000 }, notFoundRate: 0, latencyMs: [1, 3] });
  const ws = await makeWorkspace();
  const url = await newMigratedPgDatabase(prefix);
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  cleanups.push(() => sandbox.stop(), () => ws.cleanup(), () => pool.end());
  await ws.write('posts.csv', csv(['post_url'], postUrls(TASKS).map((u) => [u])));
  const file = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
  return { sandbox, ws, file, url, pool };
}

/** A proxy in front of the dataset, its URL carrying a password, as a user's --db would. */
async function proxied(bed: Bed) {
  const proxy = await cuttableProxy(bed.url);
  const withPassword = new URL(proxy.url);
  withPassword.password = PASSWORD;
  return { proxy, db: withPassword.href };
}

function netingest(bed: Bed, args: string[], apiUrl = bed.sandbox.url) {
  // The server cut for good: the run's writer waits 1 s (the least the variable takes) for it to come back, not its 2 minutes.
  const env = { NETINGEST_API_URL: apiUrl, NETINGEST_API_TOKEN: TOKEN, NETINGEST_PG_RECONNECT_SECONDS: '1' };
  return inProcess(['run', bed.file, ...args], env, { cwd: bed.ws.dir });
}

const count = async (pool: pg.Pool, sql: string) => Number((await pool.query(sql)).rows[0].n);

/** What the dataset holds of the run: its answers and calls committed, and its `runs` rows. */
async function held(pool: pg.Pool) {
  return {
    done: await count(pool, `SELECT count(*) AS n FROM tasks WHERE status = 'done'`),
    calls: await count(pool, 'SELECT count(*) AS n FROM api_calls'),
    runs: (await pool.query('SELECT status FROM runs ORDER BY id')).rows.map((r) => r.status as string),
  };
}

const charged = (sandbox: Sandbox) => operationRequests(sandbox).reduce((n, r) => n + r.charged, 0);

describe.skipIf(!pgClusterUrl)(`a run whose database server goes away at its end${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('cut as the run writes its end: the summary is printed, marked not recorded; exit 1 (DB_CONNECTION_LOST); the next run closes it as abandoned', async () => {
    const bed = await setUp('end_lost_text');
    const { proxy, db } = await proxied(bed);
    const cut = proxy.cutOnSight(END_STATEMENT);
    const cli = await netingest(bed, ['--db', db]);
    await cut;

    expect(cli.code, cli.stderr).toBe(1);
    const paid = operationRequests(bed.sandbox).length;
    expect(paid).toBe(TASKS);
    // The summary's figures are what the dataset holds: all stored but the end.
    expect(await held(bed.pool)).toEqual({ done: TASKS, calls: paid, runs: ['running'] });
    const lines = cli.stdout.split('\n');
    expect(lines[0]).toMatch(/^Run \d+: completed; NOT RECORDED in the database: the connection to it was lost \(see below\)$/);
    expect(lines[1]).toBe(`  posts (post-details): ${TASKS} tasks, 0 still fresh, ${TASKS} done, 0 not found, 0 failed, 0 deferred; 0 invalid rows, 0 duplicates`);
    expect(lines[2]).toBe(`  ${paid} API calls; credits: ${charged(bed.sandbox)} spent, ${1_000 - charged(bed.sandbox)} left`);
    expect(lines[3]).toMatch(/^  not recorded: lost the connection to database postgres:\/\/\S+ \(.+\): the server ended the session \(a restart, a stop, pg_terminate_backend\) or cannot be reached.* \[DB_CONNECTION_LOST\]$/);
    expect(lines[4]).toMatch(/the runs table shows the run as running until the next run closes it as abandoned/);
    // The error ends the command as before, after the run's last log line, which carries the exit code.
    expect(cli.stderr).toMatch(/run finished .*status=completed .*not_recorded=DB_CONNECTION_LOST exit_code=1\n/);
    expect(cli.stderr).toMatch(/\nnetingest: lost the connection to database postgres:\/\/\S+ .*\[DB_CONNECTION_LOST\]\n$/);
    expect(cli.stdout + cli.stderr).not.toContain(PASSWORD);

    // Nothing left to do: the next run only closes the lost one's books.
    const next = await netingest(bed, ['--db', bed.url]);
    expect(next.code, next.stderr).toBe(0);
    expect((await held(bed.pool)).runs).toEqual(['abandoned', 'completed']);
  });

  it('cut as the run counts its calls: --json prints a parseable summary with the calls it sent and the error (exit 1)', async () => {
    const bed = await setUp('end_lost_json');
    const { proxy, db } = await proxied(bed);
    const cut = proxy.cutOnSight(CALLS_COUNT);
    const cli = await netingest(bed, ['--db', db, '--json', '--log-format', 'json']);
    await cut;

    expect(cli.code, cli.stderr).toBe(1);
    const summary = JSON.parse(cli.stdout);
    const paid = operationRequests(bed.sandbox).length;
    // The calls could not be counted in the database: the process's own count, the calls the service answered.
    expect(summary).toMatchObject({ status: 'completed', calls: paid, creditsSpent: charged(bed.sandbox), error: null });
    expect(summary.jobs).toMatchObject([{ name: 'posts', done: TASKS, deferred: 0 }]);
    expect(summary.notRecorded.code).toBe('DB_CONNECTION_LOST');
    expect(summary.notRecorded.message).toMatch(/^lost the connection to database postgres:\/\/\S+ /);
    const logLines = cli.stderr.trim().split('\n').map((l) => JSON.parse(l));
    expect(logLines.find((l) => l.msg === 'run finished')).toMatchObject({ status: 'completed', not_recorded: 'DB_CONNECTION_LOST', exit_code: 1 });
    expect(logLines.at(-1)).toMatchObject({ level: 'error', code: 'DB_CONNECTION_LOST', exit_code: 1 });
    expect(cli.stdout + cli.stderr).not.toContain(PASSWORD);
    expect(await held(bed.pool)).toEqual({ done: TASKS, calls: paid, runs: ['running'] });
  });

  it('gone mid-job and not back: the job is still listed, from the ledger before its calls and the answers committed since', async () => {
    const bed = await setUp('end_lost_mid');
    const { proxy, db } = await proxied(bed);
    // The first calls go through; the others wait at the API until the server is gone.
    const api = await gatedApi(bed.sandbox.url, { free: (path) => path.startsWith(BALANCE_PATH) });
    cleanups.push(() => api.stop());
    api.allow(4);
    // A worker gives its inputs back once their answers are committed: the server goes away as the first are.
    const cut = proxy.cutOnSight('DELETE FROM worker_task_leases');
    const running = netingest(bed, ['--db', db, '--json'], api.url);
    await cut;
    api.allow(Infinity);
    const cli = await running;

    expect(cli.code, cli.stderr).toBe(1);
    const summary = JSON.parse(cli.stdout);
    const stored = await held(bed.pool);
    expect(stored.done).toBeGreaterThan(0);
    expect(stored.runs).toEqual(['running']);
    const paid = operationRequests(bed.sandbox).length;
    // Every call the service answered is counted, stored or not; the answers stored are the dataset's.
    expect(summary).toMatchObject({ status: 'failed', calls: paid, creditsSpent: charged(bed.sandbox) });
    expect(paid).toBeGreaterThanOrEqual(stored.calls);
    expect(summary.jobs).toMatchObject([{ name: 'posts', status: 'ran', planned: TASKS, worked: TASKS, done: stored.done, failed: 0, deferred: TASKS - stored.done }]);
    expect(summary.notRecorded.code).toBe('DB_CONNECTION_LOST');
    // The session holding the run's lock or the writer's connection: whichever failed first stopped the run.
    expect(['LOCK_LOST', 'DB_CONNECTION_LOST']).toContain(summary.error.code);
    expect(cli.stderr).toMatch(/\nnetingest: lost the connection to database postgres:\/\/\S+ .*\[DB_CONNECTION_LOST\]\n$/);
  });
});
