/** Options of a RateGate; every default lives in RATE_GATE_DEFAULTS. */
export interface RateGateOptions {
  /** Calls allowed in any sliding 60-second window; null means no limit. */
  requestsPerMinute: number | null;
  /**
   * Extra spacing as a fraction of the nominal interval. Starts are measured by the server on arrival, and a
   * call sent a few milliseconds late lands closer to the next one; 1% keeps every window under the limit
   * while giving up only 1% of the rate.
   */
  safetyMargin?: number;
}

export const RATE_GATE_DEFAULTS = { safetyMargin: 0.01 } as const;

/**
 * Spaces call starts evenly so that no sliding 60-second window ever holds more than `requestsPerMinute`
 * calls (a fixed window, as p-queue's interval cap is, lets two bursts meet at the window edge). A 429 pauses
 * the gate, and with it every call of the run, until the server's Retry-After has passed.
 */
export class RateGate {
  readonly intervalMs: number;
  private nextSlotAt = 0;
  private pausedUntil = 0;
  private pausedTotalMs = 0;

  constructor(options: RateGateOptions) {
    const margin = options.safetyMargin ?? RATE_GATE_DEFAULTS.safetyMargin;
    this.intervalMs = options.requestsPerMinute ? (60_000 / options.requestsPerMinute) * (1 + margin) : 0;
  }

  /** Resolves when the caller may start one call; rejects with the signal's reason when aborted. */
  async take(signal?: AbortSignal): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const now = performance.now();
      const slot = Math.max(now, this.nextSlotAt, this.pausedUntil);
      if (this.intervalMs > 0) this.nextSlotAt = slot + this.intervalMs;
      if (slot > now) await sleepUntil(slot, signal);
      // A 429 that arrived while we slept moves the whole run back: take a new slot after the pause.
      if (performance.now() >= this.pausedUntil) return;
    }
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
