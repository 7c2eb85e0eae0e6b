/** The one table of what the runner does about a failed call, by error kind; the error classes only carry facts. */
import { ApiError, type ApiErrorKind } from '../api/errors.ts';
import { NetingestError } from '../errors.ts';
import type { StopReason } from './run-stop.ts';
import type { RetrySettings } from './task-executor.ts';

/**
 * INTERNAL: anything thrown that is not an ApiError (a bug). CALL_BOUND: a task reached maxCallsPerTask in one run.
 * STORE_REFUSED: the database refused a paid answer's rows (GroupCommitWriter's refusedAlone).
 */
export type ErrorCode = ApiErrorKind | 'INTERNAL' | 'CALL_BOUND' | 'STORE_REFUSED';

/**
 * `stopsRun` stops the run with that reason, the task left pending; else `fails`: tried again next run ('retryable'),
 * failed for good ('final'), or failed for good with its paid body kept for `netingest reprocess` ('reprocess').
 */
export type TaskEnding =
  | { stopsRun: StopReason; fails: null }
  | { stopsRun: null; fails: 'retryable' | 'final' | 'reprocess' };

export type ErrorPolicy = TaskEnding & {
  /** The call is tried again in this run, within the budgets below. */
  retry: boolean;
  /** A retry uses one of the job's `retry.retries` and backs off; one that does not is bounded elsewhere (429s). */
  consumesRetry: boolean;
  /** A retry after a 200 (most likely paid: ApiError.paid) also uses one of the job's `retry.paidRetries`. */
  paidRetries: boolean;
  /** Pauses every call of the run for the Retry-After (the rate gate), under the run's throttle caps. */
  pausesAll: boolean;
  /** A task that ended on it counts toward the outage breaker (the API looks down). */
  outage: boolean;
  /** A task that ended on it counts toward the unusable-answer breaker (paid answers that cannot be read). */
  unusable: boolean;
};

const RETRY = { retry: true, consumesRetry: true, paidRetries: true, pausesAll: false } as const;
const NO_RETRY = { retry: false, consumesRetry: false, paidRetries: false, pausesAll: false } as const;
const NOT_COUNTED = { outage: false, unusable: false } as const;
const OUTAGE = { outage: true, unusable: false } as const;
const stops = (reason: StopReason) => ({ stopsRun: reason, fails: null });
const fails = (how: 'retryable' | 'final' | 'reprocess') => ({ stopsRun: null, fails: how });

export const ERROR_POLICY: Readonly<Record<ErrorCode, ErrorPolicy>> = {
  // 401/403, 402: every further call would fail (or not be paid for) too.
  AUTH: { ...NO_RETRY, ...NOT_COUNTED, ...stops('auth') },
  OUT_OF_CREDITS: { ...NO_RETRY, ...NOT_COUNTED, ...stops('credits') },
  // 429: pauses everything and is tried again without using a retry; the throttle caps stop the run.
  THROTTLED: { retry: true, consumesRetry: false, paidRetries: false, pausesAll: true, ...NOT_COUNTED, ...fails('retryable') },
  // The service or the way to it failed: worth another try, and, task after task, an outage.
  SERVER_ERROR: { ...RETRY, ...OUTAGE, ...fails('retryable') },
  TIMEOUT: { ...RETRY, ...OUTAGE, ...fails('retryable') },
  NETWORK: { ...RETRY, ...OUTAGE, ...fails('retryable') },
  // A 200 that is not JSON (cut off, a proxy's page): paid, so retried within paidRetries too.
  INVALID_JSON: { ...RETRY, ...OUTAGE, ...fails('retryable') },
  // A paid body the contract cannot read: a retry would pay again for the same; the body is kept.
  SCHEMA: { ...NO_RETRY, outage: false, unusable: true, ...fails('reprocess') },
  // The service refused this request: it would do so again.
  HTTP_4XX: { ...NO_RETRY, ...NOT_COUNTED, ...fails('final') },
  // A paid 200 over the size limit: a retry pays for the same; task after task it stops the run (unusable), as a wrong
  // shape does, rather than pay for an input storing nothing. Kept for reprocess when read whole (maxKeptBodyBytes).
  BODY_TOO_LARGE: { ...NO_RETRY, outage: false, unusable: true, ...fails('reprocess') },
  // A misconfiguration (wrong URL, TLS, a compressing proxy): every item would fail, or be paid for, the same way.
  UNEXPECTED_RESPONSE: { ...NO_RETRY, ...NOT_COUNTED, ...stops('fatal') },
  TLS: { ...NO_RETRY, ...NOT_COUNTED, ...stops('fatal') },
  UNSUPPORTED_ENCODING: { ...NO_RETRY, ...NOT_COUNTED, ...stops('fatal') },
  // A bug: stop rather than guess.
  INTERNAL: { ...NO_RETRY, ...NOT_COUNTED, ...stops('fatal') },
  CALL_BOUND: { ...NO_RETRY, ...NOT_COUNTED, ...fails('final') },
  // A paid answer whose rows the database refused (a value past what it takes): a retry would pay for the same; the
  // body is kept, and answer after answer refused stops the run as unreadable ones do.
  STORE_REFUSED: { ...NO_RETRY, outage: false, unusable: true, ...fails('reprocess') },
};

/** Calls one task may send in a run, whatever the answers: first try, retries (paid ones share them), 429 attempts. */
export function maxCallsPerTask(retry: Pick<RetrySettings, 'retries'>, maxThrottledAttemptsPerTask: number): number {
  return 1 + retry.retries + maxThrottledAttemptsPerTask;
}

/** The executor's own guard fired: a task reached its bound of calls in one run. */
export class CallBoundError extends NetingestError {
  constructor(maxCalls: number) {
    super('CALL_BOUND', `internal: task reached its bound of ${maxCalls} calls in one run`);
  }
}

/** A paid answer's rows the database refused: its task failed, its body kept apart (the writer's message). */
export class StoreRefusedError extends NetingestError {
  constructor(message: string) {
    super('STORE_REFUSED', message);
  }
}

/** The code a thrown value is recorded and decided under. */
export function errorCodeOf(err: unknown): ErrorCode {
  if (err instanceof ApiError) return err.kind;
  if (err instanceof StoreRefusedError) return 'STORE_REFUSED';
  return err instanceof CallBoundError ? 'CALL_BOUND' : 'INTERNAL';
}

/** What the runner does about a thrown value. */
export function policyOf(err: unknown): ErrorPolicy {
  return ERROR_POLICY[errorCodeOf(err)];
}
