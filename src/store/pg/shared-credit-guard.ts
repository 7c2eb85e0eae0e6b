/**
 * The run's CreditGuard, each reservation also fitting the account's shared budget. A cost is what all workers' answers
 * show, not a step of this worker's counters (others' calls step them too); till then a charge waits, reservation held,
 * and a step bounds the cost from above: calls go together at that bound once this worker's first answer gave one.
 */
import type { CreditCounters, Operation } from '../../spec/types.ts';
import type { CreditHistory } from '../../credits/credit-meter.ts';
import { CreditGuard, type Charge, type CreditLimits, type CreditStopReason, type Reservation } from '../../credits/credit-guard.ts';
import { readableCounters } from '../../credits/unread-charges.ts';
import type { RefusedAttempt, SharedCharge, SharedCreditBudget, SharedReservation } from './coordination/shared-credit-budget.ts';

/**
 * An answer whose charge waits for the account's samples to show its cost; `estimate`: what this worker's spend counts
 * meanwhile.
 */
type Unpriced = { shared: SharedReservation; counters: CreditCounters; estimate: number };

export const SHARED_CREDIT_GUARD_DEFAULTS = {
  /** A wait shorter than the progress log's interval needs no line of its own; tests shorten it, not their calls' holds. */
  longWaitMs: 5_000,
  /** A wait that goes on is told again no sooner than this. */
  toldEveryMs: 60_000,
} as const;

export interface SharedCreditGuardOptions {
  /** @default SHARED_CREDIT_GUARD_DEFAULTS.longWaitMs */
  longWaitMs?: number | undefined;
}

export class SharedCreditGuard extends CreditGuard {
  private readonly shared = new Map<Reservation, { shared: SharedReservation; after: CreditCounters | null }>();
  private readonly renewal: { stop(): void };
  /** The report of the seeded balance, awaited before the first reservation. */
  private seeded: Promise<void> = Promise.resolve();
  /** Each operation's cost as the account's samples showed it at this worker's last settle (or first call). */
  private readonly learned = new Map<Operation, number>();
  /** Each operation's read of the account's samples before its first call (see priceFirst). */
  private readonly priced = new Map<Operation, Promise<unknown>>();
  /** Settles not yet written (see drained). */
  private readonly pending = new Set<Promise<void>>();
  /** What this worker's settled calls were charged to the run (see spent), answers not charged yet at their estimate. */
  private charged = 0;
  private readonly unpriced = new Map<Operation, Unpriced[]>();
  /** Whether the balance was read before the first call (seed): the budget knows it, so answers may wait for a cost. */
  private balanceRead = false;
  /** This worker's newest counters (the balance read, or an answer): a call sent after them was charged above them. */
  private lastSeen: CreditCounters | null = null;
  /**
   * The most a call of each operation can cost: the least step of an answer's counter over the counters this worker
   * had read when sending it (others' calls only add to a step). A worker's answers cannot show the cost, but they
   * bound it at once: the assumed 5 could be dearer, and going alone till the cost shows could last the whole run.
   */
  private readonly bounds = new Map<Operation, number>();
  private readonly startedAt = new Date().toISOString();
  private forgot = false;
  /** When a wait for others' calls in flight was last told (onWait), on this process's monotonic clock. */
  private waitToldAt = -Infinity;

  constructor(
    limits: CreditLimits,
    history: CreditHistory,
    private readonly budget: SharedCreditBudget,
    private readonly options: SharedCreditGuardOptions = {},
  ) {
    super(limits, history, { costFromOwnSteps: false });
    this.renewal = budget.keepRenewed();
  }

  /**
   * The balance read before the run's first call goes to the shared budget too: there it is the only news of a
   * top-up when the last balance stored is below the reserve (no call would go, so no answer would tell it).
   */
  override seed(counters: CreditCounters): boolean {
    if (!super.seed(counters)) return false;
    this.balanceRead = true;
    this.lastSeen = counters;
    this.seeded = this.budget.report(counters);
    // A failure surfaces at the next acquire; until then it must not end the process as unhandled.
    this.seeded.catch(() => undefined);
    return true;
  }

  override async acquire(operation: Operation, signal?: AbortSignal): Promise<Reservation | null> {
    await this.seeded;
    await this.priceFirst(operation);
    const local = await super.acquire(operation);
    if (!local) return null;
    // An assumed cost goes alone as a probe. Before this call waits, answers waiting for a cost are charged at their
    // estimate, or else the account's samples are read again (other workers' answers may show the cost by now).
    const price = () => ({ cost: this.costOf(operation), probe: this.costAssumed(operation) });
    const since = performance.now();
    const beforeWait = async (refused: RefusedAttempt) => {
      this.tellWait(refused, since);
      return this.chargeUnpriced() || (await this.priceFromAccount(operation));
    };
    const reserve = () => this.budget.acquire(price, this.limits, beforeWait, signal);
    let shared;
    try {
      shared = await reserve();
      if ('stop' in shared && (await this.forgetLastKnown(shared.stop))) shared = await reserve();
    } catch (err) {
      // Stopped waiting (a signal) or the database failed: nothing is sent, the local reservation goes back.
      super.settle(local, null);
      throw err;
    }
    if ('stop' in shared) {
      super.settle(local, null);
      return this.stop(shared.stop, local.cost, false, shared.figures.spent);
    }
    // Read now, as the call goes: an answer settled meanwhile was charged before it.
    this.shared.set(local, { shared, after: this.lastSeen });
    return local;
  }

  /** A wait for room calls in flight hold, told past `longWaitMs` and once a minute at most (a balance not known yet is not). */
  private tellWait({ reason, figures }: RefusedAttempt, since: number): void {
    const now = performance.now();
    const longWaitMs = this.options.longWaitMs ?? SHARED_CREDIT_GUARD_DEFAULTS.longWaitMs;
    if (reason === 'learning' || !this.onWait || now - since < longWaitMs || now - this.waitToldAt < SHARED_CREDIT_GUARD_DEFAULTS.toldEveryMs) return;
    this.waitToldAt = now;
    this.onWait({ reason, reserved: figures.reserved, balance: figures.balance });
  }

  /**
   * At a reserve of 0 the service's 402 is the floor, as in CreditGuard.stopOnLastKnown: a balance no answer reported
   * since this worker started is the last known one, which a top-up may have raised. Forgotten once, a call goes
   * alone and its answer shows the balance; kept, a balance below one call stopped every later run.
   */
  private async forgetLastKnown(stop: CreditStopReason): Promise<boolean> {
    if (stop !== 'reserve' || this.limits.reserve > 0 || this.balanceRead || this.lastSeen !== null || this.forgot) return false;
    this.forgot = true;
    return this.budget.forgetBalance(this.startedAt);
  }

  /**
   * Before an operation's first call, its cost as the account's samples show it: at the assumed cost (or as a probe) a
   * worker joining others with calls in flight would get no room till they spent it all. One read; again if it failed.
   */
  private priceFirst(operation: Operation): Promise<unknown> {
    let read = this.priced.get(operation);
    if (!read) {
      read = this.priceFromAccount(operation).catch((err: unknown) => {
        this.priced.delete(operation);
        throw err;
      });
      this.priced.set(operation, read);
    }
    return read;
  }

  /** Learns `operation`'s cost from the account's samples unless they showed it already; true when it did now. */
  private async priceFromAccount(operation: Operation): Promise<boolean> {
    if (this.learned.has(operation)) return false;
    const cost = await this.budget.accountCost(operation);
    if (cost === null || this.learned.has(operation)) return false;
    this.learn(operation, cost);
    return true;
  }

  /**
   * What this worker's calls cost as the run's shared spend counts them (summary, runs.credits_spent, maxPerRun): its
   * own counters' span would count every call on the account meanwhile, others' included, and stop it early.
   */
  override get spent(): number {
    return this.charged;
  }

  /**
   * The cost the answers of every worker of the account show, else one earlier runs learned, else the bound of this
   * worker's answers (see bounds), else the assumed default.
   */
  override costOf(operation: Operation): number {
    return this.learned.get(operation) ?? this.boundOf(operation) ?? super.costOf(operation);
  }

  override knowsCost(operation: Operation): boolean {
    return this.learned.has(operation) || super.knowsCost(operation);
  }

  /** Assumed only until this worker's first answer bounds the cost: then its calls go together, reserved at the bound. */
  protected override costAssumed(operation: Operation): boolean {
    return !this.knowsCost(operation) && !this.bounds.has(operation);
  }

  /** The bound of `operation`'s cost (see bounds) while no cost is known. */
  private boundOf(operation: Operation): number | undefined {
    return this.knowsCost(operation) ? undefined : this.bounds.get(operation);
  }

  /** A paid answer whose counters cannot be read: the cost the account's samples show, else the bound, else the local guard's rule. */
  override unreadCost(operation: Operation): number {
    return this.learned.get(operation) ?? this.boundOf(operation) ?? super.unreadCost(operation);
  }

  override settle(reservation: Reservation, charge: Charge): void {
    const sent = this.shared.get(reservation);
    this.shared.delete(reservation);
    const op = reservation.operation;
    // The answer's counters as it gave them; sampled (and its charge held) only when they can be read.
    const given = charge !== null && charge !== 'unread' ? charge : null;
    const counters = given && readableCounters(given) ? given : null;
    // Bounded before the local guard wakes the calls waiting for it: they go at the bound.
    if (counters) this.bound(op, sent?.after ?? null, counters);
    super.settle(reservation, charge);
    if (!sent) return;
    const { shared } = sent;
    // Without a balance read first, the budget learns the balance from the charges: those cannot wait.
    if (counters && !this.knowsCost(op) && this.balanceRead) {
      this.defer(op, { shared, counters, estimate: this.costOf(op) });
      return;
    }
    const cost = charge === null ? 0 : charge === 'unread' ? this.unreadCost(op) : this.costOf(op);
    this.charge(shared, { cost, counters: given, sample: counters ? { operation: op, creditsUsed: counters.credits_used } : undefined }, 0);
  }

  /** Takes in an answer's counters: its step over those read before its call was sent bounds its operation's cost. */
  private bound(op: Operation, after: CreditCounters | null, counters: CreditCounters): void {
    const step = after && after.total_credits === counters.total_credits ? counters.credits_used - after.credits_used : 0;
    if (step > 0) this.bounds.set(op, Math.min(this.bounds.get(op) ?? Infinity, step));
    const last = this.lastSeen;
    if (!last || last.total_credits !== counters.total_credits || counters.credits_used > last.credits_used) this.lastSeen = counters;
  }

  /** Holds an answer's charge until the account's samples, its counter among them, show what its operation costs. */
  private defer(op: Operation, answer: Unpriced): void {
    (this.unpriced.get(op) ?? this.unpriced.set(op, []).get(op)!).push(answer);
    this.charged += answer.estimate;
    this.track(this.budget.sample({ operation: op, creditsUsed: answer.counters.credits_used }).then((step) => {
      if (step !== null) this.learn(op, step);
    }));
  }

  private learn(op: Operation, step: number): void {
    this.learned.set(op, step);
    this.chargeWaiting(op);
  }

  /** The answers of `op` waiting for its cost, charged at it now (or at the estimate, when the samples never show it). */
  private chargeWaiting(op: Operation): void {
    const waiting = this.unpriced.get(op) ?? [];
    this.unpriced.delete(op);
    const cost = this.costOf(op);
    for (const w of waiting) {
      this.charge(w.shared, { cost, counters: w.counters, sample: { operation: op, creditsUsed: w.counters.credits_used, recorded: true } }, w.estimate);
    }
  }

  /** Charges every answer still waiting for a cost; false when there was none. */
  private chargeUnpriced(): boolean {
    if (this.unpriced.size === 0) return false;
    for (const op of [...this.unpriced.keys()]) this.chargeWaiting(op);
    return true;
  }

  /** Sends a call's charge to the budget; `counted` is what this worker's spend already holds for it. */
  private charge(shared: SharedReservation, charge: SharedCharge, counted: number): void {
    this.charged += charge.cost - counted;
    const op = charge.sample?.operation;
    // Not awaited: until it is written the reservation still counts, which only errs on the safe side.
    this.track(this.budget.settle(shared, charge).then((settled) => {
      this.charged += settled.cost - charge.cost;
      if (op && settled.learnedCost !== null) this.learn(op, settled.learnedCost);
    }));
  }

  private track(written: Promise<void>): void {
    const settled = written.catch(() => undefined);
    this.pending.add(settled);
    void settled.finally(() => this.pending.delete(settled));
  }

  /** Resolves once every settle so far is written (or failed), sent at once; answers waiting for a cost wait on. */
  async drained(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending, this.budget.hurry()]);
  }

  /** Every settle written, the answers still waiting for a cost charged at their estimate. */
  protected override async chargesFinal(): Promise<boolean> {
    if (this.pending.size === 0 && this.unpriced.size === 0) return false;
    await this.drained();
    this.chargeUnpriced();
    await this.drained();
    return true;
  }

  /** A stop on credits also gives back the room this worker's blocks hold (a block asked ahead included) to the other workers. */
  protected override stop(reason: CreditStopReason, cost: number | null = null, costAssumed = false, spent = this.spent): null {
    const stopped = super.stop(reason, cost, costAssumed, spent);
    this.track(this.budget.giveBack());
    return stopped;
  }

  /** Stops renewing this worker's reservations (the run is over) and gives back the room its blocks have left. */
  async close(): Promise<void> {
    this.renewal.stop();
    await this.finish();
    await this.budget.close();
  }
}
