import pRetry, { AbortError, type Options } from 'p-retry';
import type { ApiClient, ApiResult } from '../api/types.ts';
import { ApiError, ApiSchemaError, DEFAULT_RETRY_AFTER_MS, keptBodyOf, ThrottledError } from '../api/errors.ts';
import type { JobCommon } from '../jobs/job-common.ts';
import type { AnySubject } from '../operations/index.ts';
import type { OperationSpec } from '../operations/operation-spec.ts';
import type { DriftTally } from '../operations/drift.ts';
import type { Charge, CreditGuard } from '../credits/credit-guard.ts';
import type { RunStop } from './run-stop.ts';
import type { RunGate, WriterTask } from '../store/run-store.ts';
import type { GroupCommitWriter } from '../store/group-commit-writer.ts';
import { CallBoundError, ERROR_POLICY, errorCodeOf, maxCallsPerTask, policyOf, StoreRefusedError, type ErrorCode } from './error-policy.ts';

/** A job's retry settings (jobs/defaults.ts); `paidRetries` is for a 200 that was most likely charged. */
export type RetrySettings = JobCommon['retry'];

/** Everything a task needs to make its call and record the outcome. */
export interface ExecutorContext {
  client: ApiClient;
  guard: CreditGuard;
  gate: RunGate;
  stop: RunStop;
  writer: GroupCommitWriter;
  retry: RetrySettings;
  /** Total time the run may spend paused by 429s before it ends as deferred. */
  maxThrottleWaitMs: number;
  /** 429s one task may get in this run before the run ends as throttled (the wait cap alone misses Retry-After: 0). */
  maxThrottledAttemptsPerTask: number;
  /** Counts failed attempts for the progress display. */
  onAttemptError?: (err: ApiError) => void;
  /** Told of every task that ended in this run (not one the run's stop left pending): outage breaker, failure log. */
  onTaskEnded?: (task: ExecutableTask, outcome: TaskOutcome) => void;
  /** Whether the run still holds its database lock, asked right before each call (RunLock.held). */
  holdsLock?: () => boolean;
  /** Whether this worker still holds the task's input, asked right before each call (a claim's lease). */
  holdsInput?: (inputKey: string) => boolean | Promise<boolean>;
}

/** A task as the executor sees it: ledger id, spec and the request it sends (checked by the spec's schema). */
export interface ExecutableTask<Q = unknown> extends WriterTask {
  spec: OperationSpec<Q, unknown, AnySubject, unknown>;
  inputKey: string;
  page: number;
  request: Q;
  ingest: AnySubject;
  requestKey: string;
}

/**
 * How a task ended in this run: `lastPage` says the input's list ended on this page; `message` is the 404 body's, for
 * the not-found-only warning; a failed task used up its retries (or met an error no retry changes).
 */
export type TaskOutcome =
  | { kind: 'done'; lastPage: boolean; drift: DriftTally }
  | { kind: 'not_found'; message: string | null }
  | { kind: 'failed'; retryable: boolean; code: ErrorCode; message: string; error: unknown }
  | { kind: 'stopped' };

/** How a task ended, as the breakers see it: whether it failed, and on what (a TaskOutcome is one). */
export type EndedTask = { kind: 'failed'; error: unknown } | { kind: Exclude<TaskOutcome['kind'], 'failed'> };

/** Makes one task's call, retried as error-policy.ts rules: a 429 pauses the whole run and uses up no retry. */
export async function executeTask(task: ExecutableTask, ctx: ExecutorContext): Promise<TaskOutcome> {
  const tally: TaskTally = { calls: 0, paidRetries: 0, throttled: 0 };
  // p-retry checks the stop signal after a successful attempt too; an answer already paid for must still be
  // written, so it is kept here rather than taken from p-retry's result.
  let received: ApiResult<unknown> | null = null;
  try {
    await pRetry(async () => (received = await callOnce(task, ctx, tally)), retryHooks(task, ctx, tally));
  } catch (err) {
    if (received === null) return await failure(task, ctx, err, tally.calls);
  }
  const result = received as ApiResult<unknown> | null;
  if (result === null) return { kind: 'stopped' };
  if (result.kind === 'not_found') {
    await ctx.writer.notFound(task, result.call, tally.calls, result.message, task.ingest);
    return { kind: 'not_found', message: result.message };
  }
  // The task's slot stays taken until its answer is committed: see ResultWriter.
  const refused = await ctx.writer.success(task, task.ingest, task.requestKey, result, tally.calls);
  if (refused !== null) return { kind: 'failed', retryable: false, code: 'STORE_REFUSED', message: refused, error: new StoreRefusedError(refused) };
  // The answer's contract reading says whether its page ends the list (by the page size the service used).
  return { kind: 'done', lastPage: result.lastPage, drift: result.drift };
}

/** One call: reserve credits, wait for the gate, check bound and lock, send, settle; throws LeftPending (in AbortError) if none is sent. */
async function callOnce(task: ExecutableTask, ctx: ExecutorContext, tally: TaskTally): Promise<ApiResult<unknown>> {
  if (ctx.stop.reason) throw new AbortError(new LeftPending());
  const reservation = await ctx.guard.acquire(task.operation, ctx.stop.signal).catch((err: unknown) => {
    // A stop (the user's signal) ends a wait for credits other workers hold: nothing was sent.
    if (ctx.stop.signal.aborted) throw new AbortError(new LeftPending());
    throw err;
  });
  if (!reservation) {
    ctx.stop.stop('credits');
    throw new AbortError(new LeftPending());
  }
  try {
    await beforeSending(ctx, tally, task.inputKey);
  } catch (err) {
    ctx.guard.settle(reservation, null);
    throw err;
  }
  tally.calls += 1;
  let result: ApiResult<unknown>;
  try {
    result = await ctx.client.call(task.spec, task.request);
  } catch (err) {
    // A 200 that cannot be used was still paid for: its counters, or an estimate, keep the caps true.
    ctx.guard.settle(reservation, chargeOfFailure(err));
    throw err;
  }
  // A usable 200 without readable counters was paid all the same: charged at an estimate.
  ctx.guard.settle(reservation, result.kind === 'ok' ? (result.credits ?? 'unread') : null);
  return result;
}

/** The waits and checks between a reservation and its call; throws (as AbortError) when the call must not go. */
async function beforeSending(ctx: ExecutorContext, tally: TaskTally, inputKey: string): Promise<void> {
  await ctx.gate.take(ctx.stop.signal).catch(() => {
    throw new AbortError(new LeftPending());
  });
  // The one place the bound on a task's calls is enforced (the throttle cap and the retry budgets keep below it).
  const maxCalls = maxCallsPerTask(ctx.retry, ctx.maxThrottledAttemptsPerTask);
  if (tally.calls >= maxCalls) throw new AbortError(new CallBoundError(maxCalls));
  // Asked last, after any wait: a run suspended meanwhile whose lock was taken over must not pay for the
  // tasks the new holder now does (its loss stops the run: see runJobs).
  if (ctx.holdsLock && !ctx.holdsLock()) throw new AbortError(new LeftPending());
  // Likewise a worker whose lease on the input ended meanwhile: another worker may be paying for it now.
  if (ctx.holdsInput && !(await ctx.holdsInput(inputKey))) throw new AbortError(new LeftPending());
}

/** Records why a task got no answer; a stop (credits, signal, auth...) leaves it pending for the next run. */
async function failure(task: ExecutableTask, ctx: ExecutorContext, err: unknown, calls: number): Promise<TaskOutcome> {
  if (err instanceof LeftPending || (ctx.stop.signal.aborted && !(err instanceof ApiError))) return { kind: 'stopped' };
  const code = errorCodeOf(err);
  const policy = ERROR_POLICY[code];
  if (policy.stopsRun) return { kind: 'stopped' };
  const message = err instanceof Error ? err.message : String(err);
  const retryable = policy.fails === 'retryable';
  const kept = policy.fails === 'reprocess' && err instanceof ApiError ? keptBodyOf(err) : null;
  // Paid for: the body is kept so that reprocess can recover it (after a schema fix; one over the size limit
  // as it is), without paying again.
  if (kept !== null) await ctx.writer.rejected(task, task.ingest, task.requestKey, { call: (err as ApiError).call, code, message, ...kept }, calls);
  else await ctx.writer.failed(task, code, message, retryable, calls);
  return { kind: 'failed', retryable, code, message, error: err };
}

/** Marks an attempt that sent no call because the run is stopping (or lost its lock): the task stays pending. */
class LeftPending extends Error {
  constructor() {
    super('run stopping');
  }
}

/** A failed attempt's charge: a wrong-shape body's counters; 'unread' for other failures after a 200 (likely billed); null without a 200. */
function chargeOfFailure(err: unknown): Charge {
  if (err instanceof ApiSchemaError && err.credits) return err.credits;
  return err instanceof ApiError && err.paid ? 'unread' : null;
}

/** What one task has used of its budgets in this run (p-retry counts the retries it consumes). */
export interface TaskTally {
  calls: number;
  paidRetries: number;
  throttled: number;
}

/**
 * p-retry's options for `task`: the job's backoff, and hooks applying error-policy.ts to each failed attempt (`tally`
 * counts them).
 */
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
  if (err instanceof ApiError) {
    // A body kept for reprocess has its api_calls row written with it and the task's failure, in one transaction (failure()).
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
  if (policy.paidRetries && err instanceof ApiError && err.paid && ++tally.paidRetries > retry.paidRetries) return false;
  return true;
}
