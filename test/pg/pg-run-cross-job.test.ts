/**
 * Issue #28 item 2: one lookup is one paid call whichever job asks, also across PostgreSQL workers. Worker 1
 * runs job `x`, worker 2 job `y`, both post-details over the same URLs with the same request, at the same time:
 * each post is paid once, and both jobs end with every task settled.
 */
import { describe, expect, it } from 'vitest';
import { openPgStore } from '../../src/store/pg/open.ts';
import { gatherFigures } from '../../src/report/write-report.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { operationRequests } from '../support/run-helpers.ts';
import { chargedPerUrl, CONCURRENCY, one, REQUESTS_PER_MINUTE, setUp, startWorker, useCleanups } from './run-workers.ts';

useCleanups();

describe.skipIf(!pgClusterUrl)(`two jobs asking the same lookups on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('worked by two workers at once: each lookup paid once, both jobs settled', async () => {
    const TASKS = 120;
    const s = await setUp(TASKS, 'cross_job');
    await (await openPgStore(s.url)).close();
    const job = (name: string) => s.ws.job(name, {
      operation: 'post-details',
      input: { csv: 'posts.csv', column: 'post_url' },
      rate: { requestsPerMinute: REQUESTS_PER_MINUTE, concurrency: CONCURRENCY },
      retry: { retries: 3, minTimeoutMs: 10, maxTimeoutMs: 50 },
    });
    const [x, y] = [startWorker(s, { file: await job('x') }), startWorker(s, { file: await job('y') })];
    expect(await x.exited, x.stderr()).toBe(0);
    expect(await y.exited, y.stderr()).toBe(0);
    for (const name of ['x', 'y']) {
      expect(await one(s.pool, `SELECT count(*) AS n FROM tasks WHERE job = '${name}' AND status = 'done'`), name).toBe(TASKS);
    }
    expect(operationRequests(s.sandbox)).toHaveLength(TASKS);
    expect([...chargedPerUrl(s.sandbox).values()].filter((n) => n > 1)).toEqual([]);
    // The runs' credits_spent add up to what the sandbox billed: each worker's counters also step by the other's
    // calls, which its own estimate once counted too (122 for 120 billed).
    const billed = s.sandbox.requests.reduce((sum, r) => sum + r.charged, 0);
    expect(await one(s.pool, 'SELECT sum(credits_spent) AS n FROM runs')).toBeCloseTo(billed, 6);
    // The report counts each lookup's paid answer once, for the job whose task paid it, and gives each job its
    // run's spend (each worker's run worked one job).
    const { figures } = await gatherFigures({ db: s.url });
    const ofJob = (name: string) => figures.creditsByJob.filter((c) => c.job === name);
    expect(ofJob('x').concat(ofJob('y')).reduce((n, c) => n + c.paidAnswers, 0)).toBe(TASKS);
    for (const name of ['x', 'y']) {
      const paid = await one(s.pool, `SELECT count(*) AS n FROM api_calls a JOIN tasks t ON t.id = a.task_id WHERE t.job = '${name}' AND a.status = 200`);
      expect(ofJob(name).reduce((n, c) => n + c.paidAnswers, 0), name).toBe(paid);
      const spent = await one(s.pool, `SELECT coalesce(sum(credits_spent), 0) AS n FROM runs WHERE jobs::text LIKE '%"${name}"%'`);
      expect(ofJob(name).reduce((n, c) => n + c.credits, 0), name).toBeCloseTo(spent, 6);
      // Shares of a shared account in whole credits, as the bill shows them: never a scaled fraction.
      expect(ofJob(name).filter((c) => !Number.isInteger(c.credits)), name).toEqual([]);
    }
  }, 90_000);
});
