/**
 * Workers on PostgreSQL share the account's limits: four started together plan and work one job calling each task
 * once under the shared rate limit, and two keep the credit reserve together.
 */
import { describe, expect, it } from 'vitest';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { gatedApi } from './gated-api.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { waitFor } from './coordination-fixtures.ts';
import { BINDING_REQUESTS_PER_MINUTE, busiestWindow, chargedPerUrl, expectWholeAndUnique, limitOf, one, RATE_WINDOW_MS, setUp, startWorker, useCleanups } from './run-workers.ts';

useCleanups();

describe.skipIf(!pgClusterUrl)(`run on PostgreSQL, workers sharing the account${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('four workers started together plan and work one job: every task called exactly once', async () => {
    // Twice what the shared rate allows in a window: the check below can fail. Half the binding rate and half the
    // tasks of pg-run-workers' two workers: the same two windows of calls for the workers to start in, half the
    // rows each worker plans and the workers call and store.
    const TASKS = 100;
    const RATE = BINDING_REQUESTS_PER_MINUTE / 2;
    const s = await setUp(TASKS, 'four', undefined, RATE);
    const workers = [startWorker(s), startWorker(s), startWorker(s), startWorker(s)];
    for (const w of workers) expect(await w.exited, w.stderr()).toBe(0);
    await expectWholeAndUnique(s.pool, TASKS);
    const charged = chargedPerUrl(s.sandbox);
    expect(charged.size).toBe(TASKS);
    expect([...charged.values()].every((n) => n === 1)).toBe(true);
    expect(await one(s.pool, 'SELECT count(DISTINCT run_id) AS n FROM api_calls')).toBeGreaterThanOrEqual(2);
    expect(busiestWindow(s.sandbox, RATE_WINDOW_MS)).toBeLessThanOrEqual(limitOf(RATE));
  }, 60_000);


  it('the credit reserve holds for the account across two workers: together they spend no more than the balance above it', async () => {
    // Half again the 100 credits above the reserve: the reserve, not the work, stops both (300 planned and
    // deferred 200 rows more for each worker).
    const TASKS = 150;
    const s = await setUp(TASKS, 'reserve', { balance: 300, reserve: 200 });
    // No paid call goes through until both workers hold room for one (the balance check goes at once): on a busy
    // machine one worker could otherwise spend the whole balance before the other asks, and this test would show
    // nothing shared (it once did: both runs open, one worker started late and found no room left).
    await (await openPgStore(s.url)).close();
    const api = await gatedApi(s.sandbox.url, { free: (path) => path.startsWith('/v1/api/auth') });
    const workers = [startWorker(s, { apiUrl: api.url }), startWorker(s, { apiUrl: api.url })];
    try {
      await waitFor(async () => {
        const ended = workers.find((w) => w.child.exitCode !== null || w.child.signalCode !== null);
        if (ended) throw new Error(`a worker ended before both held room for a call:\n${ended.stderr()}`);
        return (await one(s.pool, 'SELECT count(DISTINCT worker_id) AS n FROM credit_reservations')) === workers.length;
      }, 30_000, 'both workers holding room for a call');
      api.allow(Infinity);
      for (const w of workers) expect(await w.exited, w.stderr()).toBe(0);
    } finally {
      await api.stop();
    }
    const summaries = workers.map((w) => JSON.parse(w.stdout().split('\n').filter(Boolean).pop()!) as { stop: { reason: string } | null });
    expect(summaries.map((x) => x.stop?.reason)).toEqual(['credits', 'credits']);
    const charged = s.sandbox.requests.reduce((sum, r) => sum + r.charged, 0);
    // 300 - 200: not one credit of the reserve, though each worker alone keeps 4 calls in flight.
    expect(charged).toBeLessThanOrEqual(100);
    expect(charged).toBeGreaterThanOrEqual(90);
    // Both workers called: the budget was shared, not won by one.
    expect(await one(s.pool, 'SELECT count(DISTINCT run_id) AS n FROM api_calls WHERE status = 200')).toBe(2);
  }, 60_000);

});
