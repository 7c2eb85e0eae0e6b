/**
 * What a run's answers say about credits: the balance, each operation's cost, and what the run spent. The
 * run's credit guard reads it as answers arrive; the books of a run whose process died are closed by feeding
 * it the counters that run stored, so both figures come from one piece of arithmetic.
 */
import type { CreditCounters, Operation } from '../spec/types.ts';

export const CREDIT_METER_DEFAULTS = {
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
  /** credits_used as last reported before this run's first call, or null when no call was ever answered. */
  lastCreditsUsed?: number | null;
}

/** Learns the balance and the cost of each operation from the counters of paid answers, in arrival order. */
export class CreditMeter {
  private maxUsed: number | null = null;
  private total: number | null = null;
  private firstUsed: number | null = null;
  private firstOperation: Operation | null = null;
  private readonly deltas = new Map<Operation, number[]>();
  /** Median of each operation's deltas, kept up to date as they arrive: costOf() runs several times per call. */
  private readonly medians = new Map<Operation, number>();

  private readonly lastCreditsUsed: number | null;

  /** A cost earlier runs learned is the first sample of its operation's median. */
  constructor(history: CreditHistory = {}) {
    this.lastCreditsUsed = history.lastCreditsUsed ?? null;
    for (const [op, cost] of Object.entries(history.costs ?? {})) {
      if (cost && cost > 0) {
        this.deltas.set(op as Operation, [cost]);
        this.medians.set(op as Operation, cost);
      }
    }
  }

  /** The balance as last reported by the service, or null before any paid answer. */
  get balance(): number | null {
    return this.total === null || this.maxUsed === null ? null : this.total - this.maxUsed;
  }

  /** Credits spent so far, by the counters (the first call's cost estimated). */
  get spent(): number {
    if (this.maxUsed === null || this.firstUsed === null || this.firstOperation === null) return 0;
    return this.maxUsed - this.firstUsed + this.costOf(this.firstOperation);
  }

  /** Whether a cost of the operation has been seen (or was known from earlier runs). */
  knowsCost(operation: Operation): boolean {
    return this.deltas.has(operation);
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
    const fallback = CREDIT_METER_DEFAULTS.defaultCostPerCall;
    if (this.firstOperation === operation && this.firstUsed !== null) {
      const before = this.lastCreditsUsed !== null && this.lastCreditsUsed < this.firstUsed ? this.lastCreditsUsed : 0;
      const step = this.firstUsed - before;
      if (step > 0) return Math.min(fallback, step);
    }
    return fallback;
  }

  /** Takes in the counters of one paid answer of `operation`. */
  observe(operation: Operation, counters: CreditCounters): void {
    const used = counters.credits_used;
    if (this.firstUsed === null) {
      this.firstUsed = used;
      this.firstOperation = operation;
    }
    if (this.maxUsed !== null && used > this.maxUsed) {
      const samples = this.deltas.get(operation) ?? [];
      samples.push(used - this.maxUsed);
      if (samples.length > CREDIT_METER_DEFAULTS.costSamples) samples.shift();
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
}

/** Credits as a run records them: rounded to a millionth, so fractional costs do not show float noise. */
export function roundCredits(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
