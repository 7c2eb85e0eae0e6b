import type { Logger } from './logger.ts';
import type { TaskOutcome } from './task-executor.ts';

/** `summaryIntervalMs`: the least time between two summary lines of a job (no caller sets another). */
export const FAILURE_LOG_DEFAULTS = { detailedLines: 10, summaryIntervalMs: 60_000 } as const;

/** A task that failed, as the log names it: `retryable`, whether the next run tries it again. */
export type FailedTask = Pick<Extract<TaskOutcome, { kind: 'failed' }>, 'code' | 'message' | 'retryable'> & { inputKey: string; page: number };

/**
 * Logs a job's failed tasks so a nightly log says which input failed and why: the first few a WARN line each, then a
 * line per interval counting the rest by code, so a bad input does not flood the log. flush() writes what is counted.
 */
export class FailureLog {
  private failures = 0;
  private pending = new Map<string, number>();
  private last: FailedTask | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly logger: Logger,
    private readonly job: string,
    private readonly detailedLines: number = FAILURE_LOG_DEFAULTS.detailedLines,
  ) {}

  /** Logs one failed task, or counts it into the next summary line. */
  record(task: FailedTask): void {
    this.failures += 1;
    if (this.failures <= this.detailedLines) {
      const { inputKey: input, page, code, retryable, message: error } = task;
      this.logger.warn('task failed', { job: this.job, input, page, code, retryable, error });
      return;
    }
    // Said when there is a failure to count, not after the last detailed one: a job with exactly that many
    // failures has nothing more to report.
    if (this.failures === this.detailedLines + 1) {
      this.logger.warn('more failed tasks are counted, not listed', { job: this.job, every_s: Math.round(FAILURE_LOG_DEFAULTS.summaryIntervalMs / 1000) });
    }
    this.pending.set(task.code, (this.pending.get(task.code) ?? 0) + 1);
    this.last = task;
    this.timer ??= setTimeout(() => this.flush(), FAILURE_LOG_DEFAULTS.summaryIntervalMs).unref();
  }

  /** Writes the summary line of the failures counted since the last one, if any. */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    // `last` is set with every failure counted, and cleared with them.
    if (!this.last) return;
    this.logger.warn('more tasks failed', {
      job: this.job,
      count: [...this.pending.values()].reduce((n, c) => n + c, 0),
      codes: formatCodeCounts(Object.fromEntries(this.pending)),
      last_input: this.last.inputKey,
      last_error: this.last.message,
    });
    this.pending = new Map();
    this.last = null;
  }
}

/** "NETWORK 30, HTTP_4XX 2": counts by code, most first. */
export function formatCodeCounts(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort(([a, m], [b, n]) => n - m || a.localeCompare(b))
    .map(([code, n]) => `${code} ${n}`)
    .join(', ');
}
