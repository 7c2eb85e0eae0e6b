/** Options of a RateGate; every default lives in RATE_GATE_DEFAULTS. */
export interface RateGateOptions {
  /** Calls allowed in any sliding 60-second window; null means no limit. */
  requestsPerMinute: number | null;
  /**
   * Extra spacing as a fraction of the nominal interval. Starts are measured by the server on arrival, and a
   * call sent a few milliseconds late lands closer to the next one; 2% keeps every window under the limit
   * while giving up only 2% of the rate (arrival jitter of a few ms is absorbed too).
   */
  safetyMargin?: number;
}

export const RATE_GATE_DEFAULTS = {
  safetyMargin: 0.02,
  /**
   * A timer wakes a millisecond or two late; counting that small lateness as on time keeps it from pushing
   * the whole schedule back (each late wake-up would otherwise cost a few % of the rate). It never adds up:
   * starts still never come before their turn, and turns are a full interval apart.
   */
  lateCreditMs: 2,
} as const;

/**
 * Spaces call starts evenly so that no sliding 60-second window ever holds more than `requestsPerMinute`
 * calls (a fixed window, as p-queue's interval cap is, lets two bursts meet at the window edge). Callers take
 * turns, and each waits a full interval after the previous start as it actually happened: a busy event loop
 * that wakes a waiter late delays the ones after it instead of letting them out in a burst. A 429 pauses the
 * gate, and with it every call of the run, until the server's Retry-After has passed.
 */
export class RateGate {
  private interval = 0;
  /** Spacing before the next start: the interval, or across a change of rate the larger of the two. */
  private gapMs = 0;
  private readonly margin: number;
  private lastStartAt = -Infinity;
  private pausedUntil = 0;
  private pausedTotalMs = 0;
  private tail: Promise<void> = Promise.resolve();

  constructor(options: RateGateOptions) {
    this.margin = options.safetyMargin ?? RATE_GATE_DEFAULTS.safetyMargin;
    this.setRequestsPerMinute(options.requestsPerMinute);
  }

  /** Spacing of consecutive starts, in ms (0: no limit). */
  get intervalMs(): number {
    return this.interval;
  }

  /**
   * Changes the limit (the next job of a run). One gate serves the whole run so that the first call of a job
   * keeps its distance from the last call of the one before, and throttling waits add up over the run.
   */
  setRequestsPerMinute(requestsPerMinute: number | null): void {
    this.interval = requestsPerMinute ? (60_000 / requestsPerMinute) * (1 + this.margin) : 0;
    this.gapMs = Math.max(this.gapMs, this.interval);
  }

  /** Resolves when the caller may start one call; rejects with the signal's reason when aborted. */
  take(signal?: AbortSignal): Promise<void> {
    if (this.gapMs === 0 && performance.now() >= this.pausedUntil) {
      return signal?.aborted ? Promise.reject(signal.reason) : Promise.resolve();
    }
    const turn = this.tail.then(() => this.waitTurn(signal));
    this.tail = turn.catch(() => undefined);
    return turn;
  }

  /** Holds every call until `ms` from now (a 429's Retry-After); overlapping pauses do not add up. */
  pause(ms: number): void {
    const now = performance.now();
    const until = now + Math.max(0, ms);
    if (until <= this.pausedUntil) return;
    this.pausedTotalMs += until - Math.max(now, this.pausedUntil);
    this.pausedUntil = until;
  }

  /** Total time the gate has been paused by throttling, for the cap on waiting. */
  get totalPausedMs(): number {
    return this.pausedTotalMs;
  }

  private async waitTurn(signal?: AbortSignal): Promise<void> {
    let at: number;
    for (;;) {
      signal?.throwIfAborted();
      at = Math.max(this.lastStartAt + this.gapMs, this.pausedUntil);
      if (performance.now() >= at) break;
      // Re-checked after the sleep: a 429 may have moved the pause while we waited.
      await sleepUntil(at, signal);
    }
    this.lastStartAt = Math.max(at, performance.now() - RATE_GATE_DEFAULTS.lateCreditMs);
    this.gapMs = this.interval;
  }
}

/** Sleeps until a performance.now() instant; timers may fire a millisecond early, so it checks again. */
async function sleepUntil(at: number, signal?: AbortSignal): Promise<void> {
  for (let left = at - performance.now(); left > 0; left = at - performance.now()) {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(done, Math.ceil(left));
      function done() {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }
      function onAbort() {
        clearTimeout(timer);
        reject(signal!.reason);
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
