/**
 * Workers on PostgreSQL learn a call's cost from the counters of every worker's answers of the account
 * (credit_cost_samples): a worker's own answers step by the other workers' calls too, so each would count about
 * k times the cost and a shared `credits.maxPerRun` would stop k workers at 1/k of it.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Operation } from '../../src/spec/types.ts';
import { CREDIT_METER_DEFAULTS } from '../../src/credits/credit-meter.ts';
import type { Reservation } from '../../src/credits/credit-guard.ts';
import { SharedCreditBudget, type ReserveAttempt } from '../../src/store/pg/coordination/shared-credit-budget.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { SharedCreditGuard } from '../../src/store/pg/shared-credit-guard.ts';
import { waitFor } from './coordination-fixtures.ts';
import { gatedApi } from './gated-api.ts';
import { cappedSetUp, CONCURRENCY, one, setUp, startWorker, useCleanups, type Setup } from './run-workers.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';

useCleanups();

const OP: Operation = 'post-details';
const TOTAL = 10_000;
const counters = (used: number) => ({ credits_used: used, total_credits: TOTAL, credits_remaining: TOTAL - used });

const MAX_PER_RUN = 40;

/**
 * Starts a worker per run key (undefined: the run it joins) on a job capped at MAX_PER_RUN, all calling from
 * the first (no call goes through until every one is live), and waits for them to stop on credits.
 */
async function cappedWorkers(prefix: string, runKeys: Array<string | undefined>): Promise<{ total: number; pool: Setup['pool'] }> {
  const s = await cappedSetUp(200, prefix, MAX_PER_RUN);
  const { capped } = s;
  const api = await gatedApi(s.sandbox.url);
  try {
    const workers = runKeys.map((runKey) => startWorker(s, { file: capped, apiUrl: api.url, runKey }));
    // Bounded by the test's timeout, not a budget of its own: two worker starts took 20 s at load 16.
    await waitFor(async () => {
      const ended = workers.find((w) => w.child.exitCode !== null || w.child.signalCode !== null);
      if (ended) throw new Error(`a worker ended before every run began:\n${ended.stderr()}`);
      return (await one(s.pool, 'SELECT count(*) AS n FROM runs')) === workers.length;
    }, 110_000, 'every run');
    api.allow(Infinity);
    for (const w of workers) expect(await w.exited, w.stderr()).toBe(0);
    const summaries = workers.map((w) => JSON.parse(w.stdout().split('\n').filter(Boolean).pop()!) as { stop: { reason: string } | null; creditsSpent: number });
    expect(summaries.map((x) => x.stop?.reason), workers.map((w) => w.stdout().slice(-1500)).join('\n---\n')).toEqual(workers.map(() => 'credits'));
    const total = s.sandbox.requests.reduce((sum, r) => sum + r.charged, 0);
    // Each worker's summary counts its own calls (not every call its counters spanned): together, what was
    // billed, and no more than the runs' caps.
    const summed = summaries.reduce((sum, x) => sum + x.creditsSpent, 0);
    expect(summed).toBeCloseTo(total, 6);
    expect(summed).toBeLessThanOrEqual(new Set(runKeys).size * MAX_PER_RUN);
    return { total, pool: s.pool };
  } finally {
    await api.stop();
  }
}

describe.skipIf(!pgClusterUrl)(`costs learned from every worker's answers on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('guards whose answers interleave on one account (two runs) each learn the real cost, and each run is charged its own calls', async () => {
    const s = await setUp(1, 'shared_cost_unit');
    await (await openPgStore(s.url)).close();
    const apiUrl = 'https://api.example';
    const limits = { reserve: 0, maxPerRun: null };
    const guard = (runKey: string, workerId: string) => new SharedCreditGuard(limits, {}, new SharedCreditBudget(s.pool, { apiUrl, runKey, workerId }));
    // Two workers of run-1 and one of run-2 take turns: each one's own counters step by 3, the account's by 1.
    const guards = [guard('run-1', 'a'), guard('run-1', 'b'), guard('run-2', 'c')];
    const spent = async (runKey: string) => one(s.pool, `SELECT coalesce((SELECT spent FROM credit_run_spend WHERE run_key = '${runKey}'), 0) AS n`);
    let used = 0;
    const round = async () => {
      for (const g of guards) {
        const reservation = await g.acquire(OP);
        expect(reservation).not.toBeNull();
        g.settle(reservation!, counters(++used));
        await g.drained();
      }
    };
    try {
      for (let i = 0; i < 4; i++) await round();
      const before = [await spent('run-1'), await spent('run-2')];
      for (let i = 0; i < 8; i++) await round();
      expect(guards.map((g) => g.costOf(OP))).toEqual([1, 1, 1]);
      // Once learned, each call is charged 1: 2 a round to run-1, 1 to run-2.
      expect([(await spent('run-1')) - before[0]!, (await spent('run-2')) - before[1]!]).toEqual([16, 8]);
      // The samples stay bounded, and are the account's newest.
      expect(await one(s.pool, 'SELECT count(*) AS n FROM credit_cost_samples')).toBe(32);
      expect(await one(s.pool, 'SELECT min(credits_used) AS n FROM credit_cost_samples')).toBe(used - 31);
    } finally {
      for (const g of guards) g.close();
    }
  }, 30_000);

  it('a turn asked while the one before it waits for a connection is written after it: a block\'s row goes only once its calls\' charges are in the spend', async () => {
    const s = await setUp(1, 'shared_cost_turn_order');
    await (await openPgStore(s.url)).close();
    // The pool's next connection waits for `open`, as a new one opening while an idle one goes to a later turn (CI:
    // 41 and 44 billed and spent at a cap of 40); the connection after it tells when its turn is written.
    let held: { asked: () => void; open: Promise<void> } | null = null;
    let next: { asked: boolean; written: () => void } | null = null;
    const pool = {
      query: s.pool.query.bind(s.pool),
      connect: async () => {
        const h = held;
        const n = h ? null : next;
        held = null;
        if (h) {
          h.asked();
          await h.open;
        }
        const client = await s.pool.connect();
        if (!n) return client;
        n.asked = true;
        const release = client.release.bind(client);
        return Object.assign(client, { release: (err?: Error | boolean) => (release(err), n.written()) });
      },
    } as unknown as Setup['pool'];
    const budget = new SharedCreditBudget(pool, { apiUrl: 'https://api.example', runKey: 'run-1', workerId: 'a', blockCalls: 2, settleDelayMs: 0 });
    const limits = { reserve: 0, maxPerRun: 2 };
    const price = () => ({ cost: 1, probe: false });
    try {
      await budget.report(counters(0));
      // One block of both calls the cap allows.
      const [r1, r2] = [await budget.acquire(price, limits), await budget.acquire(price, limits)];
      expect([r1, r2]).toMatchObject([{ cost: 1 }, { cost: 1 }]);
      await budget.hurry();
      let open = () => undefined as void;
      const asked = new Promise<void>((asked) => (held = { asked, open: new Promise<void>((resolve) => (open = resolve)) }));
      const written = new Promise<void>((resolve) => (next = { asked: false, written: resolve }));
      // The first call's charge waits for its connection; the second's empties the block, and a third call asks.
      const charged = [budget.settle(r1 as { id: number; cost: number }, { cost: 1 })];
      await asked;
      charged.push(budget.settle(r2 as { id: number; cost: number }, { cost: 1 }));
      const third = budget.acquire(price, limits);
      // A later turn asks for its connection within these turns of the event loop (no I/O between): let it be written first.
      for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
      if (next!.asked) await written;
      open();
      await Promise.all(charged);
      // Both calls are in the spend before any block is reserved against it: the third call does not fit.
      expect(await third).toMatchObject({ stop: 'max-per-run', figures: { spent: 2 } });
      expect(await one(s.pool, `SELECT spent AS n FROM credit_run_spend WHERE run_key = 'run-1'`)).toBe(2);
    } finally {
      await budget.close();
    }
  }, 10_000);

  it.each([['no balance reported yet', false], ['the last report older than a reservation\'s life', true]])('a worker\'s balance read while another\'s first call is in flight (%s) is not recorded: that call is charged, not lost below the read', async (_, stale) => {
    const s = await setUp(1, 'shared_cost_seed_race');
    await (await openPgStore(s.url)).close();
    const limits = { reserve: 0, maxPerRun: 40 };
    const start = 500;
    // A report from an hour ago: the growth since it is not known to be ours, as with none.
    if (stale) await s.pool.query(`INSERT INTO account_balance (api_url, balance, credits_used, total_credits, reported_at)
      VALUES ('https://api.example', ${TOTAL - start + 10}, ${start - 10}, ${TOTAL}, clock_timestamp() - interval '1 hour')`);
    const guard = (workerId: string) => new SharedCreditGuard(limits, { lastCreditsUsed: start }, new SharedCreditBudget(s.pool, { apiUrl: 'https://api.example', runKey: 'run-1', workerId }));
    const [a, b] = [guard('a'), guard('b')];
    try {
      // a could not read the balance (its check timed out): its first call goes alone, and is charged first.
      const first = await a.acquire(OP);
      let used = start + 1;
      // b reads the balance after that charge, then asks for room while a's call is still out.
      expect(b.seed(counters(used))).toBe(true);
      const second = b.acquire(OP);
      a.settle(first!, counters(start + 1));
      await a.drained();
      b.settle((await second)!, counters(++used));
      await Promise.all([a.finish(), b.finish()]);
      // Two calls billed, 1 each: charged 1 and 1 (a's was charged 0 once b's read became the first counter, so the run could pass its cap by a call).
      expect([a.spent, b.spent]).toEqual([1, 1]);
      expect(await one(s.pool, `SELECT spent AS n FROM credit_run_spend WHERE run_key = 'run-1'`)).toBe(used - start);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 30_000);

  it.each([['no report within a reservation\'s life', false], ['the last report of another total', true]])('two calls in flight with %s: the one billed first but answered last is charged, not lost below the other\'s counter', async (_, otherTotal) => {
    const s = await setUp(1, 'shared_cost_first_report');
    await (await openPgStore(s.url)).close();
    const apiUrl = 'https://api.example';
    const start = 500;
    // The balance is known (an hour-old report, or a fresh one of the plan before), so blocks go out together,
    // but no counter of this plan within a reservation's life says where the account's growth starts.
    await s.pool.query(`INSERT INTO account_balance (api_url, balance, credits_used, total_credits, reported_at)
      VALUES ($1, 5000, ${start - 10}, ${otherTotal ? TOTAL - 1 : TOTAL}, clock_timestamp() - interval '${otherTotal ? 0 : 1} hour')`, [apiUrl]);
    const limits = { reserve: 0, maxPerRun: 2 };
    const price = () => ({ cost: 1, probe: false });
    const budget = (workerId: string) => new SharedCreditBudget(s.pool, { apiUrl, runKey: 'run-1', workerId, blockCalls: 1, settleDelayMs: 0 });
    const [a, b] = [budget('a'), budget('b')];
    const answer = (used: number) => ({ cost: 1, counters: counters(used), sample: { operation: OP, creditsUsed: used } });
    try {
      const [r1, r2] = [await a.acquire(price, limits), await b.acquire(price, limits)] as Array<{ id: number; cost: number }>;
      expect([r1, r2]).toMatchObject([{ cost: 1 }, { cost: 1 }]);
      // The service bills a's call first (start + 1), then b's (start + 2); b's answer comes first.
      const second = await b.settle(r2!, answer(start + 2));
      const first = await a.settle(r1!, answer(start + 1));
      // Both billed 1: a's was charged 0 (its counter under b's, the growth "already reported"), and the cap of 2 let a third call go.
      expect([first.cost, second.cost]).toEqual([1, 1]);
      expect(await one(s.pool, `SELECT spent AS n FROM credit_run_spend WHERE run_key = 'run-1'`)).toBe(2);
      expect(await a.acquire(price, limits)).toMatchObject({ stop: 'max-per-run' });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 30_000);

  it('a run\'s end sends the settles it waits for at once, not after the settle delay', async () => {
    const s = await setUp(1, 'shared_cost_flush');
    await (await openPgStore(s.url)).close();
    // An hour's delay: a finish() that waited it out would fail the test by its timeout.
    const budget = new SharedCreditBudget(s.pool, { apiUrl: 'https://api.example', runKey: 'run-1', workerId: 'a', settleDelayMs: 3_600_000 });
    const g = new SharedCreditGuard({ reserve: 0, maxPerRun: null }, {}, budget);
    try {
      for (let used = 1; used <= 2; used++) g.settle((await g.acquire(OP))!, counters(used));
      await g.finish();
      expect(await one(s.pool, 'SELECT count(*) AS n FROM credit_cost_samples')).toBe(2);
      expect(await one(s.pool, 'SELECT count(*) AS n FROM credit_reservations WHERE cost > 0')).toBe(0);
    } finally {
      await g.close();
    }
  }, 10_000);

  it('a worker that has not called yet reserves at the cost the account\'s samples show: another holding calls in flight does not starve it', async () => {
    const s = await setUp(1, 'shared_cost_first_block');
    await (await openPgStore(s.url)).close();
    const apiUrl = 'https://api.example';
    // 100 credits above the reserve; the samples show 1 a call, 5 is assumed before any does.
    const limits = { reserve: 200, maxPerRun: null };
    const assumed = CREDIT_METER_DEFAULTS.defaultCostPerCall;
    let used = TOTAL - 300;
    // a reserves call by call, so the room it leaves is exact; b with the default blocks, as a run's worker does.
    const a = new SharedCreditGuard(limits, {}, new SharedCreditBudget(s.pool, { apiUrl, runKey: 'run-1', workerId: 'a', blockCalls: 1 }));
    const budgetB = new SharedCreditBudget(s.pool, { apiUrl, runKey: 'run-1', workerId: 'b' });
    const b = new SharedCreditGuard(limits, {}, budgetB);
    const room = () => one(s.pool, `SELECT (SELECT balance FROM account_balance) - (SELECT coalesce(sum(cost), 0) FROM credit_reservations) - ${limits.reserve} AS n`);
    const held: Reservation[] = [];
    let asked: Promise<Reservation | null> | null = null;
    try {
      a.seed(counters(used));
      b.seed(counters(used));
      // a's answers, one at a time, until the account's samples show the cost.
      while (!a.knowsCost(OP)) {
        const r = await a.acquire(OP);
        a.settle(r!, counters(++used));
        await a.drained();
      }
      expect(a.costOf(OP)).toBe(1);
      // a holds calls in flight (as a gated server would) until less than the assumed cost is left above the reserve.
      while ((await room()) >= assumed) held.push((await a.acquire(OP))!);
      expect(await room()).toBeGreaterThanOrEqual(1);
      // b's first ask for room, whatever it gets: refused, b would wait on a's calls, and a could spend the rest alone.
      const firstAsk = new Promise<ReserveAttempt>((resolve) => {
        const budget = budgetB as unknown as { reserveBlock: (...args: unknown[]) => Promise<ReserveAttempt> };
        const reserveBlock = budget.reserveBlock.bind(budgetB);
        vi.spyOn(budget, 'reserveBlock').mockImplementation((...args: unknown[]) => {
          const attempt = reserveBlock(...args);
          resolve(attempt);
          return attempt;
        });
      });
      asked = b.acquire(OP);
      const attempt = await firstAsk;
      expect(attempt.reservation, `refused (${'reason' in attempt ? attempt.reason : ''}) with ${attempt.figures.inFlight} calls in flight`).not.toBeNull();
      expect(attempt.reservation!.cost).toBe(1);
      expect((await asked)?.cost).toBe(1);
      expect(b.costOf(OP)).toBe(1);
      // The reserve holds: what is held and left is within the 100 credits, none of the reserve.
      expect(await room()).toBeGreaterThanOrEqual(0);
    } finally {
      // Nothing billed: with nothing in flight b's call would go (as a probe) on main too, so nothing is left waiting.
      for (const r of held) a.settle(r, null);
      const late = await asked?.catch(() => null);
      if (late) b.settle(late, null);
      await Promise.all([a.close(), b.close()]);
    }
  }, 30_000);

  it('two workers started together on a job spend close to its credits.maxPerRun, never past it', async () => {
    const charged = await cappedWorkers('shared_cost_run', [undefined, undefined]);
    expect(await one(charged.pool, 'SELECT count(DISTINCT run_key) AS n FROM worker_runs')).toBe(1);
    // Each post costs 1: calls go on until the cap is reached, less what the first answers' estimates
    // overcounted (a few calls, each worker's in flight at most).
    expect(charged.total).toBeLessThanOrEqual(MAX_PER_RUN);
    expect(charged.total).toBeGreaterThanOrEqual(MAX_PER_RUN - 2 * CONCURRENCY);
  }, 120_000);

  it('two runs of their own on one account at once each spend close to their credits.maxPerRun, never past it', async () => {
    const charged = await cappedWorkers('shared_cost_runs', ['nightly-a', 'nightly-b']);
    const spent = (await charged.pool.query<{ spent: number }>('SELECT spent FROM credit_run_spend ORDER BY run_key')).rows.map((r) => r.spent);
    expect(spent).toHaveLength(2);
    for (const x of spent) expect(x).toBeLessThanOrEqual(MAX_PER_RUN);
    expect(charged.total).toBeLessThanOrEqual(2 * MAX_PER_RUN);
    expect(charged.total).toBeGreaterThanOrEqual(2 * (MAX_PER_RUN - CONCURRENCY));
  }, 120_000);
});
