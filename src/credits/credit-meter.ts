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
  /** Recent credits_used values kept per operation to estimate its cost (median step between them, sorted). */
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
  /** Recent credits_used values of each operation's paid answers (the counter before its first, when known). */
  private readonly usedByOp = new Map<Operation, number[]>();
  /** Each operation's estimated cost, kept up to date as answers arrive: costOf() runs several times per call. */
  private readonly medians = new Map<Operation, number>();

  private readonly lastCreditsUsed: number | null;
  private readonly historyCosts = new Map<Operation, number>();
  /** What the run's first paid call cost, fixed when its answer arrives (null: estimated by costOf). */
  private firstCost: number | null = null;

  /** A cost earlier runs learned is the first sample of its operation's median. */
  constructor(history: CreditHistory = {}) {
    this.lastCreditsUsed = history.lastCreditsUsed ?? null;
    for (const [op, cost] of Object.entries(history.costs ?? {})) {
      if (cost && cost > 0) {
        this.historyCosts.set(op as Operation, cost);
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
    return this.maxUsed - this.firstUsed + (this.firstCost ?? this.costOf(this.firstOperation));
  }

  /** Whether a cost of the operation has been seen (or was known from earlier runs). */
  knowsCost(operation: Operation): boolean {
    return this.medians.has(operation);
  }

  /**
   * Estimated cost of one call of an operation: the median step between its answers' credits_used values,
   * sorted (answers of calls in flight together arrive out of the order they were charged in, so steps in
   * arrival order would count some calls twice), a cost earlier runs learned counting as one more step. Before a
   * step is seen, the first call's step from the credits_used an earlier run saw last (or from zero, on an
   * account never used) bounds its cost: exact unless the account was used elsewhere in between. The
   * conservative default caps it, and applies alone while nothing is known.
   */
  costOf(operation: Operation): number {
    const median = this.medians.get(operation);
    if (median !== undefined) return median;
    const fallback = CREDIT_METER_DEFAULTS.defaultCostPerCall;
    if (this.firstOperation === operation) {
      const step = this.firstStep();
      if (step !== null) return Math.min(fallback, step);
    }
    return fallback;
  }

  /** The first answer's credits_used less the counter before the run (zero on a dataset that saw none), or null. */
  private firstStep(): number | null {
    if (this.firstUsed === null) return null;
    const before = this.lastCreditsUsed !== null && this.lastCreditsUsed < this.firstUsed ? this.lastCreditsUsed : 0;
    const step = this.firstUsed - before;
    return step > 0 ? step : null;
  }

  /** Takes in the counters of one paid answer of `operation`. */
  observe(operation: Operation, counters: CreditCounters): void {
    const used = counters.credits_used;
    if (this.firstUsed === null) {
      this.firstUsed = used;
      this.firstOperation = operation;
      // Fixed now: the steps seen later are those of answers that arrive out of the order they were charged
      // in (calls in flight together), whose median can come out at twice the cost. A cost earlier runs
      // learned, else a step from the counters before the run that is no more than the default (larger, it
      // holds use from elsewhere) is the first call's cost; otherwise costOf estimates it as answers come.
      const step = this.firstStep();
      const history = this.historyCosts.get(operation);
      this.firstCost = history ?? (step !== null && step <= CREDIT_METER_DEFAULTS.defaultCostPerCall ? step : null);
    }
    let values = this.usedByOp.get(operation);
    if (values === undefined) {
      // An operation's first call goes alone (see CreditGuard): the counter before it is the highest seen so far.
      values = this.maxUsed === null ? [] : [this.maxUsed];
      this.usedByOp.set(operation, values);
    }
    values.push(used);
    if (values.length > CREDIT_METER_DEFAULTS.costSamples + 1) values.shift();
    const cost = medianStep(values, this.historyCosts.get(operation));
    if (cost !== null) this.medians.set(operation, cost);
    if (this.maxUsed === null || used >= this.maxUsed) {
      this.maxUsed = used;
      this.total = counters.total_credits;
    } else if (counters.total_credits !== this.total) {
      // A top-up while the run goes on: the newest total counts even from a response billed earlier.
      this.total = Math.max(this.total ?? 0, counters.total_credits);
    }
  }
}

/**
 * The median positive step between `values` once sorted (credits_used counters, whatever order they came in),
 * with `extra` as one more step; null when there is no step at all.
 */
export function medianStep(values: readonly number[], extra?: number): number | null {
  const sorted = [...values].sort((a, b) => a - b);
  const steps: number[] = extra !== undefined && extra > 0 ? [extra] : [];
  for (let i = 1; i < sorted.length; i++) {
    const step = sorted[i]! - sorted[i - 1]!;
    if (step > 0) steps.push(step);
  }
  if (steps.length === 0) return null;
  steps.sort((a, b) => a - b);
  return steps[Math.floor(steps.length / 2)]!;
}

/** Credits as a run records them: rounded to a millionth, so fractional costs do not show float noise. */
export function roundCredits(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
