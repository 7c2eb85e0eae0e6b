/**
 * A worker's summary on PostgreSQL when several share a job: its calls are its own, its task counts the job's as a
 * whole after it. A tester once read "3000 still fresh, 251 done" for a 3,000-input job: each worker counted only
 * the tasks stamped with its own run, while the others' planning and settling re-stamped them with theirs.
 */
import { describe, expect, it } from 'vitest';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { gatedApi } from './gated-api.ts';
import { waitFor } from './coordination-fixtures.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { openPgRunStore } from '../../src/store/pg/pg-run-store.ts';
import { freshSince, planIntoLedger, settleDue } from '../../src/runner/plan-into-ledger.ts';
import type { RunSummary } from '../../src/runner/run-summary.ts';
import { formatRunSummary } from '../../src/cli/format-summary.ts';
import { one, setUp, startWorker, useCleanups, type Worker } from './run-workers.ts';

useCleanups();

const summaryOf = (w: Worker) => JSON.parse(w.stdout().split('\n').filter(Boolean).pop()!) as RunSummary;

describe.skipIf(!pgClusterUrl)(`a worker's summary among several${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it("counts its own calls and answers and the job's tasks as a whole: the second worker finds the first one's answers fresh", async () => {
    const TASKS = 60;
    const FIRST = 10;
    const s = await setUp(TASKS, 'summary');
    await (await openPgStore(s.url)).close();
    const api = await gatedApi(s.sandbox.url, { free: (path) => path.startsWith('/v1/api/auth') });
    try {
      // The first worker answers FIRST tasks alone; its next calls wait at the gate till the second is up. Under load
      // that outlasted the workers' 10 s call timeout: the 4 calls were sent again, 64 calls for 60 tasks.
      const held = { apiUrl: api.url, requestTimeoutMs: 60_000 };
      const first = startWorker(s, held);
      api.allow(FIRST);
      await waitFor(async () => (await one(s.pool, `SELECT count(*) AS n FROM tasks WHERE status = 'done'`)) === FIRST, 30_000, 'the first answers');
      // The second plans (re-stamping every task) and claims inputs of its own before any other answer comes.
      const second = startWorker(s, held);
      await waitFor(async () => (await one(s.pool, 'SELECT count(DISTINCT worker_id) AS n FROM worker_task_leases')) === 2, 30_000, 'both workers holding inputs');
      api.allow(Infinity);
      for (const w of [first, second]) expect(await w.exited, w.stderr()).toBe(0);

      const [a, b] = [summaryOf(first), summaryOf(second)];
      // The test's workers exit 0 whatever their run's status: a stopped run (its pending tasks deferred) says why here.
      for (const [w, summary] of [[first, a], [second, b]] as const) expect(summary.status, w.stderr()).toBe('completed');
      // Each worker's calls are its own, and they add up to the job's.
      expect(a.calls).toBeGreaterThan(FIRST);
      expect(b.calls).toBeGreaterThan(0);
      expect(a.calls + b.calls).toBe(TASKS);
      // The job's tasks after each worker: every one done (a worker ends once the others' inputs are settled).
      const whole = { planned: TASKS, done: TASKS, notFound: 0, failed: 0, deferred: 0 };
      expect(a.jobs[0]).toMatchObject({ ...whole, fresh: 0, worked: TASKS, failedBefore: 0 });
      // The second found the first one's answers fresh, and the rest due.
      expect(b.jobs[0]).toMatchObject({ ...whole, fresh: FIRST, worked: TASKS - FIRST, failedBefore: 0 });
      expect((await s.pool.query('SELECT tasks_done AS n FROM runs ORDER BY id')).rows.map((r: { n: number }) => r.n)).toEqual([TASKS, TASKS]);
      // What each worker's own calls answered: its run's 200s in api_calls, at least the first one's FIRST, the two
      // adding up to the job's done count; the text summary says it under the job's line.
      for (const w of [a, b]) {
        const answered = await one(s.pool, `SELECT count(*) AS n FROM api_calls WHERE run_id = ${w.runId} AND status = 200 AND error_code IS NULL`);
        expect(w.jobs[0]!.thisWorker).toEqual({ done: answered, notFound: 0 });
        expect(formatRunSummary(w)).toContain(`\n    of these, this worker's calls answered ${answered} done and 0 not found\n`);
      }
      expect(a.jobs[0]!.thisWorker!.done).toBeGreaterThanOrEqual(FIRST);
      expect(a.jobs[0]!.thisWorker!.done + b.jobs[0]!.thisWorker!.done).toBe(a.jobs[0]!.done);
    } finally {
      await api.stop();
    }
  }, 60_000);

  it('a worker whose planned tasks another worker re-stamped before it counted them still finds them due', async () => {
    const TASKS = 20;
    const s = await setUp(TASKS, 'restamp');
    const [job] = await s.ws.load(s.file);
    const [a, b] = [await openPgRunStore({ url: s.url }), await openPgRunStore({ url: s.url })];
    try {
      const at = new Date().toISOString();
      const runA = await a.runs.start({ jobs: [job!.name], startedAt: at, pid: process.pid, host: 'host-a' });
      await planIntoLedger(job!, a.ledger, runA.id);
      // The second worker plans between the first one's planning and its count of what is due.
      const runB = await b.runs.start({ jobs: [job!.name], startedAt: at, pid: process.pid, host: 'host-b' });
      await planIntoLedger(job!, b.ledger, runB.id);
      const due = await settleDue(job!.operation, a.ledger, { job: job!.name, runId: runA.id, freshSince: freshSince(job!.refreshAfterDays), refresh: false });
      expect(due).toMatchObject({ runnable: TASKS, failedBefore: 0 });
    } finally {
      await a.close();
      await b.close();
    }
  });
});
