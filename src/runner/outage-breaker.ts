import { outageSymptom } from '../api/errors.ts';
import { NetingestError } from '../errors.ts';
import { errorCodeOf, policyOf } from './error-policy.ts';
import type { RunStop } from './run-stop.ts';
import type { EndedTask } from './task-executor.ts';

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
export class OutageBreaker {
  private inARow = 0;

  constructor(
    private readonly stop: RunStop,
    private threshold: number,
  ) {}

  /** The number of outage failures in a row that stops the run (the job's concurrency can raise it). */
  setThreshold(threshold: number): void {
    this.threshold = Math.max(1, threshold);
  }

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
