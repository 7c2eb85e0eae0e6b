/**
 * The credit reserve and `maxPerRun` for an account across every worker: the balance the answers reported and
 * the calls in flight live in the database, so a call is reserved against what all workers have spent and
 * hold, not what one process saw. The local CreditGuard still learns each operation's cost and the balance
 * from the counters; this budget is where its reservations and the balance it learns are shared.
 *
 * A reservation succeeds only if balance - reserved by all - cost >= reserve (and the run's spend + reserved +
 * cost <= maxPerRun), checked and written under one advisory lock per account. A reservation lasts
 * `reservationMs` unless renewed: a worker that dies stops holding credits once its reservations expire.
 *
 * A call's cost is learned from the counters of every worker's answers (`credit_cost_samples`): one worker's own
 * answers step by all the calls made on the account meanwhile, so k workers calling together would each count
 * about k times the cost, and the run's `maxPerRun` would stop them at 1/k of it.
 *
 * The reservations and settles a worker asks for in one turn of the event loop go to the server together, in
 * one query under one taking of the lock, each one's statements in the order asked: as if sent one by one
 * (they serialize on the lock anyway), without a round trip and a wait on the lock each.
 */
import pg from 'pg';
import type { CreditCounters, Operation } from '../../../spec/types.ts';
import { reportedBalance } from '../../../credits/credit-meter.ts';
import type { CreditLimits } from '../../../credits/credit-guard.ts';

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
  /** Steps among them before their median is the call's cost; until then the worker's own estimate is. */
  minCostSteps: 3,
} as const;

export interface SharedCreditBudgetOptions {
  /** The account's API URL: the budget is per account, shared by every job and worker using it. */
  apiUrl: string;
  /** The shared run the worker belongs to (the same for all its workers): what `maxPerRun` counts. */
  runKey: string;
  workerId: string;
  reservationMs?: number;
  pollMs?: number;
}

/** A call's claim on the shared balance; hand it back with settle(). */
export interface SharedReservation {
  readonly id: number;
  readonly cost: number;
}

/** The figures a reservation was decided on. */
export interface BudgetFigures {
  /** The account's balance as last reported, or null before any report. */
  balance: number | null;
  /** Credits held by the live reservations of every worker of the account. */
  reserved: number;
  /** Live reservations of the account. */
  inFlight: number;
  /** What the run's settled calls cost, all workers together. */
  spent: number;
}

export type SharedCreditStopReason = 'reserve' | 'max-per-run';

/** What a reservation attempt gave: the reservation, or why not (`learning`: balance unknown, a call is in flight). */
export type ReserveAttempt =
  | { reservation: SharedReservation; figures: BudgetFigures }
  | { reservation: null; reason: SharedCreditStopReason | 'learning'; figures: BudgetFigures };

/**
 * What a call was charged: `cost` (0 when nothing was billed), and the answer's counters when it had them.
 * `sample`, for an answer whose counters are readable, makes its counter one of the account's cost samples: the
 * call is then charged their median step once there are enough of them, `cost` being the fallback.
 */
export interface SharedCharge {
  cost: number;
  counters?: CreditCounters | null;
  sample?: { operation: Operation; creditsUsed: number };
}

/** What settle() charged the run, and the operation's cost as the account's samples show it (null: too few yet). */
export interface SettledCharge {
  cost: number;
  learnedCost: number | null;
}

/** A number as an SQL literal; only finite numbers reach the database. */
function num(value: number): string {
  if (!Number.isFinite(value)) throw new Error(`not a finite number: ${value}`);
  return String(value);
}

/** One account's credit budget as one worker sees it. */
export class SharedCreditBudget {
  private readonly a: string;
  private readonly r: string;
  private readonly w: string;
  private readonly lock: string;
  private readonly reservationMs: number;
  private readonly pollMs: number;
  /** This process's live reservations: only these are renewed (a restart under the same id is another process). */
  private readonly mine = new Set<number>();
  /** Reservations and settles asked in this turn of the event loop, sent together at its end. */
  private asked: Array<{ statements: string[]; reserves: boolean; resolve: (results: pg.QueryResult[]) => void; reject: (err: unknown) => void }> = [];

  constructor(private readonly pool: pg.Pool, options: SharedCreditBudgetOptions) {
    this.a = pg.escapeLiteral(options.apiUrl);
    this.r = pg.escapeLiteral(options.runKey);
    this.w = pg.escapeLiteral(options.workerId);
    this.lock = `SELECT pg_advisory_xact_lock(hashtextextended('netingest.credits:' || ${this.a}, 0))`;
    this.reservationMs = options.reservationMs ?? SHARED_CREDIT_BUDGET_DEFAULTS.reservationMs;
    this.pollMs = options.pollMs ?? SHARED_CREDIT_BUDGET_DEFAULTS.pollMs;
  }

  /**
   * One attempt to reserve `cost`, in one round trip and one transaction: the lock, then the figures as every
   * worker committed them, and the reservation only where it fits. With the balance unknown, a call goes only
   * when none is in flight on the account (its answer shows the balance), as CreditGuard does. A `probe` (a
   * call whose cost is only assumed) goes alone when the assumed cost does not fit but the balance is above the
   * reserve: its answer shows the cost, as CreditGuard's probe does (else a small balance never learns it).
   */
  async tryReserve(cost: number, limits: CreditLimits, probe = false): Promise<ReserveAttempt> {
    const eps = SHARED_CREDIT_BUDGET_DEFAULTS.epsilon;
    const c = num(cost);
    const maxPerRun = limits.maxPerRun === null ? 'NULL::float8' : num(limits.maxPerRun);
    const text = `WITH fig AS MATERIALIZED (
  SELECT (SELECT balance FROM account_balance WHERE api_url = ${this.a}) AS balance,
    coalesce(sum(cost), 0)::float8 AS reserved,
    coalesce(sum(cost) FILTER (WHERE run_key = ${this.r}), 0)::float8 AS run_reserved,
    count(*)::int AS in_flight,
    coalesce((SELECT spent FROM credit_run_spend WHERE run_key = ${this.r}), 0)::float8 AS spent
  FROM credit_reservations WHERE api_url = ${this.a}
), fits AS (
  SELECT fig.*,
    (fig.balance IS NULL AND fig.in_flight = 0) OR fig.balance - fig.reserved - ${c} >= ${num(limits.reserve)} - ${eps}
      OR (${probe ? 'TRUE' : 'FALSE'} AND fig.in_flight = 0 AND fig.balance > ${num(limits.reserve)} + ${eps}) AS under_reserve_ok,
    ${maxPerRun} IS NULL OR fig.spent + fig.run_reserved + ${c} <= ${maxPerRun} + ${eps} AS cap_ok
  FROM fig
), ins AS (
  INSERT INTO credit_reservations (api_url, run_key, worker_id, cost, expires_at)
  SELECT ${this.a}, ${this.r}, ${this.w}, ${c}, clock_timestamp() + ${num(this.reservationMs)} * interval '1 millisecond'
  FROM fits WHERE under_reserve_ok AND cap_ok
  RETURNING id
)
SELECT balance, reserved, in_flight, spent, under_reserve_ok, cap_ok, (SELECT id FROM ins)::text AS id FROM fits`;
    const results = await this.inTurn([text], true);
    const row = results[0]!.rows[0] as {
      balance: number | null; reserved: number; in_flight: number; spent: number; under_reserve_ok: boolean; cap_ok: boolean; id: string | null;
    };
    const figures: BudgetFigures = { balance: row.balance, reserved: row.reserved, inFlight: row.in_flight, spent: row.spent };
    if (row.id !== null) {
      this.mine.add(Number(row.id));
      return { reservation: { id: Number(row.id), cost }, figures };
    }
    const reason = !row.cap_ok ? 'max-per-run' : row.balance === null ? 'learning' : 'reserve';
    return { reservation: null, reason, figures };
  }

  /**
   * Reserves `cost`, waiting while calls in flight (of any worker) may leave room when they settle. Resolves
   * to the reason the run must stop when the call does not fit with nothing in flight on the account.
   */
  async acquire(cost: number, limits: CreditLimits, options: { signal?: AbortSignal; probe?: boolean } = {}): Promise<SharedReservation | { stop: SharedCreditStopReason; figures: BudgetFigures }> {
    for (;;) {
      options.signal?.throwIfAborted();
      const attempt = await this.tryReserve(cost, limits, options.probe);
      if (attempt.reservation) return attempt.reservation;
      if (attempt.reason !== 'learning' && attempt.figures.inFlight === 0) return { stop: attempt.reason, figures: attempt.figures };
      await new Promise((r) => setTimeout(r, this.pollMs));
    }
  }

  /**
   * Hands back a reservation with what the call was charged: the run's spend grows by its cost (with a sample,
   * the median step of the account's samples once there are enough), and the account's balance takes the
   * answer's counters, or falls by the cost when it had none. Works for a reservation that expired meanwhile
   * too (the call was made; its cost counts).
   */
  async settle(reservation: SharedReservation, charge: SharedCharge): Promise<SettledCharge> {
    const cost = num(charge.cost);
    const sample = charge.sample;
    const statements = [
      `DELETE FROM credit_reservations WHERE id = ${num(reservation.id)}`,
      ...(sample ? this.sampleSql(sample.operation, sample.creditsUsed) : []),
      `WITH learned AS (SELECT ${sample ? this.medianStepSql(sample.operation) : 'NULL::float8'} AS step),
      spend AS (
        INSERT INTO credit_run_spend (run_key, api_url, spent, updated_at)
        SELECT ${this.r}, ${this.a}, coalesce(step, ${cost}), clock_timestamp() FROM learned
        ON CONFLICT (run_key) DO UPDATE SET spent = credit_run_spend.spent + excluded.spent, updated_at = excluded.updated_at
      )
      SELECT step FROM learned`,
      charge.counters ? this.reportSql(charge.counters) : `UPDATE account_balance SET balance = balance - ${cost} WHERE api_url = ${this.a}`,
    ];
    const results = await this.inTurn(statements);
    this.mine.delete(reservation.id);
    const step = (results[statements.length - 2]!.rows[0] as { step: number | null }).step;
    return { cost: step ?? charge.cost, learnedCost: step };
  }

  /**
   * Runs `statements` under the account's lock with the others asked in this turn of the event loop, in one
   * query (one transaction: they all commit or all fail); their results, in order. A reservation (`reserves`)
   * needs the expired reservations gone first: they are deleted once, before all of the turn's statements.
   */
  private inTurn(statements: string[], reserves = false): Promise<pg.QueryResult[]> {
    return new Promise((resolve, reject) => {
      if (this.asked.length === 0) setImmediate(() => void this.sendAsked());
      this.asked.push({ statements, reserves, resolve, reject });
    });
  }

  private async sendAsked(): Promise<void> {
    const asked = this.asked;
    this.asked = [];
    const first = [this.lock, ...(asked.some((a) => a.reserves) ? [`DELETE FROM credit_reservations WHERE api_url = ${this.a} AND expires_at <= clock_timestamp()`] : [])];
    try {
      const results = (await this.pool.query([...first, ...asked.flatMap((a) => a.statements)].join(';\n'))) as unknown as pg.QueryResult[];
      let next = first.length;
      for (const a of asked) a.resolve(results.slice(next, (next += a.statements.length)));
    } catch (err) {
      for (const a of asked) a.reject(err);
    }
  }

  /** Records an answer's counter among its operation's samples, and drops those past the newest `costSamples`. */
  private sampleSql(operation: Operation, creditsUsed: number): string[] {
    const o = pg.escapeLiteral(operation);
    const mine = `api_url = ${this.a} AND operation = ${o}`;
    return [
      `INSERT INTO credit_cost_samples (api_url, operation, credits_used, recorded_at) VALUES (${this.a}, ${o}, ${num(creditsUsed)}, clock_timestamp())`,
      `DELETE FROM credit_cost_samples WHERE ${mine} AND id <= (SELECT id FROM credit_cost_samples WHERE ${mine}
        ORDER BY id DESC OFFSET ${num(SHARED_CREDIT_BUDGET_DEFAULTS.costSamples)} LIMIT 1)`,
    ];
  }

  /**
   * The operation's cost by its samples: the median positive step between them once sorted (as medianStep in
   * credit-meter.ts, the upper one of an even count), or null with fewer than `minCostSteps` steps.
   */
  private medianStepSql(operation: Operation): string {
    return `(SELECT step FROM (
        SELECT step, row_number() OVER (ORDER BY step) - 1 AS i, count(*) OVER () AS n FROM (
          SELECT u - lag(u) OVER (ORDER BY u) AS step
          FROM (SELECT DISTINCT credits_used AS u FROM credit_cost_samples WHERE api_url = ${this.a} AND operation = ${pg.escapeLiteral(operation)}) used
        ) steps WHERE step > 0
      ) ranked WHERE i = n / 2 AND n >= ${num(SHARED_CREDIT_BUDGET_DEFAULTS.minCostSteps)})`;
  }

  /** Records a balance read outside a call (GET /v1/api/auth before the first call), as settle does counters. */
  async report(counters: CreditCounters): Promise<void> {
    await this.pool.query(`${this.lock};\n${this.reportSql(counters)}`);
  }

  /** Extends this process's live reservations (its calls are still going); returns how many. */
  async renew(): Promise<number> {
    if (this.mine.size === 0) return 0;
    const { rowCount } = await this.pool.query(`UPDATE credit_reservations
      SET expires_at = clock_timestamp() + $1::float8 * interval '1 millisecond'
      WHERE id = ANY($2::bigint[]) AND worker_id = ${this.w} AND expires_at > clock_timestamp()`, [this.reservationMs, [...this.mine]]);
    return rowCount ?? 0;
  }

  /** Renews this worker's reservations every reservationMs/3 until stopped; a failed renewal goes to `onError`. */
  keepRenewed(onError?: (err: unknown) => void): { stop(): void } {
    const timer = setInterval(() => {
      this.renew().catch(onError ?? (() => undefined));
    }, this.reservationMs / SHARED_CREDIT_BUDGET_DEFAULTS.renewalsPerReservation);
    timer.unref();
    return { stop: () => clearInterval(timer) };
  }

  /** The account's figures as every worker sees them now. */
  async figures(): Promise<BudgetFigures> {
    const { rows } = await this.pool.query(`SELECT (SELECT balance FROM account_balance WHERE api_url = ${this.a}) AS balance,
      coalesce(sum(cost), 0)::float8 AS reserved, count(*)::int AS "inFlight",
      coalesce((SELECT spent FROM credit_run_spend WHERE run_key = ${this.r}), 0)::float8 AS spent
      FROM credit_reservations WHERE api_url = ${this.a} AND expires_at > clock_timestamp()`);
    return rows[0] as BudgetFigures;
  }

  /**
   * The counters of one answer become the account's balance unless a later charge was already reported: within
   * a period credits_used only grows, so a lower counter is an answer that arrived late (the lower balance
   * stays). A lower counter is a renewal instead when the total changed, or when the higher one was reported
   * longer ago than a reservation lasts (no call still in flight was charged before it). Until then a renewal
   * leaves the balance low: the budget stops early rather than spend credits it is not sure of.
   */
  private reportSql(counters: CreditCounters): string {
    const used = num(counters.credits_used);
    const total = num(counters.total_credits);
    return `INSERT INTO account_balance AS b (api_url, balance, credits_used, total_credits, reported_at)
      VALUES (${this.a}, ${num(reportedBalance(counters))}, ${used}, ${total}, clock_timestamp())
      ON CONFLICT (api_url) DO UPDATE SET balance = excluded.balance, credits_used = excluded.credits_used,
        total_credits = excluded.total_credits, reported_at = excluded.reported_at
      WHERE b.credits_used IS NULL OR excluded.credits_used > b.credits_used OR excluded.total_credits <> b.total_credits
        OR b.reported_at < clock_timestamp() - ${num(this.reservationMs)} * interval '1 millisecond'`;
  }
}
