/**
 * Why a run stopped sending calls before its work was done; `outage`: the API looks down (see
 * OutageBreaker); `unusable`: its paid answers cannot be read (see UnusableAnswerBreaker).
 */
export type StopReason = 'credits' | 'throttled' | 'interrupted' | 'auth' | 'outage' | 'unusable' | 'fatal';

/**
 * The run's one "stop sending" switch. The first reason wins: a run interrupted while it was already
 * stopping on credits still reports credits (unless the interrupt kept a refresh from being deferred: runJobs). Its signal aborts waits (rate gate, retry backoff), never a
 * call already on the wire, so every billed response is still written.
 */
export class RunStop {
  private readonly controller = new AbortController();
  private why: StopReason | null = null;
  private cause: unknown = null;

  /** Stops the run for `reason`; later calls keep the first reason. */
  stop(reason: StopReason, cause?: unknown): void {
    if (this.why) return;
    this.why = reason;
    this.cause = cause ?? null;
    this.controller.abort(new StopRequested(reason));
  }

  get reason(): StopReason | null {
    return this.why;
  }

  /** The error behind an 'auth', 'outage' or 'fatal' stop (and a 402's behind a 'credits' one). */
  get error(): unknown {
    return this.cause;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }
}

/** The abort reason of a RunStop's signal: not a failure of the item that was waiting. */
export class StopRequested extends Error {
  constructor(readonly reason: StopReason) {
    super(`run stopping: ${reason}`);
    this.name = 'StopRequested';
  }
}
