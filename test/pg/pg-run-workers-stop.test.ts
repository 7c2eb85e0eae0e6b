/**
 * A worker that stops (here on its own credits.maxPerRun) while another works the same job: it defers what it leaves,
 * but not the inputs the other, live worker holds and is calling. The stopping worker planned last, so its run stamps
 * every task; before the fix it marked the other's held inputs deferred and its summary counted them as its own.
 */
import { describe, expect, it } from 'vitest';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { gatedApi } from './gated-api.ts';
import { waitFor } from './coordination-fixtures.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import type { RunSummary } from '../../src/runner/run-summary.ts';
import { CONCURRENCY, one, REQUESTS_PER_MINUTE, setUp, startWorker, useCleanups, type Worker } from './run-workers.ts';

useCleanups();

const summaryOf = (w: Worker) => JSON.parse(w.stdout().split('\n').filter(Boolean).pop()!) as RunSummary;

describe.skipIf(!pgClusterUrl)(`a worker stopping beside a live one${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it("defers only what no live worker holds; the live one calls its inputs and ends with none deferred", async () => {
    const TASKS = 40;
    const s = await setUp(TASKS, 'stop_beside');
    await (await openPgStore(s.url)).close();
    // The live worker's calls wait at the gate; the stopping one calls the sandbox itself, on its own run and cap.
    const api = await gatedApi(s.sandbox.url, { free: (path) => path.startsWith('/v1/api/auth') });
    const capped = await s.ws.job('posts-capped', {
      name: 'posts', operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' },
      rate: { requestsPerMinute: REQUESTS_PER_MINUTE, concurrency: CONCURRENCY }, retry: { retries: 3, minTimeoutMs: 10, maxTimeoutMs: 50 },
      // 5 credits: a few answers (post-details costs 1) before the stop; at 4 it stopped before its first call.
      credits: { maxPerRun: 5 },
    });
    try {
      const live = startWorker(s, { apiUrl: api.url, requestTimeoutMs: 60_000 });
      await waitFor(async () => api.held() > 0, 30_000, "the live worker's calls at the gate");
      const liveInputs = await one(s.pool, 'SELECT count(*) AS n FROM worker_task_leases');
      expect(liveInputs).toBeGreaterThan(0);
      const stopping = startWorker(s, { file: capped, runKey: 'the-capped-run' });
      expect(await stopping.exited, stopping.stderr()).toBe(0);
      const b = summaryOf(stopping);
      expect(b.status, stopping.stderr()).toBe('stopped_credits');
      // Its run stamped every task as it planned last; the inputs the live worker holds stay pending, its to call.
      const leased = `EXISTS (SELECT 1 FROM worker_task_leases l WHERE l.input_key = t.input_key)`;
      expect(await one(s.pool, `SELECT count(*) AS n FROM tasks t WHERE ${leased} AND t.status = 'deferred'`)).toBe(0);
      expect(await one(s.pool, `SELECT count(*) AS n FROM tasks t WHERE ${leased} AND t.status = 'pending'`)).toBe(liveInputs);
      // Its summary: the job's tasks when it ended, those the live worker holds neither done nor deferred.
      expect(b.calls).toBeGreaterThan(0);
      expect(b.jobs[0]).toMatchObject({ planned: TASKS, done: b.calls, deferred: TASKS - b.calls - liveInputs });

      api.allow(Infinity);
      expect(await live.exited, live.stderr()).toBe(0);
      const a = summaryOf(live);
      expect(a.status, live.stderr()).toBe('completed');
      expect(a.jobs[0]).toMatchObject({ planned: TASKS, done: TASKS, deferred: 0 });
      expect(a.calls + b.calls).toBe(TASKS);
      expect(await one(s.pool, `SELECT count(*) AS n FROM tasks WHERE status = 'done'`)).toBe(TASKS);
    } finally {
      await api.stop();
    }
  }, 90_000);
});
