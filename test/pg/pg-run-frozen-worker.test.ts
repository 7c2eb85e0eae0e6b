/**
 * Issue #28 item 3: a PostgreSQL worker frozen (SIGSTOP) past its claims' lease wakes up after another worker has
 * taken and paid for its inputs. It must not send the calls it had queued for them: before each call it asks
 * whether it still holds the input's lease, on its monotonic clock, and stops as a run that lost its lock does
 * (LOCK_LOST: its summary says so, its books closed, and the CLI exits 1). Only the calls in flight when it froze are paid twice.
 */
import { describe, expect, it } from 'vitest';
import { openPgStore } from '../../src/store/pg/open.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { waitFor as waitUntil } from './coordination-fixtures.ts';
import { gatedApi } from './gated-api.ts';
import { operationRequests } from '../support/run-helpers.ts';
import { chargedPerUrl, CONCURRENCY, expectWholeAndUnique, one, setUp, startWorker, useCleanups } from './run-workers.ts';

useCleanups();

describe.skipIf(!pgClusterUrl)(`a worker frozen past its lease on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('wakes up, sends none of its queued calls for inputs another worker took, and stops with LOCK_LOST', async () => {
    const TASKS = 60;
    const ALLOWED = 4;
    const s = await setUp(TASKS, 'frozen_worker');
    await (await openPgStore(s.url)).close();
    const api = await gatedApi(s.sandbox.url);
    try {
      api.allow(ALLOWED);
      const frozen = startWorker(s, { apiUrl: api.url });
      // Its first calls answered, the next ones held at the API, more inputs claimed and queued behind them.
      await waitUntil(async () => s.sandbox.requests.length >= ALLOWED
        && (await one(s.pool, 'SELECT count(*) AS n FROM api_calls WHERE status = 200')) >= operationRequests(s.sandbox).length
        && (await one(s.pool, 'SELECT count(*) AS n FROM worker_task_leases')) > CONCURRENCY, 30_000, 'the frozen worker\'s calls and leases');
      frozen.child.kill('SIGSTOP');
      // Past its lease, the other worker takes its inputs and does the whole job.
      const other = startWorker(s);
      expect(await other.exited, other.stderr()).toBe(0);
      await expectWholeAndUnique(s.pool, TASKS);
      const paidBefore = operationRequests(s.sandbox).length;

      frozen.child.kill('SIGCONT');
      api.allow(Infinity);
      // A PostgreSQL worker closes its own books when it loses its hold: its summary says why (the CLI exits 1).
      expect(await frozen.exited, frozen.stderr()).toBe(0);
      const summary = JSON.parse(frozen.stdout().trim().split('\n').at(-1)!) as { status: string; error: { code: string; message: string } | null };
      expect(summary.error?.code).toBe('LOCK_LOST');
      expect(summary.error?.message).toMatch(/lease on input/);
      // What reached the API after it woke: only its calls held in flight, none of those it had queued.
      expect(operationRequests(s.sandbox).length - paidBefore).toBeLessThanOrEqual(CONCURRENCY);
      const twice = [...chargedPerUrl(s.sandbox).values()].filter((n) => n > 1).length;
      expect(twice).toBeLessThanOrEqual(CONCURRENCY);
    } finally {
      await api.stop();
    }
  }, 90_000);
});
