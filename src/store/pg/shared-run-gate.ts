/**
 * The rate gate of a worker on PostgreSQL: the job's requestsPerMinute is one limit shared by every worker of the
 * API URL (coordination/shared-rate-gate.ts), so all of them together never exceed it in any sliding window. A
 * 429's pause holds this worker (counted toward its cap on waiting, as on SQLite) and the others through the
 * shared slots.
 */
import type pg from 'pg';
import { RateGate } from '../../api/rate-gate.ts';
import type { RunGate } from '../run-store.ts';
import { SHARED_RATE_GATE_DEFAULTS, SharedRateGate } from './coordination/shared-rate-gate.ts';

const MINUTE_MS = 60_000;

export class SharedRunGate implements RunGate {
  private readonly local = new RateGate({ requestsPerMinute: null });
  private shared: SharedRateGate | null = null;

  constructor(
    private readonly pool: pg.Pool,
    /** What the limit is for: the API URL. */
    private readonly gate: string,
    /** The window a minute's limit is counted over, scaled (tests); a minute by default. */
    private readonly windowMs: number = SHARED_RATE_GATE_DEFAULTS.windowMs,
  ) {}

  setRequestsPerMinute(requestsPerMinute: number | null): void {
    const limit = requestsPerMinute ? Math.max(1, Math.floor((requestsPerMinute * this.windowMs) / MINUTE_MS)) : 0;
    this.shared = limit > 0 ? new SharedRateGate(this.pool, { gate: this.gate, limit, windowMs: this.windowMs }) : null;
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
