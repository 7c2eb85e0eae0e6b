/** A run's credits by its answers (balance, costs, spend): fed live by the guard or a dead run's stored counters, so both share one arithmetic. */
import { OPERATIONS, type CreditCounters, type Operation } from '../spec/types.ts';

export const CREDIT_METER_DEFAULTS = {
  /** Assumed cost until the counters show one; high, as low could overspend the reserve with calls in flight. */
  defaultCostPerCall: 5,
  /** Recent credits_used values kept per operation to estimate its cost (median step between them, sorted). */
  costSamples: 16,
  /** Replaying stored answers: within this many after a reset, one at or above the previous epoch's floor was charged before it. */
  lateAnswersAfterReset: 64,
} as const;

/** What earlier runs of this dataset tell of the account, so a run's spend is right from its first call. */
export interface CreditHistory {
  /** Each operation's cost as learned from earlier calls (see apiCallReads.learnedCost in store/api-calls.ts). */
  costs?: Partial<Record<Operation, number>>;
  /** credits_used as last reported before this run's first call, or null when no call was ever answered. */
  lastCreditsUsed?: number | null;
}

export interface CreditMeterOptions {
  /**
   * Whether the steps between this run's own counters show a cost: not when other runs share the account (their calls
   * land inside each step). Without, a cost is an earlier run's, else the default bounded by the first call's step.
   * @default true
   */
  costFromOwnSteps?: boolean;
}

/** Answers between two resets of credits_used (a plan renewal zeroes it): the counter only grows; spend is its span. */
interface Epoch {
  /** 0 for the run's first; one more at each reset. */
  index: number;
  /** The lowest credits_used charged in it: the run's first call in epoch 0, else the lowest seen since the reset. */
  floorUsed: number;
  floorOperation: Operation;
  maxUsed: number;
  total: number;
  /** How far credits_remaining fell short of total_credits - credits_used at maxUsed (0 when it did not). */
  shortfall: number;
  /** Answers since it began, late ones of the epoch before included: tells those when a call's epoch is unknown. */
  answers: number;
  /** Its floor is a balance read before any call (see CreditMeter.seed), not a charged call: it adds no cost. */
  seeded: boolean;
}

/** Learns the balance and the cost of each operation from the counters of paid answers, in arrival order. */
export class CreditMeter {
  private current: Epoch | null = null;
  /** The epoch before the current one, which late answers of calls sent before the reset still extend. */
  private previous: Epoch | null = null;
  /** Spend of the epochs before `previous`. */
  private closedSpend = 0;
  /** Recent credits_used of each operation's paid answers this epoch (led by the counter before its first). */
  private readonly usedByOp = new Map<Operation, number[]>();
  /** Each operation's estimated cost, kept up to date as answers arrive: costOf() runs several times per call. */
  private readonly medians = new Map<Operation, number>();
  /** The most an operation's call can cost, by the counter of a call that was its first (or first after a reset). */
  private readonly bounds = new Map<Operation, number>();

  private readonly lastCreditsUsed: number | null;
  private readonly historyCosts = new Map<Operation, number>();
  /** What the run's first paid call cost, fixed when its answer arrives (null: estimated by costOf). */
  private firstCost: number | null = null;
  /** The operation of the run's first paid answer (null before any, or when the books were seeded). */
  private firstOperation: Operation | null = null;
  /** Whether firstCost is a step from zero with no earlier counters: exact only if the account was never used. */
  private firstCostFromZero = false;

  /** Starts the books from the free balance check, so spend is exact from the first call; ignored (false) once an answer was observed. */
  seed(counters: CreditCounters): boolean {
    if (this.current !== null) return false;
    // floorOperation is not read for a seeded floor (it is the counter before any call, not a call's).
    this.current = { ...this.newEpoch(0, OPERATIONS[0], counters), answers: 0, seeded: true };
    return true;
  }

  /**
   * Whether what the run's first paid call cost is known rather than assumed: from the counters before it (a seed,
   * or a small step from an earlier run's), a cost earlier runs learned, or the steps of its operation since.
   */
  get firstCostKnown(): boolean {
    if (this.firstOperation === null) return true;
    return this.firstCost !== null ? !this.firstCostFromZero : this.knowsCost(this.firstOperation);
  }

  private readonly costFromOwnSteps: boolean;

  /** A cost earlier runs learned is the first sample of its operation's median. */
  constructor(history: CreditHistory = {}, options: CreditMeterOptions = {}) {
    this.costFromOwnSteps = options.costFromOwnSteps ?? true;
    this.lastCreditsUsed = history.lastCreditsUsed ?? null;
    for (const [op, cost] of Object.entries(history.costs ?? {})) {
      if (cost && cost > 0) {
        this.historyCosts.set(op as Operation, cost);
        this.medians.set(op as Operation, cost);
      }
    }
  }

  /** The balance as last reported (see reportedBalance), or null before any paid answer. */
  get balance(): number | null {
    const e = this.current;
    return e === null ? null : e.total - e.maxUsed - e.shortfall;
  }

  /** Credits spent so far, by the counters (the first call's cost estimated). */
  get spent(): number {
    return this.closedSpend + (this.previous ? this.spanOf(this.previous) : 0) + (this.current ? this.spanOf(this.current) : 0);
  }

  /** Index of the current epoch (0 until credits_used is seen going down); a call records it when sent. */
  get epoch(): number {
    return this.current?.index ?? 0;
  }

  /** Whether a cost of the operation has been seen (or was known from earlier runs). */
  knowsCost(operation: Operation): boolean {
    return this.medians.has(operation);
  }

  /**
   * Estimated cost of one call: medianStep() of its answers' counters (calls in flight answer out of order: arrival-order
   * steps count some twice). Before any step, the first call's step from the last counter bounds it; the default caps it.
   */
  costOf(operation: Operation): number {
    const median = this.medians.get(operation);
    if (median !== undefined) return median;
    return Math.min(CREDIT_METER_DEFAULTS.defaultCostPerCall, this.bounds.get(operation) ?? Infinity);
  }

  /**
   * Takes in the counters of one paid answer of `operation`; `sentInEpoch` is `epoch` as it was when the call
   * was sent (unknown when replaying stored answers: see CREDIT_METER_DEFAULTS.lateAnswersAfterReset).
   */
  observe(operation: Operation, counters: CreditCounters, sentInEpoch?: number): void {
    const used = counters.credits_used;
    const e = this.current;
    if (e === null) {
      this.current = this.newEpoch(0, operation, counters);
      this.firstOperation = operation;
      this.fixFirstCost(operation, used);
      this.sample(operation, used);
      return;
    }
    const p = this.previous;
    if (p !== null && this.chargedBeforeReset(p, e, used, sentInEpoch)) {
      // Charged before the reset, answered after it: spend of the epoch before. Counted in `answers` all the same, or
      // the window for them would never close once the counter passes p.floorUsed.
      p.maxUsed = Math.max(p.maxUsed, used);
      e.answers += 1;
      return;
    }
    if (used < e.floorUsed && this.belowFloor(e, operation, counters, sentInEpoch)) return;
    if (used < e.floorUsed) {
      // The epoch began lower: the run's first calls answered out of order (see belowFloor), or a call in flight at
      // the reset was charged after it but answered late.
      e.floorUsed = used;
      e.floorOperation = operation;
    }
    this.bound(e, operation, used);
    e.answers += 1;
    this.sample(operation, used);
    this.takeTotals(e, counters);
  }

  /**
   * The most an answer's call can have cost: after a reset, its counter; in books seeded from the balance read
   * before any call, the growth since that read (exact when nothing else was charged meanwhile).
   */
  private bound(e: Epoch, operation: Operation, used: number): void {
    const most = e.index > 0 ? used : e.seeded && used > e.floorUsed ? used - e.floorUsed : null;
    if (most !== null) this.bounds.set(operation, Math.min(this.bounds.get(operation) ?? Infinity, most));
  }

  /** Whether an answer seen after a reset was charged before it (see observe). */
  private chargedBeforeReset(p: Epoch, e: Epoch, used: number, sentInEpoch: number | undefined): boolean {
    if (used < p.floorUsed) return false;
    return sentInEpoch === undefined ? e.answers < CREDIT_METER_DEFAULTS.lateAnswersAfterReset : sentInEpoch < e.index;
  }

  /**
   * A counter below the epoch's floor: the floor moved down (answers of the run's first calls out of order), or
   * the counter was reset (a new epoch begun: true, the answer taken in), or neither (a late answer: false).
   */
  private belowFloor(e: Epoch, operation: Operation, counters: CreditCounters, sentInEpoch: number | undefined): boolean {
    const used = counters.credits_used;
    // Replaying a run whose first calls went together, answers are stored out of charge order: a drop no larger
    // than they could be charged, above the last earlier counter (or among the first answers), moves the floor down.
    const aboveBefore = this.lastCreditsUsed !== null ? used > this.lastCreditsUsed : e.answers <= CREDIT_METER_DEFAULTS.costSamples;
    const outOfOrderStart =
      e.index === 0 && !e.seeded && sentInEpoch === undefined && aboveBefore && e.floorUsed - used <= e.answers * CREDIT_METER_DEFAULTS.defaultCostPerCall;
    if (outOfOrderStart) {
      this.firstOperation = operation;
      this.fixFirstCost(operation, used);
      return false;
    }
    if (e.index === 0 || sentInEpoch === e.index) {
      // In the run's first epoch every call was charged after the first, which went alone; later, a call
      // sent after the reset was charged after the answer that showed it. Either way the counter went down.
      this.reset(operation, counters);
      return true;
    }
    return false;
  }

  private takeTotals(e: Epoch, counters: CreditCounters): void {
    const used = counters.credits_used;
    if (used >= e.maxUsed) {
      e.maxUsed = used;
      e.total = counters.total_credits;
      e.shortfall = shortfallOf(counters);
    } else if (counters.total_credits !== e.total) {
      // A top-up while the run goes on: the newest total counts even from a response billed earlier.
      e.total = Math.max(e.total, counters.total_credits);
    }
  }

  /**
   * Fixed at the first charged answer, as later out-of-order steps can show twice the cost: an earlier run's cost, else
   * a step from the prior counter no larger than the default (larger holds use elsewhere); else costOf estimates.
   */
  private fixFirstCost(operation: Operation, used: number): void {
    const before = this.lastCreditsUsed !== null && this.lastCreditsUsed < used ? this.lastCreditsUsed : 0;
    const step = used - before;
    if (step > 0) this.bounds.set(operation, step);
    const history = this.historyCosts.get(operation);
    this.firstCost = history ?? (step > 0 && step <= CREDIT_METER_DEFAULTS.defaultCostPerCall ? step : null);
    this.firstCostFromZero = history === undefined && this.firstCost !== null && this.lastCreditsUsed === null;
  }

  /** credits_used went down: the account's period was renewed. What the old counters showed is spent. */
  private reset(operation: Operation, counters: CreditCounters): void {
    if (this.previous) this.closedSpend += this.spanOf(this.previous);
    this.previous = this.current;
    this.current = this.newEpoch((this.current?.index ?? 0) + 1, operation, counters);
    // Steps across the reset are no cost; each operation's samples start again (the medians so far stay).
    this.usedByOp.clear();
    const used = counters.credits_used;
    if (used > 0) this.bounds.set(operation, Math.min(this.bounds.get(operation) ?? Infinity, used));
    this.sample(operation, used);
  }

  private newEpoch(index: number, operation: Operation, counters: CreditCounters): Epoch {
    const used = counters.credits_used;
    return { index, floorUsed: used, floorOperation: operation, maxUsed: used, total: counters.total_credits, shortfall: shortfallOf(counters), answers: 1, seeded: false };
  }

  private sample(operation: Operation, used: number): void {
    if (!this.costFromOwnSteps) return;
    let values = this.usedByOp.get(operation);
    if (values === undefined) {
      // In the run's first epoch an operation's first call goes alone (see CreditGuard): the counter before
      // it is the highest seen so far. After a reset the calls of a known operation do not wait for each other.
      const e = this.current;
      values = e !== null && e.index === 0 && e.maxUsed < used ? [e.maxUsed] : [];
      this.usedByOp.set(operation, values);
    }
    values.push(used);
    if (values.length > CREDIT_METER_DEFAULTS.costSamples + 1) values.shift();
    const cost = medianStep(values, { extra: this.historyCosts.get(operation) });
    if (cost !== null) this.medians.set(operation, cost);
  }

  /** What an epoch's answers show was spent: the span of its counters plus the cost of its lowest call. */
  private spanOf(e: Epoch): number {
    // A seeded floor is the counter before the first call, not a call. After a reset from zero (or more), the
    // lowest call cost at most its own counter.
    if (e.seeded) return e.maxUsed - e.floorUsed;
    const floorCost = e.index === 0 ? (this.firstCost ?? this.costOf(e.floorOperation)) : Math.min(this.costOf(e.floorOperation), e.floorUsed);
    return e.maxUsed - e.floorUsed + floorCost;
  }
}

/** The lower of credits_remaining and total_credits - credits_used: no credit is counted that may not be granted. */
export function reportedBalance(c: CreditCounters): number {
  return Math.min(c.credits_remaining, c.total_credits - c.credits_used);
}

function shortfallOf(c: CreditCounters): number {
  return c.total_credits - c.credits_used - reportedBalance(c);
}

/**
 * A call's cost by credits_used counters in any order: the median positive step once sorted (upper of an even count),
 * `extra` one more step (an earlier run's cost); null under `minSteps`. Shared by run, api_calls log and PostgreSQL samples.
 */
export function medianStep(values: readonly number[], options: { extra?: number; minSteps?: number } = {}): number | null {
  const { extra, minSteps = 1 } = options;
  const sorted = [...values].sort((a, b) => a - b);
  const steps = sorted.slice(1).map((v, i) => v - sorted[i]!).filter((step) => step > 0);
  if (extra !== undefined && extra > 0) steps.push(extra);
  if (steps.length === 0 || steps.length < minSteps) return null;
  steps.sort((a, b) => a - b);
  return steps[Math.floor(steps.length / 2)]!;
}

/** Credits as a run records them: rounded to a millionth, so fractional costs do not show float noise. */
export function roundCredits(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
