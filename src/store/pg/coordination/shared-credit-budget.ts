/**
 * An account's credit reserve and `maxPerRun` across workers: under one advisory lock per account a call fits only if
 * balance - all reserved - cost >= reserve. Reservations expire unless renewed (a dead worker's stop counting); costs
 * come from all workers' counters, as each steps by all their calls.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import type { CreditCounters, Operation } from '../../../spec/types.ts';
import { medianStep, reportedBalance } from '../../../credits/credit-meter.ts';
import type { CreditLimits } from '../../../credits/credit-guard.ts';
import { namedQuery, pipelineTransaction, type BoundStatement } from '../pg-pipeline.ts';
import { withPgClient } from '../transaction.ts';

export const SHARED_CREDIT_BUDGET_DEFAULTS = {
  /** How long a reservation counts without renewal: longer than a call may take, retries included. */
  reservationMs: 5 * 60_000,
  /** Renewals per reservation period (keepRenewed). */
  renewalsPerReservation: 3,
  /** How often a refused caller looks again while other calls are in flight (their real cost may leave room). */
  pollMs: 50,
  /** Slack for float sums of fractional costs. */
  epsilon: 1e-9,
  /** Recent credits_used counters kept per account and operation, all workers and runs together. */
  costSamples: 32,
  /** Steps among them before their median is the call's cost (see SettledCharge.learnedCost). */
  minCostSteps: 3,
  /** Calls per reserved block (fewer if fewer fit): drawing from it needs no round trip; each block costs a turn (~10 statements). */
  blockCalls: 64,
  /** How long settles wait to share a turn (each a round trip under the account's lock); a reservation held meanwhile only errs safe. */
  settleDelayMs: 100,
  /**
   * Share of a block's room left in this process's blocks when the next is asked in the background; half a block lasts
   * several round trips. 0: only when a call finds no room, which then waits a round trip.
   */
  aheadAt: 0.5,
  /**
   * Blocks' worth of calls that must fit under the reserve and maxPerRun, besides what every worker holds, for a block
   * to be asked ahead: else it could leave the other workers, or this one's next call, less than a block.
   */
  aheadRoomBlocks: 2,
} as const;

export interface SharedCreditBudgetOptions {
  /** The account's API URL: the budget is per account, shared by every job and worker using it. */
  apiUrl: string;
  /** The shared run the worker belongs to (the same for all its workers): what `maxPerRun` counts. */
  runKey: string;
  workerId: string;
  reservationMs?: number;
  pollMs?: number;
  blockCalls?: number;
  settleDelayMs?: number;
}

/** A call's claim on the shared balance (drawn from the reservation `id`); hand it back with settle(). */
export type SharedReservation = { readonly id: number; readonly cost: number };

/** A reservation row of this process: its calls in flight and the room not drawn yet (its row's cost is both). */
type Block = { readonly id: number; remaining: number; inFlight: number; readonly since: string | null };

/** A settle waiting for the end of the turn. */
interface SettleAsk {
  charge: SharedCharge;
  /** Only the charge's sample is recorded: nothing is charged, no reservation given back, no balance reported. */
  sampleOnly?: boolean;
  /** When its block was reserved (the server's clock): its call was sent after (see REPORT_SQL); null: unknown. */
  since?: string | null;
  resolve: (settled: SettledCharge) => void;
  reject: (err: unknown) => void;
}

/**
 * The figures a reservation was decided on: the last balance reported (null: none), every worker's live reservations
 * (credits, count), the run's spend.
 */
export type BudgetFigures = { balance: number | null; reserved: number; inFlight: number; spent: number };

export type SharedCreditStopReason = 'reserve' | 'max-per-run';

/** What a reservation attempt gave: the reservation, or why not (`learning`: balance unknown, a call is in flight). */
export type ReserveAttempt =
  | { reservation: SharedReservation; figures: BudgetFigures }
  | RefusedAttempt;

/** A reservation refused: why, and the account's figures it was decided on. */
export type RefusedAttempt = { reservation: null; reason: SharedCreditStopReason | 'learning'; figures: BudgetFigures };

/**
 * What a call was charged: `cost` (0 when nothing was billed) and the answer's counters. `sample` makes a readable
 * counter one of the account's cost samples and caps the charge at what the account's counters grew by (settleSql).
 */
export interface SharedCharge {
  cost: number;
  counters?: CreditCounters | null;
  /** `recorded`: the counter is among the samples already (see sample()): only the charge goes now. */
  sample?: { operation: Operation; creditsUsed: number; recorded?: boolean };
}

/** What settle() charged the run, and the operation's cost as the account's samples show it (null: too few yet). */
export type SettledCharge = { cost: number; learnedCost: number | null };

/** The account's cost samples of some operations, a row each (`op`, `used`): sampledCosts reads their costs. */
const SAMPLES_SQL = `SELECT operation AS op, array_agg(credits_used) AS used FROM credit_cost_samples
  WHERE api_url = $1::text AND operation = ANY($2::text[]) GROUP BY operation`;

/** Each operation's cost as its samples show it (medianStep in credit-meter.ts: the one rule); null: too few yet. */
function sampledCosts(rows: ReadonlyArray<{ op: string; used: number[] }>): Map<string, number | null> {
  return new Map(rows.map((r) => [r.op, medianStep(r.used, { minSteps: SHARED_CREDIT_BUDGET_DEFAULTS.minCostSteps })]));
}

/** The newest `costSamples` samples of each operation, in the order given: the turn's trim would delete the others. */
function newestSamples<T extends { operation: string }>(samples: readonly T[]): T[] {
  const left = new Map<string, number>();
  return samples.toReversed().filter((s) => {
    const n = left.get(s.operation) ?? SHARED_CREDIT_BUDGET_DEFAULTS.costSamples;
    left.set(s.operation, n - 1);
    return n > 0;
  }).reverse();
}

/** The reservation statement's row (see reserveSql). */
type ReserveRow = {
  balance: number | null; reserved: number; in_flight: number; spent: number;
  under_reserve_ok: boolean; cap_ok: boolean; id: string | null; calls: number; since: string | null;
};

/** `value`, checked: only finite numbers reach the database (a float8 takes Infinity and NaN). */
function num(value: number): number {
  if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
  return value;
}

// Values are bound, never written into the text: each statement is prepared once per connection and planned once.
const LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtextextended('netingest.credits:' || $1::text, 0))`;
const EXPIRED_SQL = 'DELETE FROM credit_reservations WHERE api_url = $1::text AND expires_at <= clock_timestamp()';
/** Takes `d` off each reservation `id` (never below zero). */
const RELEASE_SQL = `UPDATE credit_reservations AS r SET cost = greatest(r.cost - v.d, 0)
  FROM unnest($1::bigint[], $2::float8[]) AS v(id, d) WHERE r.id = v.id`;
const EMPTIED_SQL = 'DELETE FROM credit_reservations WHERE id = ANY($1::bigint[])';
/** The samples in the order given (their ids say which are newest). */
const RECORD_SAMPLES_SQL = `INSERT INTO credit_cost_samples (api_url, operation, credits_used, recorded_at)
  SELECT $1::text, s.op, s.used, clock_timestamp() FROM unnest($2::text[], $3::float8[]) WITH ORDINALITY AS s(op, used, ord) ORDER BY s.ord`;
/** Drops an operation's samples past the newest $3. */
const TRIM_SAMPLES_SQL = `DELETE FROM credit_cost_samples WHERE api_url = $1::text AND operation = $2::text AND id <= (
  SELECT id FROM credit_cost_samples WHERE api_url = $1::text AND operation = $2::text ORDER BY id DESC OFFSET $3::int LIMIT 1)`;
/** The balance unknown again (the next call goes alone and shows it) unless reported since $2. */
const FORGET_BALANCE_SQL = 'UPDATE account_balance SET balance = NULL WHERE api_url = $1::text AND reported_at < $2::timestamptz';
/** A charge without counters: the balance falls by it. */
const DECREMENT_SQL = 'UPDATE account_balance SET balance = balance - $2::float8 WHERE api_url = $1::text';
/**
 * The counters of an answer as the balance (see reportSql); `uncharged` is what becomes of the growth no run was
 * charged yet. $1 the account, $2 the balance, $3 credits_used, $4 total_credits, $5 a reservation's life in ms.
 */
/** A report written within a reservation's life (`ms`: its placeholder), so its counters still tell the growth. */
const liveReport = (reportedAt: string, ms = '$5') => `${reportedAt} >= clock_timestamp() - ${ms}::float8 * interval '1 millisecond'`;
const STALE_REPORT = `b.reported_at < clock_timestamp() - $5::float8 * interval '1 millisecond'`;
const reportText = (uncharged: string, recordIf: string, newerPlan: string) => {
  // Another plan not known newer (`newerPlan`) may be a late answer of the old one: only a lower balance is taken.
  const adopt = `(b.credits_used IS NULL OR excluded.total_credits = b.total_credits OR ${newerPlan} OR ${STALE_REPORT})`;
  const taken = (column: string, value: string) => `CASE WHEN ${adopt} THEN ${value} ELSE b.${column} END`;
  return `INSERT INTO account_balance AS b (api_url, balance, credits_used, total_credits, reported_at, credits_counted_from)
  SELECT $1::text, $2::float8, $3::float8, $4::float8, clock_timestamp(), $3::float8 WHERE ${recordIf}
  ON CONFLICT (api_url) DO UPDATE SET balance = CASE WHEN ${adopt} THEN excluded.balance ELSE least(b.balance, excluded.balance) END,
    credits_used = ${taken('credits_used', 'excluded.credits_used')}, total_credits = ${taken('total_credits', 'excluded.total_credits')},
    reported_at = ${taken('reported_at', 'excluded.reported_at')},
    credits_uncharged = ${taken('credits_uncharged', uncharged)},
    credits_counted_from = ${taken('credits_counted_from', `CASE WHEN excluded.total_credits = b.total_credits
      AND ${liveReport('b.reported_at')}
      THEN coalesce(b.credits_counted_from, b.credits_used) ELSE excluded.credits_used END`)}
  WHERE b.credits_used IS NULL OR ${STALE_REPORT}
    OR (excluded.total_credits = b.total_credits AND excluded.credits_used > b.credits_used)
    OR (excluded.total_credits <> b.total_credits AND (${newerPlan} OR excluded.balance < b.balance))`;
};
/**
 * Another plan (total) is taken only from a call sent after the stored report was written ($6: when its block was
 * reserved): a late answer of the old plan would flip the balance and counters back (a downgrade's balance back up
 * past the reserve; the new plan's growth lost, its answers charged the estimate). Till then its answers cost the
 * estimate, and lower the balance when theirs is lower (a downgrade seen by a call sent earlier): that errs safe.
 */
const REPORT_SQL = reportText('CASE WHEN excluded.total_credits = b.total_credits THEN b.credits_uncharged END', 'true',
  '$6::timestamptz > b.reported_at');
/**
 * A balance read outside a call shows the growth of answers not settled yet: it stays to be charged to them (a
 * settle adds its own growth in settleSql). After a while without reports, the growth is no call of ours.
 */
const REPORT_OUTSIDE_CALL_SQL = reportText(`CASE WHEN excluded.total_credits = b.total_credits
    AND ${liveReport('b.reported_at')}
    THEN coalesce(b.credits_uncharged, 0) + greatest(excluded.credits_used - b.credits_used, 0) ELSE 0 END`,
  // Only over a live report of the same plan is the growth known: else a call in flight may be charged within this
  // read, and its answer, under the read's counter, would be charged nothing (41 billed at a cap of 40). Its answer reports.
  `NOT EXISTS (SELECT 1 FROM credit_reservations WHERE api_url = $1::text AND expires_at > clock_timestamp())
    OR EXISTS (SELECT 1 FROM account_balance WHERE api_url = $1::text AND total_credits = $4::float8
      AND ${liveReport('reported_at')})`, 'true');
/**
 * What each of a turn's charges costs the run (see settleSql), added to its spend. $1 account, $2 run, $3 reservation
 * life in ms; one array per charge field: $4 order, $5 cost, $6/$7 counters (null: none read), $8 sample only.
 */
const SPEND_SQL = `WITH prior AS MATERIALIZED (
    SELECT credits_used AS used, total_credits AS total, coalesce(credits_uncharged, 0) AS owed,
      coalesce(credits_counted_from, credits_used) AS known_from FROM account_balance
    WHERE api_url = $1::text AND ${liveReport('reported_at', '$3')}
  ),
  -- A counter at or under known_from may be a call billed before the growth was known (its first report): no growth
  -- shows its cost, so it costs the estimate, else it went free and the cap let one more call through.
  est AS MATERIALIZED (
    SELECT v.ord, CASE WHEN v.sample_only THEN 0 ELSE v.cost END AS e,
      coalesce(v.used IS NOT NULL AND v.total = p.total AND v.used > p.known_from, false) AS counted, v.used
    FROM unnest($4::int[], $5::float8[], $6::float8[], $7::float8[], $8::boolean[]) AS v(ord, cost, used, total, sample_only) LEFT JOIN prior p ON true
  ),
  room AS MATERIALIZED (
    SELECT p.owed + greatest(coalesce((SELECT max(used) FROM est WHERE counted), p.used) - p.used, 0) AS a,
      (SELECT coalesce(sum(e), 0) FROM est WHERE counted) AS asked
    FROM prior p
  ),
  charged AS MATERIALIZED (
    SELECT est.ord, CASE WHEN NOT est.counted THEN est.e
      ELSE least(x.upto, r.a) - least(x.upto - est.e, r.a) END AS cost
    FROM est
    JOIN (SELECT ord, sum(CASE WHEN counted THEN e ELSE 0 END) OVER (ORDER BY ord) AS upto FROM est) x ON x.ord = est.ord
    LEFT JOIN room r ON true
  ),
  owed AS (
    UPDATE account_balance SET credits_uncharged = coalesce((SELECT a - least(asked, a) FROM room), 0) WHERE api_url = $1::text
  ),
  spend AS (
    INSERT INTO credit_run_spend (run_key, api_url, spent, updated_at)
    SELECT $2::text, $1::text, sum(cost), clock_timestamp() FROM charged
    ON CONFLICT (run_key) DO UPDATE SET spent = credit_run_spend.spent + excluded.spent, updated_at = excluded.updated_at
  )
  SELECT ord, cost FROM charged`;
const RENEW_SQL = `UPDATE credit_reservations SET expires_at = clock_timestamp() + $1::float8 * interval '1 millisecond'
  WHERE id = ANY($2::bigint[]) AND worker_id = $3::text AND expires_at > clock_timestamp()`;

/** One account's credit budget as one worker sees it. */
export class SharedCreditBudget {
  private readonly lock: BoundStatement;
  private readonly reservationMs: number;
  private readonly blockCalls: number;
  /** This process's live reservations: only these are renewed (a restart under the same id is another process). */
  private readonly blocks = new Map<number, Block>();
  /** The block ask under way (a caller's or ahead): the callers waiting meanwhile draw from it once it comes. */
  private blockAsked: Promise<void> | null = null;
  /** Whether the last block asked got all its calls: none is asked ahead (near the limits) until one does. */
  private lastBlockFull = false;
  private closed = false;
  /** Reservations asked in this turn of the event loop, sent together at its end. */
  private asked: Array<{ statement: BoundStatement; resolve: (result: pg.QueryResult) => void; reject: (err: unknown) => void }> = [];
  /** Settles asked in this turn, merged; the reservation rows' costs to take off, and the rows to delete. */
  private settling: SettleAsk[] = [];
  private readonly releasedCost = new Map<number, number>();
  private readonly emptied = new Set<number>();
  /** The next turn, and what sends it at the end of this turn of the event loop instead of after settleDelayMs. */
  private turn: { sent: Promise<void>; hurry: () => void } | null = null;
  /**
   * The last turn sent: the next is sent once it is written. Else a later turn (given an idle connection while the
   * earlier one opened a new one) could delete a block's row before the charges of its calls were added to the spend.
   */
  private lastSent: Promise<void> = Promise.resolve();

  constructor(private readonly pool: pg.Pool, private readonly options: SharedCreditBudgetOptions) {
    this.lock = { text: LOCK_SQL, values: [options.apiUrl] };
    this.reservationMs = options.reservationMs ?? SHARED_CREDIT_BUDGET_DEFAULTS.reservationMs;
    this.blockCalls = options.blockCalls ?? SHARED_CREDIT_BUDGET_DEFAULTS.blockCalls;
  }

  /**
   * Reserves a call from this process's blocks or a new one, waiting while any worker's calls in flight may leave room;
   * with none in flight, the stop reason. `beforeWait` (told why) lets the caller settle or learn the cost; true retries
   * at once. `signal` ends the wait (rejects): others' calls may hold the room for minutes, a user's SIGTERM may not wait.
   */
  async acquire(
    price: () => { cost: number; probe: boolean },
    limits: CreditLimits,
    beforeWait?: (refused: RefusedAttempt) => Promise<boolean>,
    signal?: AbortSignal,
  ): Promise<SharedReservation | { stop: SharedCreditStopReason; figures: BudgetFigures }> {
    for (;;) {
      // Priced again each time round: what the caller learned while waiting (beforeWait) counts at once.
      const { cost, probe } = price();
      const drawn = this.draw(cost);
      if (drawn) {
        if (!probe) this.askAhead(cost, limits);
        return drawn;
      }
      // One block asked at a time: the callers of one turn draw from it rather than each taking a block.
      if (this.blockAsked) {
        await this.blockAsked;
        continue;
      }
      const attempt = await this.oneAsk(this.reserveBlock(cost, probe ? 1 : this.blockCalls, limits, probe));
      if (attempt.reservation) return attempt.reservation;
      if (attempt.reason !== 'learning' && attempt.figures.inFlight === 0) return { stop: attempt.reason, figures: attempt.figures };
      if (await beforeWait?.(attempt)) continue;
      await sleep(this.options.pollMs ?? SHARED_CREDIT_BUDGET_DEFAULTS.pollMs, undefined, { signal });
    }
  }

  /** `asked` as the one block ask under way until it settles. */
  private oneAsk<T>(asked: Promise<T>): Promise<T> {
    const settled = asked.then(() => undefined, () => undefined).finally(() => {
      if (this.blockAsked === settled) this.blockAsked = null;
    });
    this.blockAsked = settled;
    return asked;
  }

  /** Asks the next block in the background once this process's blocks are down to `aheadAt`, unless near the limits. */
  private askAhead(cost: number, limits: CreditLimits): void {
    if (this.closed || this.blockAsked || !this.lastBlockFull) return;
    let room = 0;
    for (const b of this.blocks.values()) room += b.remaining;
    if (room > this.blockCalls * cost * SHARED_CREDIT_BUDGET_DEFAULTS.aheadAt + SHARED_CREDIT_BUDGET_DEFAULTS.epsilon) return;
    // A failed ask is the next caller's to meet: it asks for a block of its own when it finds no room.
    const need = SHARED_CREDIT_BUDGET_DEFAULTS.aheadRoomBlocks * this.blockCalls;
    this.oneAsk(this.newBlock(this.reserveSql(cost, this.blockCalls, limits, false, need), cost, 0)).catch(() => undefined);
  }

  /** A call of `cost` drawn from a block with room, or null. */
  private draw(cost: number): SharedReservation | null {
    const eps = SHARED_CREDIT_BUDGET_DEFAULTS.epsilon;
    for (const b of this.blocks.values()) {
      if (b.remaining < cost - eps) continue;
      b.remaining = b.remaining - cost < eps ? 0 : b.remaining - cost;
      b.inFlight += 1;
      return { id: b.id, cost };
    }
    return null;
  }

  /**
   * Reserves room for up to `calls` calls of `cost` (as many as fit, or none), the caller's the first, after giving
   * back the room left in this process's blocks (none of which covers the call). With the balance unknown a call goes
   * only when none is in flight (its answer shows the balance), as in CreditGuard; a `probe` (assumed cost) that does
   * not fit goes alone while the balance is above the reserve, else a small balance never learns the cost.
   */
  async reserveBlock(cost: number, calls: number, limits: CreditLimits, probe: boolean): Promise<ReserveAttempt> {
    this.giveBackRoom();
    const row = await this.newBlock(this.reserveSql(cost, calls, limits, probe), cost, 1);
    const figures: BudgetFigures = { balance: row.balance, reserved: row.reserved, inFlight: row.in_flight, spent: row.spent };
    if (row.id !== null) return { reservation: { id: Number(row.id), cost }, figures };
    const reason = !row.cap_ok ? 'max-per-run' : row.balance === null ? 'learning' : 'reserve';
    return { reservation: null, reason, figures };
  }

  /** Sends a reservation statement; the block it reserved, if any, joins this process's blocks with `drawn` calls in flight. */
  private async newBlock(statement: BoundStatement, cost: number, drawn: 0 | 1): Promise<ReserveRow> {
    const row = (await this.inTurn(statement)).rows[0] as ReserveRow;
    this.lastBlockFull = row.id !== null && row.calls === this.blockCalls;
    if (row.id !== null) this.blocks.set(Number(row.id), { id: Number(row.id), remaining: cost * (row.calls - drawn), inFlight: drawn, since: row.since });
    return row;
  }

  /**
   * The figures, how many calls of `cost` fit under reserve and cap (at most `calls`; one while learning the balance or
   * probing), and their row if at least `need` fit (a block asked ahead needs more: see aheadRoomBlocks).
   */
  private reserveSql(cost: number, calls: number, limits: CreditLimits, probe: boolean, need = 1): BoundStatement {
    // One text per shape (cost zero or not, a cap or not), so each is prepared once.
    const { a, r, w, c, reserve, cap, n, eps, ms, probing, atLeast } = {
      a: '$1::text', r: '$2::text', w: '$3::text', c: '$4::float8', reserve: '$5::float8', probing: '$6::boolean', n: '$7::int', eps: '$8::float8', ms: '$9::float8',
      atLeast: '$10::int', cap: '$11::float8',
    };
    const perCall = (room: string) => (cost > 0 ? `floor((${room} + ${eps}) / ${c})` : `CASE WHEN ${room} + ${eps} >= 0 THEN ${n} ELSE 0 END`);
    const byCap = limits.maxPerRun === null ? `greatest(${n}, ${atLeast})` : perCall(`${cap} - fig.spent - fig.run_reserved`);
    const text = `WITH fig AS MATERIALIZED (
  SELECT (SELECT balance FROM account_balance WHERE api_url = ${a}) AS balance,
    coalesce(sum(cost), 0)::float8 AS reserved,
    coalesce(sum(cost) FILTER (WHERE run_key = ${r}), 0)::float8 AS run_reserved,
    count(*)::int AS in_flight,
    coalesce((SELECT spent FROM credit_run_spend WHERE run_key = ${r}), 0)::float8 AS spent
  FROM credit_reservations WHERE api_url = ${a}
), room AS (
  SELECT fig.*,
    CASE WHEN fig.balance IS NULL THEN (CASE WHEN fig.in_flight = 0 THEN 1 ELSE 0 END)
      ELSE greatest(${perCall(`fig.balance - fig.reserved - ${reserve}`)},
        CASE WHEN ${probing} AND fig.in_flight = 0 AND fig.balance > ${reserve} + ${eps} THEN 1 ELSE 0 END) END AS by_reserve,
    ${byCap} AS by_cap
  FROM fig
), fits AS (
  SELECT room.*, by_reserve >= ${atLeast} AS under_reserve_ok, by_cap >= ${atLeast} AS cap_ok,
    least(${n}, by_reserve, by_cap, CASE WHEN room.balance IS NULL THEN 1 ELSE ${n} END)::int AS calls
  FROM room
), ins AS (
  INSERT INTO credit_reservations (api_url, run_key, worker_id, cost, expires_at)
  SELECT ${a}, ${r}, ${w}, ${c} * fits.calls, clock_timestamp() + ${ms} * interval '1 millisecond'
  FROM fits WHERE under_reserve_ok AND cap_ok
  RETURNING id, clock_timestamp() AS since
)
SELECT balance, reserved, in_flight, spent, under_reserve_ok, cap_ok, calls, (SELECT id FROM ins)::text AS id,
  (SELECT since FROM ins)::text AS since FROM fits`;
    // The cap last: without one its placeholder is not in the text, and a prepared statement's numbers have no gap.
    const values = [this.options.apiUrl, this.options.runKey, this.options.workerId, num(cost), num(limits.reserve), probe, num(calls),
      num(SHARED_CREDIT_BUDGET_DEFAULTS.epsilon), num(this.reservationMs), need, ...(limits.maxPerRun === null ? [] : [num(limits.maxPerRun)])];
    return { text, values };
  }

  /** The room this process's blocks have left goes back to the account at the next turn; emptied rows go. */
  private giveBackRoom(): void {
    for (const b of this.blocks.values()) {
      if (b.remaining > 0) this.release(b.id, b.remaining);
      b.remaining = 0;
      if (b.inFlight === 0) this.forget(b.id);
    }
  }

  /** `credits` of the reservation `id` are no longer held (written at the end of the turn). */
  private release(id: number, credits: number): void {
    this.releasedCost.set(id, (this.releasedCost.get(id) ?? 0) + credits);
    void this.schedule(false);
  }

  /** The reservation `id` holds nothing more: its row goes at the end of the turn. */
  private forget(id: number): void {
    this.blocks.delete(id);
    this.emptied.add(id);
    void this.schedule(false);
  }

  /**
   * Hands back a call's reservation with what it was charged: the run's spend grows by its cost (see settleSql) and the
   * balance takes the answer's counters, or falls by the cost. An expired reservation too: the call was made.
   */
  settle(reservation: SharedReservation, charge: SharedCharge): Promise<SettledCharge> {
    const b = this.blocks.get(reservation.id);
    const since = b?.since ?? null;
    if (b) {
      b.inFlight -= 1;
      if (b.inFlight === 0 && b.remaining === 0) this.forget(b.id);
      else this.release(b.id, reservation.cost);
    } else {
      this.emptied.add(reservation.id);
    }
    return new Promise<SettledCharge>((resolve, reject) => {
      this.settling.push({ charge, since, resolve, reject });
      void this.schedule(false);
    });
  }

  /**
   * Records an answer's counter among the account's samples at the next turn, before its call is settled (its
   * reservation still held): resolves to its operation's cost as the samples then show it (null: too few yet).
   */
  sample(sample: { operation: Operation; creditsUsed: number }): Promise<number | null> {
    return new Promise<SettledCharge>((resolve, reject) => {
      this.settling.push({ charge: { cost: 0, sample }, sampleOnly: true, resolve, reject });
      void this.schedule(false);
    }).then((s) => s.learnedCost);
  }

  /**
   * `operation`'s cost as the account's samples show it (the answers of any worker and run on the account), or
   * null when they show too few steps yet: what a worker that has not called yet reserves at.
   */
  async accountCost(operation: Operation): Promise<number | null> {
    const { rows } = await this.pool.query(namedQuery(SAMPLES_SQL, [this.options.apiUrl, [operation]]));
    return sampledCosts(rows as Array<{ op: string; used: number[] }>).get(operation) ?? null;
  }

  /** The run is over: giveBack(), a block still on its way included; calls in flight settle later. */
  async close(): Promise<void> {
    this.closed = true;
    await this.giveBack();
  }

  /** Once the block asked is back, gives this process's room to other workers (the run stopped on credits); a later call reserves again. */
  async giveBack(): Promise<void> {
    await this.blockAsked;
    this.giveBackRoom();
    await this.schedule(true);
  }

  /** Sends the waiting settles now, not after settleDelayMs: something waits for them (a run's end, a stop on credits). */
  hurry(): Promise<void> | undefined {
    return this.turn ? this.schedule(true) : undefined;
  }

  /** A reservation statement, sent with the others of this turn; its result. */
  private inTurn(statement: BoundStatement): Promise<pg.QueryResult> {
    return new Promise((resolve, reject) => {
      this.asked.push({ statement, resolve, reject });
      void this.schedule(true);
    });
  }

  /** The next turn (it never rejects): `soon` sends it at the end of this turn of the event loop. */
  private schedule(soon: boolean): Promise<void> {
    if (this.turn) {
      if (soon) this.turn.hurry();
      return this.turn.sent;
    }
    let hurry = () => undefined as void;
    const due = new Promise<void>((resolve) => {
      const timer = soon ? null : setTimeout(resolve, this.options.settleDelayMs ?? SHARED_CREDIT_BUDGET_DEFAULTS.settleDelayMs);
      hurry = () => {
        if (timer) clearTimeout(timer);
        setImmediate(resolve);
      };
      if (soon) hurry();
    });
    const sent = due.then(() => {
      this.turn = null;
      // sendTurn never rejects. What is asked meanwhile joins this turn: it takes all there is once the last is written.
      this.lastSent = this.lastSent.then(() => this.sendTurn());
      return this.lastSent;
    });
    this.turn = { sent, hurry };
    return sent;
  }

  /**
   * The turn's settles (merged) and reservations under the account's lock, in one round trip and one transaction
   * (they all commit or all fail). Expired reservations are deleted first when a reservation is asked.
   */
  private async sendTurn(): Promise<void> {
    const asked = this.asked.splice(0);
    const settling = this.settling.splice(0);
    try {
      const rows = this.reservationRowsSql();
      const settles = settling.length > 0 ? this.settleSql(settling) : null;
      const expired = asked.length > 0 ? [{ text: EXPIRED_SQL, values: [this.options.apiUrl] }] : [];
      const first = [this.lock, ...expired, ...rows];
      const statements = [...first, ...(settles?.statements ?? []), ...asked.map((a) => a.statement)];
      if (statements.length === 1) return;
      // One generic plan per prepared statement rather than a new plan every turn.
      const results = (await withPgClient(this.pool, (c) => pipelineTransaction(c, ['SET LOCAL plan_cache_mode = force_generic_plan', ...statements]))).slice(1);
      if (settles) this.resolveSettles(settling, results.slice(first.length), settles);
      const base = statements.length - asked.length;
      asked.forEach((a, i) => a.resolve(results[base + i]!));
    } catch (err) {
      for (const s of settling) s.reject(err);
      for (const a of asked) a.reject(err);
    }
  }

  /** Each settle of the turn with what it was charged and its operation's cost as the account's samples show it. */
  private resolveSettles(settling: readonly SettleAsk[], results: readonly pg.QueryResult[], at: { samplesAt: number | null; chargedAt: number }): void {
    const costs = sampledCosts(at.samplesAt === null ? [] : (results[at.samplesAt]!.rows as Array<{ op: string; used: number[] }>));
    const charged = new Map((results[at.chargedAt]!.rows as Array<{ ord: number; cost: number }>).map((r) => [Number(r.ord), Number(r.cost)]));
    settling.forEach((s, i) => {
      const op = s.charge.sample?.operation;
      s.resolve({ cost: charged.get(i) ?? s.charge.cost, learnedCost: (op && costs.get(op)) ?? null });
    });
  }

  /** The turn's reservation rows: the credits no longer held taken off, the emptied rows deleted. */
  private reservationRowsSql(): BoundStatement[] {
    const released = [...this.releasedCost].filter(([id]) => !this.emptied.has(id));
    const emptied = [...this.emptied];
    this.releasedCost.clear();
    this.emptied.clear();
    return [
      ...(released.length > 0 ? [{ text: RELEASE_SQL, values: [released.map(([id]) => id), released.map(([, d]) => num(d))] }] : []),
      ...(emptied.length > 0 ? [{ text: EMPTIED_SQL, values: [emptied] }] : []),
    ];
  }

  /**
   * Samples recorded, trimmed, read back (`samplesAt`); charges (`chargedAt`) added to the run's spend; the balance. A
   * charge with counters costs at most the growth not charged yet (`credits_uncharged`), lest others' calls or a late
   * answer be billed twice; with no counter seen in a reservation's life the growth is unknown: it costs the estimate,
   * as does a counter at or under the one the growth is known from (`credits_counted_from`: see SPEND_SQL).
   */
  private settleSql(asks: readonly SettleAsk[]): { statements: BoundStatement[]; samplesAt: number | null; chargedAt: number } {
    const charges = asks.map((a) => a.charge);
    const samples = newestSamples(charges.flatMap((c) => (c.sample && !c.sample.recorded ? [c.sample] : [])));
    const operations = [...new Set(charges.flatMap((c) => (c.sample ? [c.sample.operation] : [])))];
    const a = this.options.apiUrl;
    const sampled = [
      ...(samples.length > 0 ? [{ text: RECORD_SAMPLES_SQL, values: [a, samples.map((s) => s.operation), samples.map((s) => num(s.creditsUsed))] }] : []),
      ...[...new Set(samples.map((s) => s.operation))].map((o) => ({ text: TRIM_SAMPLES_SQL, values: [a, o, SHARED_CREDIT_BUDGET_DEFAULTS.costSamples] })),
    ];
    // The samples as they stand once the turn's are in: medianStep (credit-meter.ts) reads their cost.
    const read = operations.length > 0 ? [{ text: SAMPLES_SQL, values: [this.options.apiUrl, operations] }] : [];
    // One array a column: one text whatever the number of charges.
    const counted = (c: SharedCharge) => c.sample !== undefined && c.counters != null;
    const spend = {
      text: SPEND_SQL,
      values: [this.options.apiUrl, this.options.runKey, num(this.reservationMs), asks.map((_, i) => i), asks.map((x) => num(x.charge.cost)),
        asks.map((x) => (counted(x.charge) ? num(x.charge.counters!.credits_used) : null)),
        asks.map((x) => (counted(x.charge) ? num(x.charge.counters!.total_credits) : null)), asks.map((x) => x.sampleOnly === true)],
    };
    const balance = this.balanceSql(asks.filter((a) => !a.sampleOnly));
    return { statements: [...sampled, ...read, spend, ...balance], samplesAt: read.length > 0 ? sampled.length : null, chargedAt: sampled.length + read.length };
  }

  /**
   * The balance after the charges, folded: consecutive charges without counters are one decrement, consecutive
   * counters of one plan (total) their highest, as reporting them one by one leaves it (see reportSql).
   */
  private balanceSql(asks: readonly SettleAsk[]): BoundStatement[] {
    const runs: Array<{ counters: CreditCounters; since: string | null } | { cost: number }> = [];
    for (const { charge: c, since = null } of asks) {
      const last = runs.at(-1);
      if (!c.counters) {
        if (last && 'cost' in last) last.cost += c.cost;
        else runs.push({ cost: c.cost });
      } else if (last && 'counters' in last && last.counters.total_credits === c.counters.total_credits) {
        if (c.counters.credits_used > last.counters.credits_used) Object.assign(last, { counters: c.counters, since });
      } else {
        runs.push({ counters: c.counters, since });
      }
    }
    return runs.map((r) => ('counters' in r ? this.reportSql(r.counters, r.since) : { text: DECREMENT_SQL, values: [this.options.apiUrl, num(r.cost)] }));
  }

  /** Forgets the account's balance unless an answer reported it since `since` (ISO time): true when it did. */
  async forgetBalance(since: string): Promise<boolean> {
    const forget = { text: FORGET_BALANCE_SQL, values: [this.options.apiUrl, since] };
    const [, forgotten] = await withPgClient(this.pool, (c) => pipelineTransaction(c, [this.lock, forget]));
    return (forgotten?.rowCount ?? 0) > 0;
  }

  /** Records a balance read outside a call (GET /v1/api/auth before the first call), as settle does counters. */
  async report(counters: CreditCounters): Promise<void> {
    await withPgClient(this.pool, (c) => pipelineTransaction(c, [this.lock, this.reportSql(counters, 'outside')]));
  }

  /** Extends this process's live reservations (its calls are still going); returns how many. */
  async renew(): Promise<number> {
    if (this.blocks.size === 0) return 0;
    const { rowCount } = await this.pool.query(namedQuery(RENEW_SQL, [this.reservationMs, [...this.blocks.keys()], this.options.workerId]));
    return rowCount ?? 0;
  }

  /** Renews this worker's reservations every reservationMs/3 until stopped; a failed renewal waits for the next. */
  keepRenewed(): { stop(): void } {
    const timer = setInterval(() => {
      this.renew().catch(() => undefined);
    }, this.reservationMs / SHARED_CREDIT_BUDGET_DEFAULTS.renewalsPerReservation).unref();
    return { stop: () => clearInterval(timer) };
  }

  /**
   * Counters become the balance unless a higher credits_used was reported (a late answer), save when the total changed
   * (by a call sent after that report) or that report outlived a reservation (a renewal); till then the balance stays low.
   */
  private reportSql(counters: CreditCounters, since: string | null | 'outside'): BoundStatement {
    const values = [this.options.apiUrl, num(reportedBalance(counters)), num(counters.credits_used), num(counters.total_credits), num(this.reservationMs)];
    // A read outside a call has its own rule for another plan (REPORT_OUTSIDE_CALL_SQL); a call's answer, when it was sent.
    return since === 'outside' ? { text: REPORT_OUTSIDE_CALL_SQL, values } : { text: REPORT_SQL, values: [...values, since] };
  }
}
