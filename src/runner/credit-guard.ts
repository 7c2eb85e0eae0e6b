import type { CreditCounters, Operation } from '../spec/types.ts';

/** Limits of a CreditGuard; every default lives in CREDIT_GUARD_DEFAULTS. */
export interface CreditLimits {
  /** Credits that must stay on the account: no call is sent that could take the balance below this. */
  reserve: number;
  /** Most credits this run may spend; null for no cap. */
  maxPerRun: number | null;
}

export const CREDIT_GUARD_DEFAULTS = {
  /**
   * Assumed cost of a call before the counters have shown the real one. Deliberately high: guessing low
   * could overspend the reserve with a full queue of calls in flight; guessing high only stops a little early.
   */
  defaultCostPerCall: 5,
  /** Positive changes of credits_used kept per operation to estimate its cost (median). */
  costSamples: 16,
} as const;

/** What earlier runs of this dataset tell of the account, so a run's spend is right from its first call. */
export interface CreditHistory {
  /** Each operation's cost as learned from earlier calls (see ApiCallLog.learnedCost). */
  costs?: Partial<Record<Operation, number>>;
  /** credits_used as last reported to an earlier run, or null when no call was ever answered. */
  lastCreditsUsed?: number | null;
}

/** Why the guard refused a call. */
export type CreditStopReason = 'reserve' | 'max-per-run' | 'out-of-credits';

/** A call's claim on the balance; hand it back with settle() once the call is over. */
export interface Reservation {
  readonly operation: Operation;
  readonly cost: number;
}

/**
 * Keeps a run from spending past the reserve or its cap. The balance is learned from the counters of every
 * 200; the cost of each operation from the change in credits_used between responses. Every call reserves its
 * estimated cost before it is sent, so calls in flight are counted before the server bills them. Until the
 * counters have shown the balance and the operation's cost, calls go one at a time.
 */
export class CreditGuard {
  private limits: CreditLimits;
  private maxUsed: number | null = null;
  private total: number | null = null;
  private firstUsed: number | null = null;
  private firstOperation: Operation | null = null;
  private reserved = 0;
  private inFlight = 0;
  private stopReason: CreditStopReason | null = null;
  private readonly deltas = new Map<Operation, number[]>();
  /** Median of each operation's deltas, kept up to date as they arrive: costOf() runs several times per call. */
  private readonly medians = new Map<Operation, number>();
  private waiters: Array<() => void> = [];
  private readonly lastCreditsUsed: number | null;

  constructor(limits: CreditLimits, history: CreditHistory = {}) {
    this.limits = limits;
    this.lastCreditsUsed = history.lastCreditsUsed ?? null;
    for (const [op, cost] of Object.entries(history.costs ?? {})) {
      if (cost && cost > 0) {
        this.deltas.set(op as Operation, [cost]);
        this.medians.set(op as Operation, cost);
      }
    }
  }

  /** Sets the limits of the job about to run; spending is counted for the whole run. */
  setLimits(limits: CreditLimits): void {
    this.limits = limits;
    this.stopReason = null;
  }

  /** The balance as last reported by the service, or null before any 200. */
  get balance(): number | null {
    return this.total === null || this.maxUsed === null ? null : this.total - this.maxUsed;
  }

  /** Credits this run has spent so far, by the counters (the first call's cost estimated). */
  get spent(): number {
    if (this.maxUsed === null || this.firstUsed === null || this.firstOperation === null) return 0;
    return this.maxUsed - this.firstUsed + this.costOf(this.firstOperation);
  }

  /** Why the guard stopped, or null while calls may go on. */
  get stopped(): CreditStopReason | null {
    return this.stopReason;
  }

  /**
   * Estimated cost of one call of an operation: the median of the observed steps of credits_used. Before a
   * step is seen, the first call's step from the credits_used an earlier run saw last (or from zero, on an
   * account never used) bounds its cost: exact unless the account was used elsewhere in between. The
   * conservative default caps it, and applies alone while nothing is known.
   */
  costOf(operation: Operation): number {
    const median = this.medians.get(operation);
    if (median !== undefined) return median;
    const fallback = CREDIT_GUARD_DEFAULTS.defaultCostPerCall;
    if (this.firstOperation === operation && this.firstUsed !== null) {
      const before = this.lastCreditsUsed !== null && this.lastCreditsUsed < this.firstUsed ? this.lastCreditsUsed : 0;
      const step = this.firstUsed - before;
      if (step > 0) return Math.min(fallback, step);
    }
    return fallback;
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
      const learning = this.balance === null || !this.deltas.has(operation);
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
        return this.stop(overCap ? 'max-per-run' : 'reserve');
      }
      this.reserved += cost;
      this.inFlight += 1;
      return { operation, cost };
    }
  }

  /** Returns a reservation; `counters` are those of a 200 response (null when nothing was billed). */
  settle(reservation: Reservation, counters: CreditCounters | null): void {
    this.reserved = Math.max(0, this.reserved - reservation.cost);
    this.inFlight -= 1;
    if (counters) this.observe(reservation.operation, counters);
    this.wake();
  }

  /** Stops the run on credits from outside, as a 402 does. */
  markOutOfCredits(): void {
    this.stop('out-of-credits');
  }

  private observe(operation: Operation, counters: CreditCounters): void {
    const used = counters.credits_used;
    if (this.firstUsed === null) {
      this.firstUsed = used;
      this.firstOperation = operation;
    }
    if (this.maxUsed !== null && used > this.maxUsed) {
      const samples = this.deltas.get(operation) ?? [];
      samples.push(used - this.maxUsed);
      if (samples.length > CREDIT_GUARD_DEFAULTS.costSamples) samples.shift();
      this.deltas.set(operation, samples);
      const sorted = [...samples].sort((a, b) => a - b);
      this.medians.set(operation, sorted[Math.floor(sorted.length / 2)]!);
    }
    if (this.maxUsed === null || used >= this.maxUsed) {
      this.maxUsed = used;
      this.total = counters.total_credits;
    } else if (counters.total_credits !== this.total) {
      // A top-up while the run goes on: the newest total counts even from a response billed earlier.
      this.total = Math.max(this.total ?? 0, counters.total_credits);
    }
  }

  private stop(reason: CreditStopReason): null {
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
