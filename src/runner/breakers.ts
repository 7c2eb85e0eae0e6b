/** The run's breakers: each stops the run after too many tasks in a row end the same bad way, the rest deferred. */
import { ApiError, ApiSchemaError, outageSymptom } from '../api/errors.ts';
import { roundCredits } from '../credits/credit-meter.ts';
import { NetingestError } from '../errors.ts';
import type { Operation } from '../spec/types.ts';
import type { RunStop } from './run-stop.ts';
import { errorCodeOf, policyOf, type StoreRefusedError } from './error-policy.ts';
import type { EndedTask } from './task-executor.ts';

/** `inARow` paid answers of `operation` in a row its contract could not read; names the count, cost and first path. */
export class UnusableAnswersError extends NetingestError {
  constructor(
    readonly operation: Operation,
    readonly inARow: number,
    readonly credits: number,
    readonly firstIssue: string,
    /** What went wrong with them: 'could not be read' (their contract), or 'were refused by the database'. */
    how: string,
    options?: { cause?: unknown },
  ) {
    super(
      'UNUSABLE_ANSWERS',
      `${operation}: ${inARow} paid answers in a row ${how} (first: ${firstIssue}), costing about ${roundCredits(credits)} credits: ` +
        'stopped sending; the answers are kept for `netingest reprocess` (after an upgrade that reads them), the remaining tasks are deferred to the next run',
      options,
    );
  }
}

/** A breaker's stop switch, and the count in a row that trips it: a job's setting, or raised by its concurrency. */
class Breaker {
  constructor(
    protected readonly stop: RunStop,
    protected threshold: number,
  ) {}

  setThreshold(threshold: number): void {
    this.threshold = Math.max(1, threshold);
  }
}

/**
 * Stops the run after `threshold` paid answers of one operation in a row its contract could not read, rather than pay
 * for a whole input that stores nothing. An answer stored resets the count; a failure with no answer (5xx) leaves it.
 */
export class UnusableAnswerBreaker extends Breaker {
  private readonly rows = new Map<Operation, { count: number; credits: number; first: ApiError | StoreRefusedError }>();

  constructor(
    stop: RunStop,
    /** The estimated cost of one call of an operation (the credit guard's, learned from the counters). */
    private readonly costOf: (operation: Operation) => number,
  ) {
    super(stop, 5);
  }

  /** Counts a task of `operation` that ended in this run; trips the stop at the threshold. */
  record(operation: Operation, task: EndedTask): void {
    if (task.kind !== 'failed') {
      this.rows.delete(operation);
      return;
    }
    if (!policyOf(task.error).unusable) return;
    const row = this.rows.get(operation) ?? { count: 0, credits: 0, first: task.error as ApiError | StoreRefusedError };
    row.count += 1;
    row.credits += this.costOf(operation);
    this.rows.set(operation, row);
    if (row.count < this.threshold || this.stop.reason) return;
    const issue = row.first instanceof ApiSchemaError ? row.first.issues[0] : undefined;
    const first = issue ? `${issue.path}: ${issue.message}` : row.first instanceof ApiError ? row.first.what : row.first.message;
    const how = row.first instanceof ApiError ? 'could not be read' : 'were refused by the database';
    this.stop.stop('unusable', new UnusableAnswersError(operation, row.count, row.credits, first, how, { cause: row.first }));
  }
}

/** The API looks down: `tasksInARow` tasks in a row failed after every retry on outage errors; names the last. */
export class ApiUnavailableError extends NetingestError {
  constructor(
    readonly tasksInARow: number,
    readonly lastCode: string,
    symptom: string,
    options?: { cause?: unknown },
  ) {
    super(
      'API_UNAVAILABLE',
      `${symptom} [${lastCode}]; ${tasksInARow} tasks in a row failed after every retry: stopped sending, the remaining tasks are deferred to the next run`,
      options,
    );
  }
}

/**
 * Stops the run after `threshold` tasks in a row failed on outage errors with no answer between, rather than let all
 * tasks spend their retries on a down API. It counts tasks, not attempts (retries never trip it); any answer resets it.
 */
export class OutageBreaker extends Breaker {
  private inARow = 0;

  /** Counts a task that ended in this run; trips the run's stop at the threshold. */
  record(task: EndedTask): void {
    if (task.kind !== 'failed' || !policyOf(task.error).outage) {
      this.inARow = 0;
      return;
    }
    this.inARow += 1;
    if (this.inARow < this.threshold || this.stop.reason) return;
    const symptom = outageSymptom(task.error);
    this.stop.stop('outage', new ApiUnavailableError(this.inARow, errorCodeOf(task.error), symptom, { cause: task.error }));
  }
}
