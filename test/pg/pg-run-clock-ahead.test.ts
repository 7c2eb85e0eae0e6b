/**
 * Issue #28 item 4: a PostgreSQL worker whose host clock runs ahead used to find every answer stale (its
 * freshness cut-off was its own clock's) and pay for all of them again. Freshness on PostgreSQL is the server's
 * clock: the cut-off, the run's start and the times the ledger is stamped with.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { planReport } from '../../src/runner/plan-report.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { operationRequests } from '../support/run-helpers.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { setUp, TOKEN, useCleanups } from './run-workers.ts';

useCleanups();
afterEach(() => {
  vi.useRealTimers();
});

const DAY_MS = 86_400_000;

describe.skipIf(!pgClusterUrl)(`a worker whose clock runs ahead on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('finds the answers another worker stored yesterday fresh, and pays for none of them again', async () => {
    const TASKS = 20;
    const s = await setUp(TASKS, 'clock_ahead');
    const jobs = (await s.ws.load(s.file)).map((j) => ({ ...j, refreshAfterDays: 7 }));
    const options = { dbPath: s.url, jobs, api: { baseUrl: s.sandbox.url, token: TOKEN } };
    expect((await runJobs(options)).status).toBe('completed');
    const paid = operationRequests(s.sandbox).length;
    expect(paid).toBe(TASKS);

    // This host's clock 30 days ahead (only Date: timers and the monotonic clock run as ever).
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 30 * DAY_MS });
    // `plan` says so too: nothing to call.
    expect(await planReport(jobs[0]!, s.url)).toMatchObject({ tasks: TASKS, fresh: TASKS, calls: 0 });
    const ahead = await runJobs(options);
    vi.useRealTimers();
    expect(ahead.status).toBe('completed');
    expect(operationRequests(s.sandbox).length - paid).toBe(0);
    // What it stamps the ledger with is the server's time too: a worker on a right clock still finds it fresh.
    const { rows } = await s.pool.query<{ late: number }>(`SELECT count(*)::int AS late FROM tasks WHERE completed_at > now() + interval '1 day'
      OR updated_at > now() + interval '1 day'`);
    expect(rows[0]!.late).toBe(0);
  }, 90_000);

  it('stamps what it pays for with the server\'s time, so a worker on a right clock does not find it stale or future', async () => {
    const TASKS = 10;
    const s = await setUp(TASKS, 'clock_behind');
    const jobs = (await s.ws.load(s.file)).map((j) => ({ ...j, refreshAfterDays: 7 }));
    const options = { dbPath: s.url, jobs, api: { baseUrl: s.sandbox.url, token: TOKEN } };
    // A worker 30 days behind pays for them: its answers must not look a month old to the others.
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() - 30 * DAY_MS });
    expect((await runJobs(options)).status).toBe('completed');
    vi.useRealTimers();
    const paid = operationRequests(s.sandbox).length;
    expect(paid).toBe(TASKS);
    expect((await runJobs(options)).status).toBe('completed');
    expect(operationRequests(s.sandbox).length - paid).toBe(0);
  }, 90_000);
});
