import type { CreditCounters, Operation } from '../spec/types.ts';
import { CreditMeter, type CreditHistory, type CreditMeterOptions } from './credit-meter.ts';
import { readableCounters, UnreadCharges, type SentAt } from './unread-charges.ts';

export const CREDIT_GUARD_DEFAULTS = {
  /** Readable answers of an operation before its cost counts toward the highest learned, charged to unread answers (see settle()). */
  answersBeforeHighestCost: 3,
} as const;

export interface CreditLimits {
  /** Credits that must stay on the account: no call is sent that could take the balance below this. */
  reserve: number;
  /** Most credits this run may spend; null for no cap. */
  maxPerRun: number | null;
}

export type CreditStopReason = 'reserve' | 'max-per-run' | 'out-of-credits';

/** A call waiting for room that calls in flight hold, other workers' among them (PostgreSQL): the limit, and the account's figures. */
export interface CreditWait {
  reason: 'reserve' | 'max-per-run';
  /** The credits every worker's reservations on the account hold (their calls in flight and blocks' room). */
  reserved: number;
  balance: number | null;
}

/** Why the guard refused a call, with the figures it decided on (null where the guard did not know them). */
export interface CreditStop extends CreditLimits {
  reason: CreditStopReason;
  balance: number | null;
  /** Estimated cost of the call that did not fit. */
  cost: number | null;
  /** Whether that cost is the assumed default, no answer having shown the operation's cost yet. */
  costAssumed: boolean;
  spent: number;
  /** Set when `balance` is the last one stored, not read in this run (the service offers no free check): when it was read. */
  lastKnownAt?: string;
}

/** A call's claim on the balance; hand it back with settle() once the call is over. */
export interface Reservation {
  readonly operation: Operation;
  readonly cost: number;
  /** When it was sent: its epoch tells an answer charged before a reset, the rest which unread answers it covers. */
  readonly sent: SentAt;
}

/** An attempt's charge: a paid answer's counters, `'unread'` when they cannot be read (charged at an estimate), null when nothing was billed. */
export type Charge = CreditCounters | 'unread' | null;

/**
 * Keeps a run within the reserve and its cap: each call reserves its estimated cost before it is sent, so calls in flight
 * count before they are billed. Until counters show the balance and the operation's cost, calls go one at a time.
 */
export class CreditGuard {
  /** Protected: a guard sharing its account across workers reserves by them too. */
  protected limits: CreditLimits;
  private readonly meter: CreditMeter;
  private reserved = 0;
  private inFlight = 0;
  private stopFigures: CreditStop | null = null;
  private waiters: Array<() => void> = [];
  private readonly unread = new UnreadCharges();
  /** The highest cost learned for each operation (costs of earlier runs included): what an unread answer is charged. */
  private readonly highestCost = new Map<Operation, number>();
  private readonly readableAnswers = new Map<Operation, number>();
  /** Told of a wait on other workers' calls (SharedCreditGuard), so the run says why it waits; this run's own calls never make one. */
  onWait: ((wait: CreditWait) => void) | null = null;

  constructor(limits: CreditLimits, history: CreditHistory = {}, options: CreditMeterOptions = {}) {
    this.limits = limits;
    this.meter = new CreditMeter(history, options);
    for (const [op, cost] of Object.entries(history.costs ?? {})) if (cost && cost > 0) this.highestCost.set(op as Operation, cost);
  }

  /** Starts from the balance read before any call (GET /v1/api/auth); ignored if unreadable or after an answer. */
  seed(counters: CreditCounters): boolean {
    return readableCounters(counters) && this.meter.seed(counters);
  }

  /**
   * Before the run's first call, with no free balance check: stops (true) when the last balance stored, read at `last.at`,
   * cannot pay the next call above the reserve, as a checked balance would. At a reserve of 0 the service's 402 is the floor.
   */
  stopOnLastKnown(operation: Operation, last: { balance: number; at: string }): boolean {
    const { reserve } = this.limits;
    if (this.balance !== null || this.stopFigures || reserve <= 0) return false;
    const cost = this.costOf(operation);
    if (!this.breaksReserve(operation, cost, last.balance)) return false;
    this.stop('reserve', cost, this.costAssumed(operation));
    this.stopFigures = { ...this.stopDetail!, balance: last.balance, lastKnownAt: last.at };
    return true;
  }

  /** Sets the limits of the job about to run; spending is counted for the whole run. */
  setLimits(limits: CreditLimits): void {
    this.limits = limits;
    this.stopFigures = null;
  }

  /** The balance last reported, less the estimates of unread paid answers; null before any counters. */
  get balance(): number | null {
    const balance = this.meter.balance;
    return balance === null ? null : balance - this.unread.uncovered;
  }

  /** Credits this run has spent by the counters (first call's cost estimated unless seeded), plus unread estimates. */
  get spent(): number {
    return this.meter.spent + this.unread.uncovered;
  }

  /** Paid answers whose counters could not be read, each charged at an estimate. */
  get estimatedAnswers(): number {
    return this.unread.count;
  }

  /** Whether the spend holds an estimate: an unread answer, or a first call whose cost no counters before it showed. */
  get spentIsEstimate(): boolean {
    return this.unread.uncovered > 0 || (!this.meter.firstCostKnown);
  }

  /** Why the guard stopped and the figures behind it, or null while calls may go on. */
  get stopDetail(): CreditStop | null {
    return this.stopFigures;
  }

  /** Whether answers (or earlier runs) have shown the operation's cost; until then costOf is the assumed default. */
  knowsCost(operation: Operation): boolean {
    return this.meter.knowsCost(operation);
  }

  /**
   * Whether costOf is the assumed default, no answer having shown or bounded the cost: the service publishes no prices,
   * so such a call goes alone (16 sent together at the assumed 5 that cost 50 each took a cap of 100 to 800).
   */
  protected costAssumed(operation: Operation): boolean {
    return !this.knowsCost(operation);
  }

  /** Estimated cost of one call of an operation (see CreditMeter.costOf). */
  costOf(operation: Operation): number {
    return this.meter.costOf(operation);
  }

  /**
   * Reserves one call's estimated cost. A call that does not fit waits for those in flight to settle (their real cost
   * may leave room); null when it does not fit even with nothing in flight: the run stops on credits. `signal` ends a
   * wait on other workers' calls (SharedCreditGuard), which can last minutes; this run's own always settle.
   */
  async acquire(operation: Operation, _signal?: AbortSignal): Promise<Reservation | null> {
    for (;;) {
      if (this.stopFigures) return null;
      // One answer after the balance read shows the cost (or, in SharedCreditGuard, bounds it).
      const learning = this.balance === null || this.costAssumed(operation);
      const cost = this.costOf(operation);
      const overLimit = this.overLimit(operation, cost);
      if ((learning || overLimit) && this.inFlight > 0) {
        await this.settled();
        continue;
      }
      if (overLimit) {
        // What the spend holds at an estimate may come out lower once charged: the limits are checked again then.
        if (await this.chargesFinal()) continue;
        return this.stop(overLimit, cost, this.costAssumed(operation));
      }
      this.reserved += cost;
      this.inFlight += 1;
      return { operation, cost, sent: { epoch: this.meter.epoch, afterCounters: this.meter.balance !== null, tick: this.unread.tick } };
    }
  }

  /** The limit one more call of `operation` at `cost` would break, or null when it fits. */
  private overLimit(operation: Operation, cost: number): 'max-per-run' | 'reserve' | null {
    const { maxPerRun } = this.limits;
    if (maxPerRun !== null && this.spent + this.reserved + cost > maxPerRun + 1e-9) return 'max-per-run';
    return this.breaksReserve(operation, cost, this.balance) ? 'reserve' : null;
  }

  /** Whether one more call of `operation` at `cost` could take `balance` (null: unknown) below the reserve. */
  private breaksReserve(operation: Operation, cost: number, balance: number | null): boolean {
    const { reserve } = this.limits;
    // An unknown cost is reserved at the default; when that does not fit but some room is left, one call goes alone to
    // show the cost (else a small balance could never learn it).
    const probe = this.costAssumed(operation) && this.inFlight === 0 && balance !== null && balance - reserve > 1e-9;
    return balance !== null && balance - this.reserved - cost < reserve - 1e-9 && !probe;
  }

  /** Returns a reservation with its charge (see Charge); counters with a non-finite number count as `'unread'`. */
  settle(reservation: Reservation, charge: Charge): void {
    this.reserved = Math.max(0, this.reserved - reservation.cost);
    this.inFlight -= 1;
    const op = reservation.operation;
    if (charge !== 'unread' && readableCounters(charge)) {
      this.meter.observe(op, charge, reservation.sent.epoch);
      this.unread.readable(reservation.sent, this.meter.epoch);
      // The first few answers of calls sent together arrive out of order and can show a step of twice the cost.
      const seen = (this.readableAnswers.get(op) ?? 0) + 1;
      this.readableAnswers.set(op, seen);
      if (seen >= CREDIT_GUARD_DEFAULTS.answersBeforeHighestCost && this.meter.knowsCost(op)) {
        this.highestCost.set(op, Math.max(this.highestCost.get(op) ?? 0, this.meter.costOf(op)));
      }
    } else if (charge !== null) {
      this.unread.charge(reservation.sent, this.unreadCost(op));
    } else {
      this.unread.unpaid();
    }
    this.wake();
  }

  /** What an unread paid answer of `operation` is charged: the highest cost learned, else the default. */
  unreadCost(operation: Operation): number {
    return Math.max(this.highestCost.get(operation) ?? 0, this.meter.costOf(operation));
  }

  /** Resolves once settled calls' charges are final (at once here, not in SharedCreditGuard); true if some were not: the spend may differ. */
  protected chargesFinal(): Promise<boolean> {
    return Promise.resolve(false);
  }

  /** Resolves once every settled call's charge is final, before the run's summary. */
  async finish(): Promise<void> {
    await this.chargesFinal();
  }

  /** Stops the run on credits from outside, as a 402 does. */
  markOutOfCredits(): void {
    this.stop('out-of-credits');
  }

  /** `spent`: what the run spent, when another figure than this guard's counters decided the stop. */
  protected stop(reason: CreditStopReason, cost: number | null = null, costAssumed = false, spent = this.spent): null {
    if (!this.stopFigures) {
      const { reserve, maxPerRun } = this.limits;
      this.stopFigures = { reason, balance: this.balance, cost, costAssumed, reserve, maxPerRun, spent };
    }
    this.wake();
    return null;
  }

  private settled(): Promise<void> {
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
