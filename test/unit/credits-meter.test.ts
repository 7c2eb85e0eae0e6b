/**
 * The credit arithmetic on counters as the service sends them: answers of calls in flight together arrive (and
 * are written) out of the order the service charged them in, and the costs and spend must not count a call twice.
 */
import { describe, expect, it } from 'vitest';
import { CreditMeter, medianStep } from '../../src/credits/credit-meter.ts';
import { CreditGuard } from '../../src/credits/credit-guard.ts';
import { openDatabase } from '../../src/store/open.ts';
import { apiCallReads, saveApiCall } from '../../src/store/api-calls.ts';
import { readSync } from '../../src/store/read-steps.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const TOTAL = 1_000;
const counters = (used: number) => ({ total_credits: TOTAL, credits_used: used, credits_remaining: TOTAL - used });

/** credits_used of 1-credit calls charged 1..n, as they arrive with up to `spread` calls in flight together. */
function outOfOrder(n: number, spread: number): number[] {
  const out: number[] = [];
  for (let start = 1; start <= n; start += spread) {
    const group = [];
    for (let used = start; used < start + spread && used <= n; used++) group.push(used);
    out.push(...group.reverse());
  }
  return out;
}

describe('CreditMeter', () => {
  it('learns a cost of 1 and the exact spend from answers that arrive out of order', () => {
    const meter = new CreditMeter();
    const arrivals = [1, ...outOfOrder(40, 4).filter((u) => u > 1)];
    for (const used of arrivals) meter.observe('post-details', counters(used));
    expect(meter.costOf('post-details')).toBe(1);
    expect(meter.spent).toBe(40);
    expect(meter.balance).toBe(TOTAL - 40);
  });

  it("counts the first call at its step from the counter an earlier run saw last, whatever comes after", () => {
    const meter = new CreditMeter({ lastCreditsUsed: 300 });
    for (const used of [300.25, 301, 300.75, 300.5]) meter.observe('search-jobs', counters(used));
    expect(meter.costOf('search-jobs')).toBe(0.25);
    expect(meter.spent).toBe(1);
  });

  it('takes a cost learned by earlier runs for the first call when the account was used elsewhere since', () => {
    const meter = new CreditMeter({ costs: { 'post-details': 1 }, lastCreditsUsed: 10 });
    // 10 -> 13: two calls from another tool, then this run's first call.
    for (const used of [13, 14, 15]) meter.observe('post-details', counters(used));
    expect(meter.spent).toBe(3);
  });

  it("learns a second operation's cost from the counter before its first call", () => {
    const meter = new CreditMeter();
    for (const used of [1, 2, 3]) meter.observe('similar-companies', counters(used));
    meter.observe('search-jobs', counters(3.25));
    expect(meter.costOf('search-jobs')).toBe(0.25);
    expect(meter.spent).toBe(3.25);
  });
});

describe('CreditMeter when the counters disagree', () => {
  it('takes the smaller of credits_remaining and total_credits - credits_used as the balance', () => {
    const meter = new CreditMeter();
    meter.observe('post-details', { total_credits: 1000, credits_used: 100, credits_remaining: 850 });
    expect(meter.balance).toBe(850);
    meter.observe('post-details', { total_credits: 1000, credits_used: 101, credits_remaining: 950 });
    expect(meter.balance).toBe(899);
    // An answer charged earlier, arriving late, does not bring back its higher balance.
    meter.observe('post-details', { total_credits: 1000, credits_used: 100.5, credits_remaining: 899.5 });
    expect(meter.balance).toBe(899);
  });

  it('keeps a top-up seen on a late answer while credits_remaining stays short of the total less the use', () => {
    const meter = new CreditMeter();
    for (const used of [10, 11, 12]) meter.observe('post-details', { total_credits: 100, credits_used: used, credits_remaining: 80 - used });
    expect(meter.balance).toBe(68);
    // Charged before the answer at 12, answered after a top-up of 100.
    meter.observe('post-details', { total_credits: 200, credits_used: 11.5, credits_remaining: 168.5 });
    expect(meter.balance).toBe(168);
  });

  it("lets the guard stop on the reserve by credits_remaining when it is the lower figure", async () => {
    const guard = new CreditGuard({ reserve: 100, maxPerRun: null }, { costs: { 'post-details': 1 } });
    const first = await guard.acquire('post-details');
    guard.settle(first!, { total_credits: 1000, credits_used: 800, credits_remaining: 100.5 });
    expect(guard.balance).toBe(100.5);
    expect(await guard.acquire('post-details')).toBeNull();
    expect(guard.stopDetail).toMatchObject({ reason: 'reserve', balance: 100.5 });
  });
});

describe('CreditMeter when credits_used goes down (a plan renewal resets it)', () => {
  const at = (used: number, total = 1000) => ({ total_credits: total, credits_used: used, credits_remaining: total - used });

  it('keeps counting the spend and follows the new balance, the cost unchanged', () => {
    const meter = new CreditMeter({ costs: { 'post-details': 1 }, lastCreditsUsed: 499 });
    for (let used = 500; used <= 600; used++) meter.observe('post-details', at(used));
    expect(meter.spent).toBe(101);
    expect(meter.balance).toBe(400);
    for (let used = 1; used <= 50; used++) meter.observe('post-details', at(used));
    expect(meter.spent).toBe(151);
    expect(meter.balance).toBe(950);
    expect(meter.costOf('post-details')).toBe(1);
  });

  it('when replaying stored answers, counts the new period once it outgrows the window for late answers', () => {
    // The run began on an account nearly unused (credits_used 10), so the new period's counter soon passes the
    // old period's lowest: only answers within the window may be taken for late ones of the old period.
    const meter = new CreditMeter({ costs: { 'post-details': 1 }, lastCreditsUsed: 9 });
    for (let used = 10; used <= 600; used++) meter.observe('post-details', at(used));
    for (let used = 1; used <= 100; used++) meter.observe('post-details', at(used));
    expect(meter.balance).toBe(900);
    expect(meter.spent).toBe(591 + 100);
  });

  it('follows a renewal that lowers the total too (a smaller plan), so the balance is never overstated', () => {
    const meter = new CreditMeter({ costs: { 'post-details': 1 }, lastCreditsUsed: 899 });
    for (let used = 900; used <= 910; used++) meter.observe('post-details', at(used));
    expect(meter.balance).toBe(90);
    for (let used = 1; used <= 5; used++) meter.observe('post-details', at(used, 50));
    expect(meter.balance).toBe(45);
    expect(meter.spent).toBe(16);
  });

  it('does not learn a cost from the drop, nor from answers charged before the renewal that arrive after it', () => {
    const meter = new CreditMeter({ lastCreditsUsed: 0 });
    for (const used of [1, 2, 3]) meter.observe('similar-companies', at(used), 0);
    // Four calls sent before the renewal: two charged before it (at 4 and 5), two after it (at 0.25 and 0.5).
    for (const used of [0.25, 5, 0.5, 4]) meter.observe('search-jobs', at(used), 0);
    expect(meter.epoch).toBe(1);
    expect(meter.costOf('search-jobs')).toBe(0.25);
    expect(meter.costOf('similar-companies')).toBe(1);
    expect(meter.balance).toBe(999.5);
    // Sent after the renewal was seen: their counters are the new period's, however high.
    for (const used of [1.5, 2.5, 3.5]) meter.observe('similar-companies', at(used), 1);
    expect(meter.costOf('similar-companies')).toBe(1);
    expect(meter.balance).toBe(996.5);
    // 3 calls before the renewal, 2 charged before it but answered after, 5 after it (0.25 + 0.25 + 3 x 1).
    expect(meter.spent).toBe(3 + 2 + 3.5);
  });

  it('through the guard, tells answers charged before the renewal from those after it by when their call was sent', async () => {
    const guard = new CreditGuard({ reserve: 0, maxPerRun: 5 }, { costs: { 'post-details': 1 }, lastCreditsUsed: 2 });
    const first = await guard.acquire('post-details');
    guard.settle(first!, at(3));
    const [a, b] = [await guard.acquire('post-details'), await guard.acquire('post-details')];
    guard.settle(a!, at(1)); // charged after the renewal
    const c = await guard.acquire('post-details');
    guard.settle(b!, at(4)); // charged before it
    const d = await guard.acquire('post-details');
    guard.settle(c!, at(2));
    guard.settle(d!, at(3)); // as high as the run's first counter, but sent after the renewal was seen
    expect(guard.balance).toBe(997);
    expect(guard.spent).toBe(5);
    expect(await guard.acquire('post-details')).toBeNull();
    expect(guard.stopDetail).toMatchObject({ reason: 'max-per-run', spent: 5 });
  });
});

describe('medianStep', () => {
  it('is the median step between the sorted values; a call charged but never seen makes one step double', () => {
    expect(medianStep([5, 3, 4, 1, 2])).toBe(1);
    expect(medianStep([1, 2, 4, 5, 6])).toBe(1);
    expect(medianStep([7])).toBeNull();
    expect(medianStep([7], { extra: 2 })).toBe(2);
  });

  it('counts a repeated counter as no step, and shows no cost with fewer steps than asked', () => {
    // The account's samples on PostgreSQL: the same counter reported twice (a late answer) is one value.
    expect(medianStep([3, 1, 2, 2, 1], { minSteps: 3 })).toBeNull();
    expect(medianStep([3, 1, 2, 2, 4], { minSteps: 3 })).toBe(1);
    expect(medianStep([10, 11, 13, 16], { minSteps: 3 })).toBe(2);
  });
});

describe('apiCallReads.learnedCost', () => {
  it('learns 1 credit from answers written out of the order they were charged in', () => {
    const dir = mkdtempSync(join(tmpdir(), 'netingest-meter-'));
    const database = openDatabase(join(dir, 'm.db'));
    try {
      const saveCall = saveApiCall(database);
      for (const used of outOfOrder(30, 4)) {
        saveCall({
          runId: null,
          taskId: null,
          operation: 'post-details',
          method: 'GET',
          path: '/v1/api/post-details',
          status: 200,
          errorCode: null,
          latencyMs: 1,
          totalCredits: TOTAL,
          creditsUsed: used,
          creditsRemaining: TOTAL - used,
          at: '2026-11-23T00:00:00.000Z',
        });
      }
      expect(readSync(database.sqlite, apiCallReads.learnedCost('post-details'))).toBe(1);
    } finally {
      database.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
