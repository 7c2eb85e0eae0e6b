import { describe, expect, it } from 'vitest';
import pg from 'pg';
import type { CreditLimits } from '../../src/credits/credit-guard.ts';
import { SharedCreditBudget, type BudgetFigures, type SharedReservation } from '../../src/store/pg/coordination/shared-credit-budget.ts';
import { coordinationTestBed, startWorker, waitFor } from './coordination-fixtures.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';

const bed = coordinationTestBed();
const workers = bed.workers;

async function budgetDatabase(): Promise<{ url: string; pool: pg.Pool }> {
  const { url, pool } = await bed.database('credits');
  // The service's side of each account: what it has charged.
  await pool.query(`CREATE TABLE fake_account (api_url text PRIMARY KEY, credits_used numeric NOT NULL, total_credits numeric NOT NULL)`);
  await pool.query(`CREATE TABLE go (go int)`);
  return { url, pool };
}

/** The account's figures as every worker sees them now (live reservations only). */
async function figuresOf(pool: pg.Pool, apiUrl: string, runKey = 'run'): Promise<BudgetFigures> {
  const { rows } = await pool.query(`SELECT (SELECT balance FROM account_balance WHERE api_url = $1) AS balance,
    coalesce(sum(cost), 0)::float8 AS reserved, count(*)::int AS "inFlight",
    coalesce((SELECT spent FROM credit_run_spend WHERE run_key = $2), 0)::float8 AS spent
    FROM credit_reservations WHERE api_url = $1 AND expires_at > clock_timestamp()`, [apiUrl, runKey]);
  return rows[0] as BudgetFigures;
}

/** One attempt to reserve `cost` for one call (no probe), as acquire() makes each. */
const tryReserve = (budget: SharedCreditBudget, cost: number, limits: CreditLimits) => budget.reserveBlock(cost, 1, limits, false);

const counters = (used: number, total: number) => ({ credits_used: used, total_credits: total, credits_remaining: total - used });

describe.skipIf(!pgClusterUrl)(`the shared credit budget on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('counts every worker\'s reservations against the reserve; a dead worker\'s stop counting when they expire', async () => {
    const { pool } = await budgetDatabase();
    const apiUrl = 'https://api.example';
    const limits = { reserve: 200, maxPerRun: null };
    const dead = new SharedCreditBudget(pool, { apiUrl, runKey: 'run', workerId: 'dead', reservationMs: 1_500 });
    const live = new SharedCreditBudget(pool, { apiUrl, runKey: 'run', workerId: 'live', reservationMs: 1_500 });
    // Balance unknown: one call at a time on the account, whoever makes it.
    const first = await tryReserve(dead, 5, limits);
    expect(first.reservation).not.toBeNull();
    expect(await tryReserve(live, 5, limits)).toMatchObject({ reservation: null, reason: 'learning' });
    await dead.settle(first.reservation!, { cost: 2, counters: counters(792, 1_000) });
    expect(await figuresOf(pool, apiUrl)).toEqual({ balance: 208, reserved: 0, inFlight: 0, spent: 2 });
    // A late answer (a lower counter) does not give back credits a later answer showed spent.
    const late = await tryReserve(live, 1, { reserve: 0, maxPerRun: null });
    await live.settle(late.reservation!, { cost: 1, counters: counters(791, 1_000) });
    expect(await figuresOf(pool, apiUrl)).toEqual({ balance: 208, reserved: 0, inFlight: 0, spent: 3 });

    const held = await tryReserve(dead, 5, limits);
    expect(held.reservation).not.toBeNull();
    // 208 - 5 held by `dead` - 5 < 200: refused while dead's reservation lives, renewed or not.
    expect(await tryReserve(live, 5, limits)).toMatchObject({ reservation: null, reason: 'reserve', figures: { reserved: 5, inFlight: 1 } });
    expect(await dead.renew()).toBe(1);
    // Restarted under the same id, the worker does not keep its dead self's reservation alive.
    expect(await new SharedCreditBudget(pool, { apiUrl, runKey: 'run', workerId: 'dead', reservationMs: 1_500 }).renew()).toBe(0);
    const expiry = async () => (await pool.query(`SELECT expires_at FROM credit_reservations WHERE worker_id = 'dead'`)).rows[0].expires_at as Date;
    const deadUntil = await expiry();
    expect((await tryReserve(live, 5, limits)).reservation).toBeNull();
    // `dead` stops renewing (killed): once its reservation expires, `live` may reserve, and not before.
    let grantedAt = 0;
    let granted: SharedReservation | null = null;
    await waitFor(async () => {
      const attempt = await tryReserve(live, 5, limits);
      if (attempt.reservation) grantedAt = (await pool.query(`SELECT created_at FROM credit_reservations WHERE worker_id = 'live'`)).rows[0].created_at.getTime();
      granted = attempt.reservation;
      return attempt.reservation !== null;
    }, 30_000, 'the dead worker\'s reservation to expire');
    expect(grantedAt).toBeGreaterThanOrEqual(deadUntil.getTime());
    // An answer without counters is charged at its cost.
    const unread = await tryReserve(live, 5, { reserve: 0, maxPerRun: null });
    await live.settle(unread.reservation!, { cost: 3 });
    expect((await figuresOf(pool, apiUrl)).balance).toBe(205);
    // A balance read of another total while a call is in flight is not recorded: that call may be charged within
    // the read, below its counter. Once none is, a renewal (another total) is taken even with a lower counter.
    await live.report(counters(4, 2_000));
    expect((await figuresOf(pool, apiUrl)).balance).toBe(205);
    await live.settle(granted!, { cost: 0 });
    await live.report(counters(4, 2_000));
    expect((await figuresOf(pool, apiUrl)).balance).toBe(1_996);
  });

  it('a late answer of the previous plan does not flip the balance back: a lowered plan still stops at the reserve', async () => {
    const { pool } = await budgetDatabase();
    const apiUrl = 'https://api.example';
    const free = { reserve: 0, maxPerRun: null };
    const old = new SharedCreditBudget(pool, { apiUrl, runKey: 'run', workerId: 'old' });
    const next = new SharedCreditBudget(pool, { apiUrl, runKey: 'run', workerId: 'next' });
    const first = await tryReserve(old, 5, free);
    await old.settle(first.reservation!, { cost: 5, counters: counters(900, 1_000) });
    // A call sent under the plan of 1,000, answered late; then the plan is lowered to 950 and a later call shows it.
    const late = await tryReserve(old, 5, free);
    const after = await tryReserve(next, 5, free);
    await next.settle(after.reservation!, { cost: 5, counters: counters(900, 950) });
    expect((await figuresOf(pool, apiUrl)).balance).toBe(50);
    await old.settle(late.reservation!, { cost: 5, counters: counters(895, 1_000) });
    // 50 left under a reserve of 60: no call may go (the old plan's 105 would let one through).
    expect(await tryReserve(next, 5, { reserve: 60, maxPerRun: null })).toMatchObject({ reservation: null, reason: 'reserve' });
    const stored = (await pool.query('SELECT balance, credits_used, total_credits FROM account_balance')).rows[0];
    expect(stored).toEqual({ balance: 50, credits_used: 900, total_credits: 950 });
    // A call sent after the lowered plan's report may still change the plan (a top-up).
    const early = await tryReserve(old, 1, free);
    const topUp = await tryReserve(next, 1, free);
    await next.settle(topUp.reservation!, { cost: 1, counters: counters(901, 2_000) });
    expect((await figuresOf(pool, apiUrl)).balance).toBe(1_099);
    // Another plan from a call sent before that report, whether late or new, gives only a lower balance (errs safe).
    await old.settle(early.reservation!, { cost: 1, counters: counters(900, 1_500) });
    expect((await pool.query('SELECT balance, credits_used, total_credits FROM account_balance')).rows[0])
      .toEqual({ balance: 600, credits_used: 901, total_credits: 2_000 });
  });

  it('a turn of more answers than the samples kept writes only the newest: the account\'s last 32, and its cost', async () => {
    const { url } = await budgetDatabase();
    // The budget on one connection, whose table statistics are sent on demand (PostgreSQL 15+).
    const own = new pg.Pool({ connectionString: url, max: 1 });
    try {
      const apiUrl = 'https://samples.example';
      const budget = new SharedCreditBudget(own, { apiUrl, runKey: 'run', workerId: 'w', blockCalls: 64 });
      await budget.report(counters(0, 1_000));
      const inserted = async () => {
        await own.query('SELECT pg_stat_force_next_flush()');
        return Number((await own.query(`SELECT n_tup_ins AS n FROM pg_stat_user_tables WHERE relname = 'credit_cost_samples'`)).rows[0].n);
      };
      const calls = [];
      for (let i = 0; i < 40; i++) {
        const r = await budget.acquire(() => ({ cost: 1, probe: false }), { reserve: 0, maxPerRun: null });
        if ('stop' in r) throw new Error(`stopped: ${r.stop}`);
        calls.push(r);
      }
      const before = await inserted();
      // Settled in one turn, counters 1..40 (a call each).
      const settled = await Promise.all(calls.map((r, i) => budget.settle(r, { cost: 1, counters: counters(i + 1, 1_000), sample: { operation: 'post-details', creditsUsed: i + 1 } })));
      expect(settled.map((x) => x.learnedCost)).toEqual(calls.map(() => 1));
      const { rows } = await own.query(`SELECT credits_used AS used FROM credit_cost_samples WHERE api_url = $1 ORDER BY id`, [apiUrl]);
      expect(rows.map((r: { used: number }) => Number(r.used))).toEqual(Array.from({ length: 32 }, (_, i) => i + 9));
      // The 8 older ones, which the trim would delete at once, were never written.
      expect(await inserted() - before).toBe(32);
      await budget.close();
    } finally {
      await own.end();
    }
  });

  it('four worker processes never take the account below the reserve, nor the run past maxPerRun, and use what is there', async () => {
    const { url, pool } = await budgetDatabase();
    const estimate = 5;
    // Calls cost their estimate on one account (no slack: two workers granting the last room at once would show),
    // less than it on the other.
    const reserveCase = { apiUrl: 'https://reserve.example', runKey: 'run-a', reserve: 200, maxPerRun: null, exactCost: true };
    const capCase = { apiUrl: 'https://cap.example', runKey: 'run-b', reserve: 0, maxPerRun: 300, exactCost: false };
    await pool.query(`INSERT INTO fake_account VALUES ($1, 0, 1000), ($2, 0, 100000)`, [reserveCase.apiUrl, capCase.apiUrl]);
    // A slow server: each reservation takes a few ms to write, so the checks of workers reserving at once overlap
    // (without the lock, two would grant the last room between them).
    await pool.query(`CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.003); RETURN NEW; END $$`);
    await pool.query(`CREATE TRIGGER slow_reservations BEFORE INSERT ON credit_reservations FOR EACH ROW EXECUTE FUNCTION slow_insert()`);
    // The balance read before the first call (as the run's free GET /v1/api/auth does).
    await new SharedCreditBudget(pool, { ...reserveCase, workerId: 'setup' }).report(counters(0, 1_000));
    await new SharedCreditBudget(pool, { ...capCase, workerId: 'setup' }).report(counters(0, 100_000));
    const started = Array.from({ length: 4 }, (_, i) =>
      startWorker('budget-worker.ts', { url, workerId: `w${i}`, lanes: 4, estimate, scenarios: [reserveCase, capCase] }));
    workers.push(...started);
    await waitFor(async () => started.every((w) => w.stdout().includes('ready') || w.child.exitCode !== null), 60_000, 'workers to start');
    await pool.query('INSERT INTO go VALUES (1)');
    const stops: string[] = [];
    for (const w of started) {
      expect(await w.exited, w.stderr()).toBe(0);
      stops.push(...(JSON.parse(w.stdout().split('\n').filter(Boolean).at(-1)!) as { stops: string[] }).stops);
    }
    expect(stops.filter((s) => s === 'reserve')).toHaveLength(16);
    expect(stops.filter((s) => s === 'max-per-run')).toHaveLength(16);
    const spent = async (apiUrl: string) => Number((await pool.query(`SELECT credits_used FROM fake_account WHERE api_url = $1`, [apiUrl])).rows[0].credits_used);
    // Never past balance - reserve (1000 - 200), and stopped only when no call of the estimate fitted.
    const spentA = await spent(reserveCase.apiUrl);
    expect(spentA).toBeLessThanOrEqual(800);
    expect(spentA).toBeGreaterThan(800 - estimate);
    const spentB = await spent(capCase.apiUrl);
    expect(spentB).toBeLessThanOrEqual(300);
    expect(spentB).toBeGreaterThan(300 - estimate);
    // The run's spend as the budget counted it is the service's.
    const figures = await figuresOf(pool, capCase.apiUrl, capCase.runKey);
    expect(figures).toEqual({ balance: 100_000 - spentB, reserved: 0, inFlight: 0, spent: spentB });
  }, 90_000);
});
