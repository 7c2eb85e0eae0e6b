import { describe, expect, it } from 'vitest';
import type pg from 'pg';
import { SharedCreditBudget, type SharedReservation } from '../../src/store/pg/coordination/shared-credit-budget.ts';
import { SharedCreditGuard } from '../../src/store/pg/shared-credit-guard.ts';
import { coordinationTestBed, waitFor } from './coordination-fixtures.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';

const bed = coordinationTestBed();
const counters = (used: number, total: number) => ({ credits_used: used, total_credits: total, credits_remaining: total - used });
const known = () => ({ cost: 1, probe: false });
const OP = 'post-details' as const;

/** The cost each reservation row of `worker` holds, oldest first. */
async function rowsOf(pool: pg.Pool, worker: string): Promise<number[]> {
  const { rows } = await pool.query(`SELECT cost FROM credit_reservations WHERE worker_id = $1 ORDER BY id`, [worker]);
  return rows.map((r: { cost: number }) => Number(r.cost));
}

describe.skipIf(!pgClusterUrl)(`the shared credit budget's block asked ahead${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('keeps granting a process\'s calls while a reservation\'s round trip is held, from the block asked before the last one ran out', async () => {
    const { pool } = await bed.database('ahead');
    const apiUrl = 'https://ahead.example';
    const limits = { reserve: 0, maxPerRun: null };
    const budget = new SharedCreditBudget(pool, { apiUrl, runKey: 'run', workerId: 'w', blockCalls: 4 });
    await budget.report(counters(0, 1_000));
    const granted: SharedReservation[] = [];
    const take = async () => {
      const r = await budget.acquire(known, limits);
      if ('stop' in r) throw new Error(`stopped: ${r.stop}`);
      granted.push(r);
    };
    await take();
    // The first call's settle waits for the next turn: the one that carries the block asked ahead (half of 4 left).
    const firstSettled = budget.settle(granted[0]!, { cost: 1 });
    await take();
    await firstSettled;
    // The first block (3: the second call and 2 calls' room) and the block asked ahead, none of it drawn yet.
    expect(await rowsOf(pool, 'w')).toEqual([3, 4]);

    // The account's lock held elsewhere: no reservation's round trip can end meanwhile.
    const gate = await pool.connect();
    try {
      await gate.query('BEGIN');
      await gate.query(`SELECT pg_advisory_xact_lock(hashtextextended('netingest.credits:' || $1::text, 0))`, [apiUrl]);
      // Two calls from the first block, four from the one asked ahead (whose own next block waits on the lock).
      for (let i = 0; i < 6; i++) await take();
      const ids = granted.map((r) => r.id);
      expect(new Set(ids.slice(0, 4)).size).toBe(1);
      expect(new Set(ids.slice(4)).size).toBe(1);
      expect(ids[4]).not.toBe(ids[0]);
      // Both blocks are drawn out: the next call needs the block asked once the second fell to half.
      const ninth = take();
      await gate.query('COMMIT');
      await ninth;
    } finally {
      gate.release();
    }
    expect(new Set(granted.map((r) => r.id)).size).toBe(3);

    // Every call settled and the budget closed: the room of the third block (asked ahead) goes back, no row stays.
    const settled = granted.slice(1).map((r) => budget.settle(r, { cost: 1 }));
    await budget.close();
    await Promise.all(settled);
    expect(await rowsOf(pool, 'w')).toEqual([]);
    const { rows } = await pool.query(`SELECT (SELECT balance FROM account_balance WHERE api_url = $1) AS balance,
      (SELECT spent FROM credit_run_spend WHERE run_key = 'run') AS spent`, [apiUrl]);
    expect(rows[0]).toEqual({ balance: 991, spent: 9 });
  });

  it('asks no block ahead when fewer than two blocks\' worth of calls are left: the room stays for another worker', async () => {
    const { pool } = await bed.database('ahead');
    const apiUrl = 'https://small.example';
    const limits = { reserve: 0, maxPerRun: null };
    const a = new SharedCreditBudget(pool, { apiUrl, runKey: 'run', workerId: 'a', blockCalls: 4 });
    const b = new SharedCreditBudget(pool, { apiUrl, runKey: 'run', workerId: 'b', blockCalls: 4 });
    await a.report(counters(989, 1_000));
    const first = await a.acquire(known, limits);
    if ('stop' in first) throw new Error(`stopped: ${first.stop}`);
    const firstSettled = a.settle(first, { cost: 1 });
    // Half of the block left: the next block would be asked now, but 10 - 3 held leaves 7 calls, under 2 x 4.
    expect('stop' in (await a.acquire(known, limits))).toBe(false);
    await firstSettled;
    expect(await rowsOf(pool, 'a')).toEqual([3]);
    // Another worker gets a whole block (a block taken ahead by `a` would have left it 3).
    expect('stop' in (await b.acquire(known, limits))).toBe(false);
    expect(await rowsOf(pool, 'b')).toEqual([4]);
    await Promise.all([a.close(), b.close()]);
  });

  it('gives back the block asked ahead when the run stops on credits, its calls in flight still held', async () => {
    const { pool } = await bed.database('ahead');
    const budget = new SharedCreditBudget(pool, { apiUrl: 'https://stop.example', runKey: 'run', workerId: 'g', blockCalls: 4 });
    // The cost earlier runs learned: known, so a block may be asked ahead (never for a probe).
    const guard = new SharedCreditGuard({ reserve: 0, maxPerRun: null }, { costs: { [OP]: 1 } }, budget);
    try {
      guard.seed(counters(0, 1_000));
      expect(await guard.acquire(OP)).not.toBeNull();
      expect(await guard.acquire(OP)).not.toBeNull();
      // Half of the first block left: the next one is asked in the background.
      await waitFor(async () => (await rowsOf(pool, 'g')).length === 2, 20_000, 'the block asked ahead');
      expect(await rowsOf(pool, 'g')).toEqual([4, 4]);
      guard.markOutOfCredits();
      await guard.drained();
      // The two calls in flight stay held until settled; the rest of both blocks went back.
      expect(await rowsOf(pool, 'g')).toEqual([2]);
    } finally {
      await guard.close();
    }
  });
});
