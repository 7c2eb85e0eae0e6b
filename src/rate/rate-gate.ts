/** Options of a RateGate; every default lives in RATE_GATE_DEFAULTS. */
export interface RateGateOptions {
  /** Calls allowed in any sliding 60-second window; null means no limit. */
  requestsPerMinute: number | null;
  /** Extra spacing as a fraction of the interval: the server counts starts on arrival, so a call sent a few ms late lands nearer the next. */
  safetyMargin?: number;
}

/** A wait a 429's pause holds: how long, until when, when the service asked (ISO times), and whether every worker holds back. */
export interface GateWait {
  waitMs: number;
  until: string;
  askedAt: string;
  shared: boolean;
}

export const RATE_GATE_DEFAULTS = {
  safetyMargin: 0.02,
  /** A timer's lateness counted as on time, so it does not push the schedule back; no start comes before its turn. */
  lateCreditMs: 2,
  /** A pause that holds a call longer than this is told (onWait): shorter ones pass unnoticed on the progress line. */
  toldPauseMs: 5_000,
} as const;

/**
 * Spaces call starts evenly so no sliding minute holds more than `requestsPerMinute` (a fixed window lets bursts meet
 * at its edge); each waits a full interval after the previous actual start, so a late wake-up never releases a burst.
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
  /** When the service asked for the pause under way (wall clock), and whether a wait within it was told. */
  private pauseAskedAt = 0;
  private pauseTold = true;
  /** Told once a pause holds a call over toldPauseMs, so the run says why it waits rather than sit silent. */
  onWait: ((wait: GateWait) => void) | null = null;

  constructor(options: RateGateOptions) {
    this.margin = options.safetyMargin ?? RATE_GATE_DEFAULTS.safetyMargin;
    this.setRequestsPerMinute(options.requestsPerMinute);
  }

  /** Spacing of consecutive starts, in ms (0: no limit). */
  get intervalMs(): number {
    return this.interval;
  }

  /** The next job's limit: one gate serves the whole run, so its first call keeps its distance from the last job's and throttle waits add up. */
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
    this.pauseAskedAt = Date.now();
    this.pauseTold = false;
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
      if (at === this.pausedUntil) this.tellPause(at - performance.now());
      // Re-checked after the sleep: a 429 may have moved the pause while we waited.
      await sleepUntil(at, signal);
    }
    this.lastStartAt = Math.max(at, performance.now() - RATE_GATE_DEFAULTS.lateCreditMs);
    this.gapMs = this.interval;
  }

  private tellPause(waitMs: number): void {
    if (this.pauseTold || waitMs < RATE_GATE_DEFAULTS.toldPauseMs || !this.onWait) return;
    this.pauseTold = true;
    const until = new Date(Date.now() + waitMs).toISOString();
    this.onWait({ waitMs, until, askedAt: new Date(this.pauseAskedAt).toISOString(), shared: false });
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
