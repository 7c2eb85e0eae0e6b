/**
 * Two runs on one account at once (PostgreSQL workers, each its own run): the account's counters between two
 * answers of one run step by the other's calls too. Before the account's samples show an operation's cost, a
 * worker charged its calls at its own estimate, the step of its own counters: a call of the other run in
 * between was counted twice (cross-job runs once summed to 122 credits for 120 billed). The runs' spends must
 * add up to what was billed, whatever order the calls are charged and answered in.
 */
import { describe, expect, it } from 'vitest';
import type { Operation } from '../../src/spec/types.ts';
import { SharedCreditBudget } from '../../src/store/pg/coordination/shared-credit-budget.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { SharedCreditGuard } from '../../src/store/pg/shared-credit-guard.ts';
import { one, setUp, useCleanups, type Setup } from './run-workers.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';

useCleanups();

const OP: Operation = 'post-details';
const TOTAL = 10_000;
const START = 100;
const counters = (used: number) => ({ credits_used: used, total_credits: TOTAL, credits_remaining: TOTAL - used });
const spent = async (s: Setup, runKey: string) => one(s.pool, `SELECT coalesce((SELECT spent FROM credit_run_spend WHERE run_key = '${runKey}'), 0) AS n`);

/**
 * Runs x and y, each a worker's guard over the one account's shared budget (x's spend capped at `xMaxPerRun`);
 * `yWorkers` more workers of y (a worker's calls of a cost not bounded yet go one at a time: several at once are several workers').
 */
async function twoRuns(prefix: string, xMaxPerRun: number | null = null, yWorkers = 0) {
  const s = await setUp(1, prefix);
  await (await openPgStore(s.url)).close();
  const guard = (runKey: string, maxPerRun: number | null, workerId = runKey) =>
    new SharedCreditGuard({ reserve: 0, maxPerRun }, {}, new SharedCreditBudget(s.pool, { apiUrl: 'https://api.example', runKey, workerId }));
  const ys = Array.from({ length: yWorkers }, (_, i) => guard('y', null, `y${i + 2}`));
  return { s, x: guard('x', xMaxPerRun), y: guard('y', null), ys };
}

/**
 * Runs x and y each send one call at a time, both in flight together; the service charges y's call first (1
 * credit each). `xAnswersFirst` decides which answer is settled first; `chargeEach`, whether each answer's charge
 * is made final before the next (at the assumed cost, capped by what the counters grew by, while the account's
 * samples show no cost) or the charges wait for the samples, as in a run. Returns each run's spend and what was billed.
 */
async function interleaved(prefix: string, rounds: number, xAnswersFirst: boolean, chargeEach = true) {
  const { s, x, y } = await twoRuns(prefix);
  let used = START;
  const spent = async (runKey: string) => one(s.pool, `SELECT coalesce((SELECT spent FROM credit_run_spend WHERE run_key = '${runKey}'), 0) AS n`);
  /** Each run's spend after each round. */
  const after: Array<[number, number]> = [];
  try {
    // Both read the balance before their first call (as `GET /v1/api/auth` gives it).
    x.seed(counters(used));
    y.seed(counters(used));
    for (let i = 0; i < rounds; i++) {
      const [rx, ry] = [await x.acquire(OP), await y.acquire(OP)];
      expect(rx && ry).toBeTruthy();
      const [usedY, usedX] = [++used, ++used];
      const answers: Array<[SharedCreditGuard, NonNullable<typeof rx>, number]> = [[x, rx!, usedX], [y, ry!, usedY]];
      if (!xAnswersFirst) answers.reverse();
      for (const [g, r, u] of answers) {
        g.settle(r, counters(u));
        await (chargeEach ? g.finish() : g.drained());
      }
      after.push([await spent('x'), await spent('y')]);
    }
    await x.finish();
    await y.finish();
    return { billed: used - START, x: await spent('x'), y: await spent('y'), guards: [x.spent, y.spent], after };
  } finally {
    await Promise.all([x.close(), y.close()]);
  }
}

describe.skipIf(!pgClusterUrl)(`two runs' spend on one account on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('answers in the order charged: each run is charged its own calls, and together what was billed', async () => {
    // One round: the account's samples show no cost yet, so each charge is the workers' own reckoning.
    const r = await interleaved('spend_in_order', 1, false);
    expect(r.billed).toBe(2);
    expect([r.x, r.y]).toEqual([1, 1]);
    expect(r.guards).toEqual([1, 1]);
  }, 30_000);

  it('answers out of the order charged: together the runs are charged what was billed, before and after the cost is learned', async () => {
    const first = await interleaved('spend_out_of_order_1', 1, true);
    expect(first.x + first.y).toBe(first.billed);
    expect(first.guards[0]! + first.guards[1]!).toBe(first.billed);
    const many = await interleaved('spend_out_of_order_6', 6, true);
    expect(many.billed).toBe(12);
    expect(many.x + many.y).toBe(many.billed);
    expect(many.guards[0]! + many.guards[1]!).toBe(many.billed);
    // Until the account's answers show the cost, x's own counters step by 2 and its answer comes first: it is
    // charged y's call too, and y's answer then nothing. Once the cost is learned (3 steps), each its own.
    const rounds = many.after.map(([x, y], i) => [x - (many.after[i - 1]?.[0] ?? 0), y - (many.after[i - 1]?.[1] ?? 0)]);
    expect(rounds.slice(2)).toEqual([[1, 1], [1, 1], [1, 1], [1, 1]]);
  }, 30_000);

  it('answers out of the order charged, their charges waiting for the account\'s samples: each run is charged its own calls', async () => {
    const r = await interleaved('spend_out_of_order_waiting', 6, true, false);
    expect(r.billed).toBe(12);
    expect([r.x, r.y]).toEqual([6, 6]);
    expect(r.guards).toEqual([6, 6]);
  }, 30_000);

  it("a run's first answer comes after another run's calls were charged: it learns no cost from that step, and each run is charged its own calls", async () => {
    const { s, x, y, ys } = await twoRuns('spend_first_answers', null, 2);
    const yAll = [y, ...ys];
    try {
      for (const g of [x, ...yAll]) g.seed(counters(START));
      // y's three calls (a worker's each) are charged (START + 1 to + 3) and still on their way when x's first answer comes.
      const ry = await Promise.all(yAll.map((g) => g.acquire(OP)));
      const rx = await x.acquire(OP);
      x.settle(rx!, counters(START + 4));
      await x.drained();
      // x's step from the balance it read is 4, three of them y's: at most its call's cost, not the cost.
      expect(x.knowsCost(OP)).toBe(false);
      expect(x.spent).toBe(x.costOf(OP));
      expect(await spent(s, 'x')).toBe(0);
      for (const [i, g] of yAll.entries()) {
        g.settle(ry[i]!, counters(START + 1 + i));
        await g.drained();
      }
      // The account's samples (x's answer among them) show the cost: y's workers learn it and are charged 1 a call.
      for (const g of yAll) await g.finish();
      expect(yAll.map((g) => g.costOf(OP))).toEqual([1, 1, 1]);
      await x.finish();
      expect([await spent(s, 'x'), await spent(s, 'y')]).toEqual([1, 3]);
      expect([x.spent, yAll.reduce((sum, g) => sum + g.spent, 0)]).toEqual([1, 3]);
    } finally {
      await Promise.all([x, ...yAll].map((g) => g.close()));
    }
  }, 30_000);

  it('a run whose spend reaches its cap only by answers counted at an estimate goes on once they are charged', async () => {
    const { s, x, y, ys } = await twoRuns('spend_cap_estimates', 9, 3);
    const yAll = [y, ...ys];
    try {
      for (const g of [x, ...yAll]) g.seed(counters(START));
      // y's four calls (a worker's each) are charged first; x's first answer steps by 5 from the balance x read.
      const ry = await Promise.all(yAll.map((g) => g.acquire(OP)));
      const rx = await x.acquire(OP);
      x.settle(rx!, counters(START + 5));
      // Counted at the bound its step gives: that call cost 5 at most.
      expect(x.spent).toBe(5);
      ry.forEach((r, i) => yAll[i]!.settle(r!, counters(START + 1 + i)));
      await Promise.all(yAll.map((g) => g.finish()));
      // 5 counted and one more call at 5 would pass 9; charged, x's answer costs 1.
      const second = await x.acquire(OP);
      expect(second, JSON.stringify(x.stopDetail)).not.toBeNull();
      expect(x.spent).toBe(1);
      x.settle(second!, counters(START + 6));
      await x.finish();
      expect([x.spent, await spent(s, 'x'), await spent(s, 'y')]).toEqual([2, 2, 4]);
    } finally {
      await Promise.all([x, ...yAll].map((g) => g.close()));
    }
  }, 30_000);

  it('a run that reads the balance while another run\'s answer is on its way: that answer is still charged', async () => {
    const { x, y } = await twoRuns('spend_seed_between');
    try {
      x.seed(counters(START));
      const rx = await x.acquire(OP);
      // x's call is charged (START + 1); y starts and reads that balance before x's answer is settled.
      y.seed(counters(START + 1));
      const ry = await y.acquire(OP);
      x.settle(rx!, counters(START + 1));
      await x.finish();
      y.settle(ry!, counters(START + 2));
      await y.finish();
      expect([x.spent, y.spent]).toEqual([1, 1]);
    } finally {
      await Promise.all([x.close(), y.close()]);
    }
  }, 30_000);
});
