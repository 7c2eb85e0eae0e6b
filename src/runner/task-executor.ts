import pRetry, { AbortError } from 'p-retry';
import type { ApiClient, ApiResult } from '../api/types.ts';
import { ApiSchemaError, errorAction, isApiError, isUnusablePaidAnswer, ThrottledError, type ApiError } from '../api/errors.ts';
import type { Operation } from '../spec/types.ts';
import type { AnySubject } from '../operations/index.ts';
import type { OperationSpec } from '../operations/operation-spec.ts';
import type { DriftTally } from '../operations/drift.ts';
import type { CreditGuard } from './credit-guard.ts';
import { chargeOfFailure } from './charge-of.ts';
import type { RateGate } from './rate-gate.ts';
import type { RunStop } from './run-stop.ts';
import type { ResultWriter, WriterTask } from './result-writer.ts';
import type { IngestRequest } from '../store/ingest-request.ts';
import { maxCallsPerTask, throttleWaitMs } from './call-bound.ts';

/** Retry settings of a job, as p-retry takes them. */
export interface RetrySettings {
  retries: number;
  minTimeoutMs: number;
  maxTimeoutMs: number;
  /** Retries of a 200 that could not be used, which was most likely charged (see isUnusablePaidAnswer). */
  paidRetries: number;
}

/** Everything a task needs to make its call and record the outcome. */
export interface ExecutorContext {
  client: ApiClient;
  guard: CreditGuard;
  gate: RateGate;
  stop: RunStop;
  writer: ResultWriter;
  retry: RetrySettings;
  /** Total time the run may spend paused by 429s before it ends as deferred. */
  maxThrottleWaitMs: number;
  /** 429s one task may get in this run before the run ends as throttled (the wait cap alone misses Retry-After: 0). */
  maxThrottledAttemptsPerTask: number;
  /** Counts failed attempts for the progress display. */
  onAttemptError?: (err: ApiError) => void;
  /** Told of every task that ended in this run (not of one the run's stop left pending): outage breaker, failure log. */
  onTaskEnded?: (task: ExecutableTask, outcome: TaskOutcome) => void;
  /** Whether the run still holds its database lock, asked right before each call (RunLock.held). */
  holdsLock?: () => boolean;
}

/** A task as the executor sees it: its ledger id, its operation's spec and the request it sends (checked by the spec's schema). */
export interface ExecutableTask<Q = unknown> extends WriterTask {
  operation: Operation;
  spec: OperationSpec<Q, unknown, AnySubject, unknown>;
  inputKey: string;
  page: number;
  request: Q;
  ingest: IngestRequest;
  requestKey: string;
}

/**
 * How a task ended in this run; `lastPage` says the input's list ended on this page, `message` is the 404 body's
 * (see ApiNotFound), kept for the not-found-only warning. A failed task has used up
 * its retries (or met an error no retry would change): `code` and `message` are those recorded on it.
 */
export type TaskOutcome =
  | { kind: 'done'; lastPage: boolean; drift: DriftTally }
  | { kind: 'not_found'; message: string | null }
  | { kind: 'failed'; retryable: boolean; code: string; message: string; error: unknown }
  | { kind: 'stopped' };

/**
 * Makes one task's call: reserve credits, wait for the rate gate, send, and retry what can be retried with
 * exponential backoff and jitter. A 429 pauses the whole run and is tried again without using up a retry.
 */
export async function executeTask(task: ExecutableTask, ctx: ExecutorContext): Promise<TaskOutcome> {
  let attempts = 0;
  let unusablePaid = 0;
  let throttled = 0;
  const maxCalls = maxCallsPerTask(ctx.retry, ctx.maxThrottledAttemptsPerTask);
  const attempt = async (): Promise<ApiResult<unknown>> => {
    for (;;) {
      if (ctx.stop.reason) throw new AbortError(new StoppedBeforeCall());
      const reservation = await ctx.guard.acquire(task.operation);
      if (!reservation) {
        ctx.stop.stop('credits');
        throw new AbortError(new StoppedBeforeCall());
      }
      try {
        await ctx.gate.take(ctx.stop.signal);
      } catch {
        ctx.guard.settle(reservation, null);
        throw new AbortError(new StoppedBeforeCall());
      }
      // The one place the bound on a task's calls is enforced (the throttle cap and p-retry keep below it).
      if (attempts >= maxCalls) {
        ctx.guard.settle(reservation, null);
        throw new AbortError(new Error(`internal: task reached its bound of ${maxCalls} calls in one run`));
      }
      // Asked last, after any wait: a run suspended meanwhile whose lock was taken over must not pay for the
      // tasks the new holder now does (its loss stops the run: see runJobs).
      if (ctx.holdsLock && !ctx.holdsLock()) {
        ctx.guard.settle(reservation, null);
        throw new AbortError(new StoppedBeforeCall());
      }
      attempts += 1;
      let result: ApiResult<unknown>;
      try {
        result = await ctx.client.call(task.spec, task.request);
      } catch (err) {
        // A 200 that cannot be used was still paid for: its counters, or an estimate, keep the caps true.
        ctx.guard.settle(reservation, chargeOfFailure(err));
        if (isApiError(err)) {
          // A wrong-shape body ends the task at once; its api_calls row is written with the body and the task's
          // failure, in one transaction (see failure()).
          if (!(err instanceof ApiSchemaError)) void ctx.writer.attemptFailed(task, err);
          ctx.onAttemptError?.(err);
        }
        const action = errorAction(err);
        if (action === 'throttle' && err instanceof ThrottledError) {
          ctx.gate.pause(throttleWaitMs(err.retryAfterMs, ctx.retry));
          throttled += 1;
          if (ctx.gate.totalPausedMs > ctx.maxThrottleWaitMs || throttled >= ctx.maxThrottledAttemptsPerTask) {
            ctx.stop.stop('throttled', err);
          }
          continue;
        }
        // Past its own allowance, a charged but unusable 200 ends the task as failed-retryable: the next run tries
        // it again, instead of this one paying up to `retries` more times for a fault that may repeat.
        if (isUnusablePaidAnswer(err) && ++unusablePaid > ctx.retry.paidRetries) {
          throw new AbortError(err as Error);
        }
        if (action === 'retry') throw err;
        if (action === 'stop-run') {
          const code = isApiError(err) ? err.code : '';
          if (code === 'OUT_OF_CREDITS') {
            ctx.guard.markOutOfCredits();
            ctx.stop.stop('credits', err);
          } else {
            ctx.stop.stop(code === 'AUTH' ? 'auth' : 'fatal', err);
          }
          throw new AbortError(new StoppedBeforeCall());
        }
        throw new AbortError(err as Error);
      }
      // A usable 200 without readable counters was paid all the same: charged at an estimate.
      ctx.guard.settle(reservation, result.kind === 'ok' ? (result.credits ?? 'unread') : null);
      return result;
    }
  };

  // p-retry checks the stop signal after a successful attempt too; an answer already paid for must still be
  // written, so it is kept here rather than taken from p-retry's result.
  let received: ApiResult<unknown> | null = null;
  try {
    await pRetry(async () => (received = await attempt()), {
      retries: ctx.retry.retries,
      minTimeout: ctx.retry.minTimeoutMs,
      maxTimeout: ctx.retry.maxTimeoutMs,
      factor: 2,
      randomize: true,
      signal: ctx.stop.signal,
      // Not unref'd: a backoff may be the only thing pending, and the run must wait for it, not end.
    });
  } catch (err) {
    if (received === null) return await failure(task, ctx, err, attempts);
  }
  const result = received as ApiResult<unknown> | null;
  if (result === null) return { kind: 'stopped' };
  if (result.kind === 'not_found') {
    await ctx.writer.notFound(task, result.call, attempts, result.message);
    return { kind: 'not_found', message: result.message };
  }
  // The task's slot stays taken until its answer is committed: see ResultWriter.
  await ctx.writer.success(task, task.ingest, task.requestKey, result, attempts);
  // The answer's contract reading says whether its page ends the list (by the page size the service used).
  return { kind: 'done', lastPage: result.lastPage, drift: result.drift };
}

/** Records why a task got no answer; a stop (credits, signal, auth) leaves it pending for the next run. */
async function failure(task: ExecutableTask, ctx: ExecutorContext, err: unknown, attempts: number): Promise<TaskOutcome> {
  if (err instanceof StoppedBeforeCall || (ctx.stop.signal.aborted && !isApiError(err))) return { kind: 'stopped' };
  if (err instanceof ApiSchemaError) {
    // Paid for: the body is kept so that reprocess can recover it after a schema fix, without paying again.
    await ctx.writer.rejected(task, task.ingest, task.requestKey, err, attempts);
    return { kind: 'failed', retryable: false, code: err.code, message: err.message, error: err };
  }
  const retryable = errorAction(err) === 'retry';
  const code = isApiError(err) ? err.code : 'INTERNAL';
  const message = err instanceof Error ? err.message : String(err);
  await ctx.writer.failed(task, code, message, retryable, attempts);
  return { kind: 'failed', retryable, code, message, error: err };
}

/** Marks an attempt that ended because the run is stopping, not because the item failed. */
class StoppedBeforeCall extends Error {
  constructor() {
    super('run stopping');
  }
}
