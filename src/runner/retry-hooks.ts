/** p-retry's options for one task: the job's backoff, and hooks applying error-policy.ts to each failed attempt. */
import type { Options } from 'p-retry';
import { DEFAULT_RETRY_AFTER_MS, isApiError, keptBodyOf, ThrottledError } from '../api/errors.ts';
import { policyOf } from './error-policy.ts';
import type { ExecutableTask, ExecutorContext, RetrySettings } from './task-executor.ts';

/** What one task has used of its budgets in this run (p-retry counts the retries it consumes). */
export interface TaskTally {
  calls: number;
  paidRetries: number;
  throttled: number;
}

/** The options for `task`; `tally` counts its calls, paid retries and 429s across attempts. */
export function retryHooks(task: ExecutableTask, ctx: ExecutorContext, tally: TaskTally): Options {
  return {
    // Unbounded here, counted in shouldRetry: p-retry ends a task once `retries` are consumed before it asks
    // shouldRetry, so it would end one on a 429 after its last retry (or with retries 0), and a 429 uses none.
    retries: Number.POSITIVE_INFINITY,
    minTimeout: ctx.retry.minTimeoutMs,
    maxTimeout: ctx.retry.maxTimeoutMs,
    factor: 2,
    randomize: true,
    signal: ctx.stop.signal,
    // Not unref'd: a backoff may be the only thing pending, and the run must wait for it, not end.
    onFailedAttempt: ({ error }) => afterFailedAttempt(task, ctx, tally, error),
    shouldConsumeRetry: ({ error }) => policyOf(error).consumesRetry,
    shouldRetry: ({ error, retriesConsumed }) => withinBudget(ctx.retry, tally, error, retriesConsumed),
  };
}

/** onFailedAttempt: records the attempt, then pauses everything or stops the run as the policy says. */
function afterFailedAttempt(task: ExecutableTask, ctx: ExecutorContext, tally: TaskTally, err: Error): void {
  const policy = policyOf(err);
  if (isApiError(err)) {
    // A body kept for reprocess has its api_calls row written with it and the task's failure, in one
    // transaction (see failure() in task-executor.ts).
    if (policy.fails !== 'reprocess' || keptBodyOf(err) === null) void ctx.writer.attemptFailed(task, err);
    ctx.onAttemptError?.(err);
  }
  if (policy.pausesAll) pauseAll(ctx, tally, err);
  if (policy.stopsRun === 'credits') ctx.guard.markOutOfCredits();
  if (policy.stopsRun) ctx.stop.stop(policy.stopsRun, err);
}

/**
 * A 429: every call waits for its Retry-After, at least the backoff base, so a Retry-After of 0, negative or past
 * cannot loop the run on instant calls. Past the run's wait cap or the task's 429 cap, the run stops.
 */
function pauseAll(ctx: ExecutorContext, tally: TaskTally, err: Error): void {
  const askedMs = err instanceof ThrottledError ? err.retryAfterMs : DEFAULT_RETRY_AFTER_MS;
  // A wait past the cap stops the run all the same, so it is cut there: an absurd one (Infinity, a year-9999 date)
  // then stops it at once rather than read as no wait, and leaves no shared gate closed for years.
  const cutMs = Math.min(Number.isNaN(askedMs) ? 0 : askedMs, ctx.maxThrottleWaitMs + 1);
  ctx.gate.pause(Math.max(cutMs, ctx.retry.minTimeoutMs, 1));
  tally.throttled += 1;
  if (ctx.gate.totalPausedMs > ctx.maxThrottleWaitMs || tally.throttled >= ctx.maxThrottledAttemptsPerTask) {
    ctx.stop.stop('throttled', err);
  }
}

/**
 * shouldRetry: whether the policy and the task's budgets allow another try. Past its own allowance a charged but
 * unusable 200 fails retryable: the next run tries again, rather than this one pay `retries` more times for it.
 */
function withinBudget(retry: RetrySettings, tally: TaskTally, err: Error, retriesConsumed: number): boolean {
  const policy = policyOf(err);
  if (!policy.retry) return false;
  if (policy.consumesRetry && retriesConsumed >= retry.retries) return false;
  if (policy.paidRetries && isApiError(err) && err.paid && ++tally.paidRetries > retry.paidRetries) return false;
  return true;
}
