import { setMaxListeners } from 'node:events';
import type { CreditGuard } from '../credits/credit-guard.ts';

/** Why a run stopped sending calls early; `outage`: the API looks down; `unusable`: its paid answers cannot be read. */
export type StopReason = 'credits' | 'throttled' | 'interrupted' | 'auth' | 'outage' | 'unusable' | 'fatal';

/**
 * The run's one "stop sending" switch; the first reason wins (unless an interrupt kept a refresh from being deferred).
 * Its signal aborts waits (rate gate, backoff), never a call on the wire, so every billed response is still written.
 */
export class RunStop {
  private readonly controller = new AbortController();
  readonly signal: AbortSignal = this.controller.signal;
  private why: StopReason | null = null;
  private cause: unknown = null;

  constructor() {
    // Every call in flight waits on this signal (the rate gate, a backoff): with a concurrency above ten, Node
    // would print a false "possible memory leak" warning on a user's terminal or cron log.
    setMaxListeners(0, this.controller.signal);
  }

  /** Stops the run for `reason`; later calls keep the first reason. */
  stop(reason: StopReason, cause?: unknown): void {
    if (this.why) return;
    this.why = reason;
    this.cause = cause ?? null;
    // What a wait the signal cuts short rejects with: not a failure of the item that was waiting.
    this.controller.abort(new Error(`run stopping: ${reason}`));
  }

  get reason(): StopReason | null {
    return this.why;
  }

  /** The error behind an 'auth', 'outage' or 'fatal' stop (and a 402's behind a 'credits' one). */
  get error(): unknown {
    return this.cause;
  }
}

/** A job's stop switch following the run's, and its release; settleJobStop decides if the job's stop is the run's. */
export function jobStopOf(run: RunStop) {
  const stop = new RunStop();
  const follow = () => stop.stop(run.reason!, run.error);
  if (run.reason) follow();
  else run.signal.addEventListener('abort', follow, { once: true });
  return { stop, release: () => run.signal.removeEventListener('abort', follow) };
}

/**
 * After a job: true when it stopped on its own `credits.maxPerRun`, which ends that job only, so later jobs whose caps
 * leave room still run; any other stop (reserve, 402, throttle...) concerns the account or service: the run stops.
 */
export function settleJobStop(job: RunStop, run: RunStop, guard: CreditGuard): boolean {
  if (!job.reason || run.reason) return false;
  if (job.reason === 'credits' && guard.stopDetail?.reason === 'max-per-run') return true;
  run.stop(job.reason, job.error);
  return false;
}
