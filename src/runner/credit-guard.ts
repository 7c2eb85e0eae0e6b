import type { CreditCounters, Operation } from '../spec/types.ts';
import { CreditMeter, type CreditHistory } from '../credits/credit-meter.ts';

/** Limits of a CreditGuard. */
export interface CreditLimits {
  /** Credits that must stay on the account: no call is sent that could take the balance below this. */
  reserve: number;
  /** Most credits this run may spend; null for no cap. */
  maxPerRun: number | null;
}

/** Why the guard refused a call. */
export type CreditStopReason = 'reserve' | 'max-per-run' | 'out-of-credits';

/** Why the guard refused a call, with the figures it decided on (null where the guard did not know them). */
export interface CreditStop {
  reason: CreditStopReason;
  balance: number | null;
  /** Estimated cost of the call that did not fit. */
  cost: number | null;
  reserve: number;
  maxPerRun: number | null;
  spent: number;
}

/** A call's claim on the balance; hand it back with settle() once the call is over. */
export interface Reservation {
  readonly operation: Operation;
  readonly cost: number;
  /** The meter's epoch when the call was sent, so that an answer charged before a reset is told apart. */
  readonly epoch: number;
}

/**
 * Keeps a run from spending past the reserve or its cap. The balance is learned from the counters of every
 * 200; the cost of each operation from the change in credits_used between responses. Every call reserves its
 * estimated cost before it is sent, so calls in flight are counted before the server bills them. Until the
 * counters have shown the balance and the operation's cost, calls go one at a time.
 */
export class CreditGuard {
  private limits: CreditLimits;
  private readonly meter: CreditMeter;
  private reserved = 0;
  private inFlight = 0;
  private stopReason: CreditStopReason | null = null;
  private stopFigures: CreditStop | null = null;
  private waiters: Array<() => void> = [];

  constructor(limits: CreditLimits, history: CreditHistory = {}) {
    this.limits = limits;
    this.meter = new CreditMeter(history);
  }

  /** Sets the limits of the job about to run; spending is counted for the whole run. */
  setLimits(limits: CreditLimits): void {
    this.limits = limits;
    this.stopReason = null;
    this.stopFigures = null;
  }

  /** The balance as last reported by the service (the lower figure when its counters disagree), or null before any 200. */
  get balance(): number | null {
    return this.meter.balance;
  }

  /** Credits this run has spent so far, by the counters (the first call's cost estimated). */
  get spent(): number {
    return this.meter.spent;
  }

  /** Why the guard stopped, or null while calls may go on. */
  get stopped(): CreditStopReason | null {
    return this.stopReason;
  }

  /** Why the guard stopped and the figures behind it, or null while calls may go on. */
  get stopDetail(): CreditStop | null {
    return this.stopFigures;
  }

  /** Estimated cost of one call of an operation (see CreditMeter.costOf). */
  costOf(operation: Operation): number {
    return this.meter.costOf(operation);
  }

  /**
   * Reserves the estimated cost of one call. While the balance or the operation's cost is still unknown,
   * calls go one at a time (the first answers show both); a call that does not fit waits for the calls in
   * flight to settle, since their real cost may leave room. Resolves to null when the call must not be sent
   * even with nothing in flight: the run has to stop on credits.
   */
  async acquire(operation: Operation): Promise<Reservation | null> {
    for (;;) {
      if (this.stopReason) return null;
      const learning = this.balance === null || !this.meter.knowsCost(operation);
      if (learning && this.inFlight > 0) {
        await this.settled();
        continue;
      }
      const cost = this.costOf(operation);
      const { reserve, maxPerRun } = this.limits;
      const overCap = maxPerRun !== null && this.spent + this.reserved + cost > maxPerRun + 1e-9;
      const balance = this.balance;
      const underReserve = balance !== null && balance - this.reserved - cost < reserve - 1e-9;
      if (overCap || underReserve) {
        if (this.inFlight > 0) {
          await this.settled();
          continue;
        }
        return this.stop(overCap ? 'max-per-run' : 'reserve', cost);
      }
      this.reserved += cost;
      this.inFlight += 1;
      return { operation, cost, epoch: this.meter.epoch };
    }
  }

  /** Returns a reservation; `counters` are those of a 200 response (null when nothing was billed). */
  settle(reservation: Reservation, counters: CreditCounters | null): void {
    this.reserved = Math.max(0, this.reserved - reservation.cost);
    this.inFlight -= 1;
    if (counters) this.meter.observe(reservation.operation, counters, reservation.epoch);
    this.wake();
  }

  /** Stops the run on credits from outside, as a 402 does. */
  markOutOfCredits(): void {
    this.stop('out-of-credits');
  }

  private stop(reason: CreditStopReason, cost: number | null = null): null {
    if (!this.stopReason) {
      const { reserve, maxPerRun } = this.limits;
      this.stopFigures = { reason, balance: this.balance, cost, reserve, maxPerRun, spent: this.spent };
    }
    this.stopReason ??= reason;
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
