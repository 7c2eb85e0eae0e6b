/**
 * Opt-in fuzz (NETINGEST_CREDIT_FUZZ=<iterations>, FUZZ_SEED=<first seed>; skipped otherwise: random timings, about 20 s
 * per 100): two SharedCreditGuards of one run, 4 calls each at most, on a real PostgreSQL and a fake service
 * whose credits_used grows by 1 a call billed, in billing order; each worker's balance read is made at a random time
 * or not at all (timed out), and connections are sometimes slow to come. Each iteration checks that no more than
 * credits.maxPerRun was billed and that the run's spend is what was billed. It found a balance read erasing a call's
 * cost (billed 41, spent 40), a later turn deleting a block before its calls' charges (spent = billed = 41, 42), and,
 * on an account used before (half the iterations), a call billed before the first answer's counter charged 0.
 */
import { expect, it } from 'vitest';
import type { Operation } from '../../src/spec/types.ts';
import { SharedCreditBudget } from '../../src/store/pg/coordination/shared-credit-budget.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { SharedCreditGuard } from '../../src/store/pg/shared-credit-guard.ts';
import { one, setUp, useCleanups } from './run-workers.ts';
import { pgClusterUrl } from './use-pg.ts';
import { seededRandom } from '../support/seeded-random.ts';

useCleanups();
const OP: Operation = 'post-details';
const TOTAL = 10_000;
const counters = (used: number) => ({ credits_used: used, total_credits: TOTAL, credits_remaining: TOTAL - used });
const CAP = 40;

const ITER = Number(process.env.NETINGEST_CREDIT_FUZZ ?? 0);
const SEED0 = Number(process.env.FUZZ_SEED ?? 1);

it.skipIf(!pgClusterUrl || !(ITER > 0))('two workers of one run never bill past credits.maxPerRun, and the run\'s spend is what was billed (fuzz)', async () => {
  const s = await setUp(1, 'fuzz_cap');
  await (await openPgStore(s.url)).close();
  const failures: string[] = [];
  for (let iter = 0; iter < ITER; iter++) {
    const seed = SEED0 + iter;
    const rand = seededRandom(seed);
    await s.pool.query('TRUNCATE credit_reservations, credit_run_spend, account_balance, credit_cost_samples');
    const apiUrl = `https://api.example/${seed}`;
    let used = 0;
    // Half the iterations start from an account other runs used: the cost known from its samples (blocks go out at
    // once, no call alone first) and its last report older than a reservation's life, so no counter says where the
    // growth starts, and calls are in flight before the first answer reports.
    const usedBefore = rand() < 0.5;
    if (usedBefore) {
      await s.pool.query(`INSERT INTO account_balance (api_url, balance, credits_used, total_credits, reported_at)
        VALUES ($1, ${TOTAL - 5}, -5, ${TOTAL}, clock_timestamp() - interval '1 hour')`, [apiUrl]);
      await s.pool.query(`INSERT INTO credit_cost_samples (api_url, operation, credits_used, recorded_at)
        SELECT $1, $2, u, clock_timestamp() FROM generate_series(-9, -5) AS u`, [apiUrl, OP]);
    }
    const billedLog: string[] = [];
    type Call = { w: number; res: unknown; billedAt: number | null };
    const sent: Call[] = [];
    const billedCalls: Call[] = [];
    const workers = [0, 1].map((w) => {
      const slowPool = { query: s.pool.query.bind(s.pool), connect: async () => {
        // A connection sometimes slow to come (a new one opening): turns of one budget may overtake each other.
        if (rand() < 0.3) await new Promise((r) => setTimeout(r, Math.floor(rand() * 6)));
        return s.pool.connect();
      } } as unknown as typeof s.pool;
      const budget = new SharedCreditBudget(slowPool, { apiUrl, runKey: 'run-1', workerId: `w${w}`, settleDelayMs: Math.floor(rand() * 30) });
      const seedMode = rand();
      return { w, guard: new SharedCreditGuard({ reserve: 0, maxPerRun: CAP }, {}, budget), seedMode };
    });
    const done: Array<Promise<void>> = [];
    for (const wk of workers) {
      const g = wk.guard;
      // A third of the balance reads time out; the others read the counters as they stand at a random time.
      const seedDelay = Math.floor(rand() * 40);
      const seeded = wk.seedMode < 0.35 ? Promise.resolve() : (async () => {
        await new Promise((r) => setTimeout(r, seedDelay));
        g.seed(counters(used));
      })();
      for (let slot = 0; slot < 4; slot++) {
        done.push((async () => {
          await seeded;
          for (;;) {
            const r = await g.acquire(OP);
            if (!r) return;
            const call: Call = { w: wk.w, res: r, billedAt: null };
            sent.push(call);
            await new Promise<void>((resolve) => ((call as unknown as { answer: () => void }).answer = resolve));
            g.settle(r, counters(call.billedAt!));
          }
        })());
      }
    }
    let finished = false;
    void Promise.all(done).then(() => (finished = true));
    while (!finished) {
      const x = rand();
      if (x < 0.4 && sent.length > 0) {
        const c = sent.splice(Math.floor(rand() * sent.length), 1)[0]!;
        c.billedAt = ++used;
        billedLog.push(`w${c.w}:${used}`);
        billedCalls.push(c);
      } else if (x < 0.8 && billedCalls.length > 0) {
        const c = billedCalls.splice(Math.floor(rand() * billedCalls.length), 1)[0]!;
        (c as unknown as { answer: () => void }).answer();
      } else {
        await new Promise((r) => setTimeout(r, rand() < 0.5 ? 0 : Math.floor(rand() * 15)));
      }
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(workers.map((wk) => wk.guard.close()));
    const spent = await one(s.pool, `SELECT coalesce((SELECT spent FROM credit_run_spend WHERE run_key = 'run-1'), 0) AS n`);
    const line = `seed ${seed}: billed ${used} spent ${spent} modes ${workers.map((w) => (w.seedMode < 0.35 ? 'unseeded' : 'seeded')).join(',')}${usedBefore ? ' used-before' : ''} summaries ${workers.map((w) => w.guard.spent).join(',')}`;
    if (used > CAP || Math.abs(spent - used) > 1e-6) failures.push(`${line} ${billedLog.join(' ')}`);
  }
  expect(failures).toEqual([]);
}, 600_000);
