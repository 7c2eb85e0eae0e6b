/**
 * The credit arithmetic on counters as the service sends them: answers of calls in flight together arrive (and
 * are written) out of the order the service charged them in, and the costs and spend must not count a call twice.
 */
import { describe, expect, it } from 'vitest';
import { CreditMeter, medianStep } from '../src/credits/credit-meter.ts';
import { openDatabase } from '../src/db/open.ts';
import { createApiCallLog } from '../src/db/api-calls.ts';
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

describe('medianStep', () => {
  it('is the median step between the sorted values; a call charged but never seen makes one step double', () => {
    expect(medianStep([5, 3, 4, 1, 2])).toBe(1);
    expect(medianStep([1, 2, 4, 5, 6])).toBe(1);
    expect(medianStep([7])).toBeNull();
    expect(medianStep([7], 2)).toBe(2);
  });
});

describe('ApiCallLog.learnedCost', () => {
  it('learns 1 credit from answers written out of the order they were charged in', () => {
    const dir = mkdtempSync(join(tmpdir(), 'netingest-meter-'));
    const database = openDatabase(join(dir, 'm.db'));
    try {
      const log = createApiCallLog(database);
      for (const used of outOfOrder(30, 4)) {
        log.insert({
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
      expect(log.learnedCost('post-details')).toBe(1);
    } finally {
      database.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
