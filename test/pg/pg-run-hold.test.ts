/**
 * A PostgreSQL run's hold on the dataset: it holds the dataset lock shared for its whole life, so it is refused
 * (exit 4) while reprocess or prune holds it exclusive (and with DB_READONLY, exit 1, where the server runs the
 * database read-only); a run whose session is gone is abandoned whichever host it ran on (closed by the next
 * worker, shown unfinished by status: a live run and one whose session ended, on both engines, are
 * test/pg/abandoned-runs.test.ts's); and workers that overlap are one run, counting one `credits.maxPerRun`
 * together without NETINGEST_RUN_KEY.
 */
import { describe, expect, it } from 'vitest';
import { ABANDONED_RUN_ERROR } from '../../src/store/abandoned-runs.ts';
import { holdExclusive } from '../../src/store/pg/dataset-lock.ts';
import { openPgRunStore } from '../../src/store/pg/pg-run-store.ts';
import { LockLostError } from '../../src/store/run-lock.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { cliEnv, inProcess, operationRequests, runCli } from '../support/run-helpers.ts';
import { pgClusterUrl, lockHolders, pgSkipReason } from './use-pg.ts';
import { waitFor as waitUntil } from './coordination-fixtures.ts';
import { gatedApi } from './gated-api.ts';
import { cappedSetUp, one, setUp, startWorker, TOKEN, useCleanups } from './run-workers.ts';

useCleanups();

async function statusJson(url: string): Promise<{ unfinishedRuns: Array<{ id: number }>; runs: Array<{ id: number; status: string; unfinished: boolean }> }> {
  const out = await inProcess(['status', '--json', '--db', url]);
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout);
}

describe.skipIf(!pgClusterUrl)(`a run's hold on a PostgreSQL dataset${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('is refused with exit 4 while reprocess or prune holds the dataset exclusive, naming it without its password, writing nothing', async () => {
    const s = await setUp(5, 'refused');
    const withPassword = new URL(s.url);
    withPassword.password = 'pw-s3cret-9';
    const rewrite = await holdExclusive(s.pool, 'the dataset', 'netingest reprocess');
    try {
      const refused = await runCli(['run', s.file, '--db', withPassword.href], { cwd: s.ws.dir, env: cliEnv(s.sandbox, TOKEN) });
      expect(refused.code, refused.stderr).toBe(4);
      expect(refused.stderr).toContain('is being rewritten by `netingest reprocess`, `netingest prune` or `netingest copy`');
      expect(refused.stderr).toContain(`${withPassword.hostname}:${withPassword.port}${withPassword.pathname}`);
      expect(refused.stderr).not.toContain('pw-s3cret-9');
      expect(await one(s.pool, 'SELECT count(*) AS n FROM runs')).toBe(0);
      expect(operationRequests(s.sandbox)).toHaveLength(0);
      // Its connections all went with it: only the exclusive holder is left.
      expect(await lockHolders(s.pool)).toEqual(new Set([rewrite.backendPid]));
    } finally {
      await rewrite.release();
    }
    // Once it is released, the same run goes through: the CLI's code in this process (the refusal above is the
    // spawned CLI's exit 4).
    const after = await inProcess(['run', s.file, '--db', withPassword.href], cliEnv(s.sandbox, TOKEN), { cwd: s.ws.dir });
    expect(after.code, after.stderr).toBe(0);
  }, 30_000);

  it('is refused with DB_READONLY (exit 1) on a dataset the server runs read-only, before any call, writing nothing', async () => {
    const s = await setUp(3, 'read_only');
    const first = await inProcess(['run', s.file, '--db', s.url], cliEnv(s.sandbox, TOKEN), { cwd: s.ws.dir });
    expect(first.code, first.stderr).toBe(0);
    const calls = operationRequests(s.sandbox).length;
    const before = await s.pool.query('SELECT id, status, ended_at FROM runs ORDER BY id');
    await s.pool.query(`ALTER DATABASE "${new URL(s.url).pathname.slice(1)}" SET default_transaction_read_only = on`);
    const refused = await inProcess(['run', s.file, '--db', s.url, '--refresh'], cliEnv(s.sandbox, TOKEN), { cwd: s.ws.dir });
    expect(refused.code, refused.stderr).toBe(EXIT.fatal);
    expect(refused.stderr).toMatch(/netingest: database postgres:\/\/\S+ cannot be written \(cannot execute INSERT in a read-only transaction \[25006\]\): the server runs it read-only .*give --db the primary.* \[DB_READONLY\]\n$/);
    expect(operationRequests(s.sandbox)).toHaveLength(calls);
    expect((await s.pool.query('SELECT id, status, ended_at FROM runs ORDER BY id')).rows).toEqual(before.rows);
    expect(await lockHolders(s.pool)).toEqual(new Set());
  }, 30_000);

  it('stops, instead of crashing, when the server ends the session holding its lock', async () => {
    const s = await setUp(1, 'lost');
    const store = await openPgRunStore({ url: s.url });
    try {
      const lost = new Promise<LockLostError>((resolve) => store.hold.onLost(resolve));
      const [pid] = [...(await lockHolders(s.pool))];
      await s.pool.query('SELECT pg_terminate_backend($1)', [pid]);
      const err = await lost;
      expect(err).toBeInstanceOf(LockLostError);
      expect(err.message).toContain('ended the session holding this run');
      expect(store.hold.held()).toBe(false);
    } finally {
      await store.close();
    }
  }, 30_000);

  it('a worker killed on another host is closed as abandoned by the next worker on this one', async () => {
    // 30 tasks: 12 let through before the kill, the rest for the next run (120 were 108 calls more to make).
    const s = await setUp(30, 'elsewhere');
    const api = await gatedApi(s.sandbox.url);
    try {
      // Its first calls go through; the next ones wait at the API when it is killed.
      api.allow(12);
      const victim = startWorker(s, { apiUrl: api.url, hostname: 'far-host-7' });
      await waitUntil(async () => (await one(s.pool, 'SELECT count(*) AS n FROM api_calls')) >= 8, 30_000, 'calls of the far worker');
      victim.child.kill('SIGKILL');
      expect(await victim.exited).toBe('SIGKILL');
      const [far] = (await s.pool.query<{ id: string; host: string; status: string }>('SELECT id, host, status FROM runs')).rows;
      expect(far).toMatchObject({ host: 'far-host-7', status: 'running' });
      // status computes it (its session is gone) and writes nothing.
      expect((await statusJson(s.url)).unfinishedRuns.map((r) => r.id)).toEqual([Number(far!.id)]);

      // The next run is the CLI's code in this process: what is checked is what it writes, not its process.
      const next = await inProcess(['run', s.file, '--db', s.url], { ...cliEnv(s.sandbox, TOKEN), NETINGEST_LOCK_LEASE_SECONDS: '2' }, { cwd: s.ws.dir });
      expect(next.code, next.stderr).toBe(0);
      expect(next.stderr).toMatch(/closed runs whose process ended without finishing them, as abandoned/);
      const runs = (await s.pool.query<{ status: string; error: string | null; calls: number; ended: boolean }>(
        'SELECT status, error, calls, ended_at IS NOT NULL AS ended FROM runs ORDER BY id')).rows;
      expect(runs[0]).toEqual({ status: 'abandoned', error: ABANDONED_RUN_ERROR, calls: await one(s.pool, `SELECT count(*) AS n FROM api_calls WHERE run_id = ${far!.id}`), ended: true });
      expect(runs[0]!.calls).toBeGreaterThan(0);
      expect(runs[1]!.status).toBe('completed');
    } finally {
      await api.stop();
    }
  }, 60_000);

  it('workers starting at the same instant join one run; a dead run is not joined', async () => {
    const s = await setUp(1, 'same_instant');
    for (let round = 0; round < 6; round++) {
      const stores = await Promise.all([openPgRunStore({ url: s.url }), openPgRunStore({ url: s.url })]);
      try {
        const at = new Date().toISOString();
        const started = await Promise.all(stores.map((store) => store.runs.start({ jobs: ['posts'], startedAt: at, pid: process.pid, host: 'a-host' })));
        const first = Math.min(...started.map((r) => r.id));
        // The earlier round's runs are dead (their sessions closed): a new run, the first to start names it.
        expect(started.map((r) => r.runKey), `round ${round}`).toEqual([`run-${first}`, `run-${first}`]);
      } finally {
        for (const store of stores) await store.close();
      }
    }
    expect(await one(s.pool, `SELECT count(*) AS n FROM runs WHERE status = 'abandoned'`)).toBe(10);
  }, 30_000);

  it('a worker started while another works the job joins its run without NETINGEST_RUN_KEY: together they spend at most credits.maxPerRun', async () => {
    const MAX_PER_RUN = 20;
    // Three times the cap: the cap, not the work, ends both runs.
    const s = await cappedSetUp(3 * MAX_PER_RUN, 'one_run', MAX_PER_RUN);
    const { capped } = s;
    const api = await gatedApi(s.sandbox.url);
    try {
      // The first worker spends half its cap, then its calls wait at the API while the second starts: still live.
      api.allow(MAX_PER_RUN / 2 + 1);
      const first = startWorker(s, { file: capped, apiUrl: api.url });
      await waitUntil(async () => s.sandbox.requests.reduce((sum, r) => sum + r.charged, 0) >= MAX_PER_RUN / 2, 30_000, 'the first worker\'s calls');
      const second = startWorker(s, { file: capped, apiUrl: api.url });
      await waitUntil(async () => (await one(s.pool, 'SELECT count(*) AS n FROM runs')) === 2, 30_000, 'the second run');
      api.allow(Infinity);
      for (const w of [first, second]) expect(await w.exited, w.stderr()).toBe(0);
      const summaries = [first, second].map((w) => JSON.parse(w.stdout().split('\n').filter(Boolean).pop()!) as { stop: { reason: string } | null });
      expect(summaries.map((x) => x.stop?.reason)).toEqual(['credits', 'credits']);
      // Every call is reserved against the shared run before it is sent, at no less than it is billed (1 credit a
      // post), so the bound is maxPerRun itself; two runs of their own spend up to twice that.
      const charged = s.sandbox.requests.reduce((sum, r) => sum + r.charged, 0);
      expect(charged).toBeLessThanOrEqual(MAX_PER_RUN);
      expect(await one(s.pool, 'SELECT count(DISTINCT run_key) AS n FROM worker_runs')).toBe(1);
    } finally {
      await api.stop();
    }
  }, 60_000);
});
