/**
 * Paid answers whose cost cannot be read (no usable counters, cut at the size limit, not JSON) are charged at an estimate,
 * so the reserve and cap hold, until readable answers charged before it was sent and after it was answered bracket it.
 */
import type { CreditCounters } from '../spec/types.ts';

export interface SentAt {
  /** The meter's epoch when the call was sent. */
  epoch: number;
  /** Whether counters (an answer or a seed) were read before the call was sent: its charge is above them. */
  afterCounters: boolean;
  /** The clock of answers when the call was sent. */
  tick: number;
}

/** One paid answer charged at an estimate, not yet covered by readable counters. */
interface OpenCharge extends Omit<SentAt, 'tick'> {
  cost: number;
  /** When it was answered, on the clock of `tick`. */
  answeredAt: number;
}

/**
 * Whether counters are all numbers a balance can be: anything else is unreadable (missing, a string, 1e400 read as
 * Infinity, and past 2^53, where 1e308 counters summed to Infinity on SQLite and stayed in every status after). Only
 * the balance may be below zero: a negative credits_used read as a renewal made the run's spend negative, past its cap.
 */
export function readableCounters(c: CreditCounters | null | undefined): c is CreditCounters {
  return c != null && [c.total_credits, c.credits_used, c.credits_remaining].every(isCounter) && c.total_credits >= 0 && c.credits_used >= 0;
}

function isCounter(n: unknown): boolean {
  return typeof n === 'number' && Math.abs(n) <= Number.MAX_SAFE_INTEGER;
}

/** The estimates of unread paid answers of a run, and which of them the counters have not covered yet. */
export class UnreadCharges {
  private open: OpenCharge[] = [];
  /** The clock of answers, read when a call is sent. */
  tick = 0;
  /** Paid answers of the run whose cost was estimated. */
  count = 0;

  /** Estimates the counters do not cover yet: added to the meter's spend, taken off its balance. */
  get uncovered(): number {
    return this.open.reduce((sum, c) => sum + c.cost, 0);
  }

  /** Records an unread paid answer of a call sent at `sent`, charged at `cost`. */
  charge(sent: SentAt, cost: number): void {
    this.tick += 1;
    this.count += 1;
    this.open.push({ cost, epoch: sent.epoch, afterCounters: sent.afterCounters, answeredAt: this.tick });
  }

  /**
   * A readable answer of a call sent at `sent`: an unread answer of the same epoch, answered before that call was sent
   * and sent after counters were read, lies within the meter's span, so its estimate goes.
   */
  readable(sent: SentAt, epochNow: number): void {
    this.tick += 1;
    if (this.open.length === 0 || sent.epoch !== epochNow) return;
    this.open = this.open.filter((c) => !(c.afterCounters && c.epoch === sent.epoch && c.answeredAt <= sent.tick));
  }

  /** An answer that was not billed (a 404, an error before any 200). */
  unpaid(): void {
    this.tick += 1;
  }
}
