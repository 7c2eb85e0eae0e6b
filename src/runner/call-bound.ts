/**
 * The bound on calls one task may send in one run, whatever the service answers: its first try, its retries
 * (p-retry's `retries`, which a charged but unusable 200 shares), and its throttled attempts (429s, which use
 * up no retry but count against their own cap). docs/architecture.md states it; the executor enforces it.
 */
import type { RetrySettings } from './task-executor.ts';

export function maxCallsPerTask(retry: Pick<RetrySettings, 'retries'>, maxThrottledAttemptsPerTask: number): number {
  return 1 + retry.retries + maxThrottledAttemptsPerTask;
}

/**
 * How long a 429 pauses the run: its Retry-After, but never less than the backoff base, so that a Retry-After
 * of 0, a negative one or a date in the past cannot make the run call again at once, in a loop.
 */
export function throttleWaitMs(retryAfterMs: number, retry: Pick<RetrySettings, 'minTimeoutMs'>): number {
  const asked = Number.isFinite(retryAfterMs) ? retryAfterMs : 0;
  return Math.max(asked, retry.minTimeoutMs, 1);
}
