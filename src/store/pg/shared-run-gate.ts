/**
 * A worker's rate gate on PostgreSQL: requestsPerMinute is one limit for all workers of the API URL together, in any
 * sliding window. A 429's pause holds this worker (counted toward its cap on waiting) and, through the slots, the rest.
 */
import type pg from 'pg';
import { RateGate } from '../../rate/rate-gate.ts';
import type { RunGate } from '../run-store.ts';
import { SHARED_RATE_GATE_DEFAULTS, SharedRateGate, type SharedRateGateOptions } from './coordination/shared-rate-gate.ts';

const MINUTE_MS = 60_000;

/**
 * The shared gate's whole calls per window for `requestsPerMinute` over `windowMs`, keeping the rate exact: 0.2 a
 * minute is one call per five minutes, 1.5 a minute one per 40 seconds.
 */
export function sharedLimitOf(requestsPerMinute: number, windowMs: number): { limit: number; windowMs: number } {
  const perWindow = (requestsPerMinute * windowMs) / MINUTE_MS;
  const limit = Math.max(1, Math.floor(perWindow));
  return { limit, windowMs: (windowMs * limit) / perWindow };
}

export class SharedRunGate implements RunGate {
  private readonly local = new RateGate({ requestsPerMinute: null });
  private shared: SharedRateGate | null = null;

  constructor(
    private readonly pool: pg.Pool,
    /** What the limit is for: the API URL. */
    private readonly gate: string,
    /** The window a minute's limit is counted over, scaled (tests); a minute by default. */
    private readonly windowMs: number = SHARED_RATE_GATE_DEFAULTS.windowMs,
    /** The shared gate's clock (tests). */
    private readonly gateOptions: Pick<SharedRateGateOptions, 'clockSql'> = {},
  ) {}

  setRequestsPerMinute(requestsPerMinute: number | null): void {
    this.shared = requestsPerMinute
      ? new SharedRateGate(this.pool, { ...this.gateOptions, gate: this.gate, ...sharedLimitOf(requestsPerMinute, this.windowMs) })
      : null;
  }

  async take(signal?: AbortSignal): Promise<void> {
    await this.local.take(signal);
    await this.shared?.take(signal);
  }

  pause(ms: number): void {
    this.local.pause(ms);
    // Best effort: a failed write leaves the other workers to meet the 429 themselves.
    this.shared?.pause(ms).catch(() => undefined);
  }

  get totalPausedMs(): number {
    return this.local.totalPausedMs;
  }
}
