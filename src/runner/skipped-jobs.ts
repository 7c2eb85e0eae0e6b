import { basename, extname } from 'node:path';
import type { UsageError } from '../errors.ts';
import { combineErrors, type JobFileError } from '../jobs/job-error.ts';
import type { Operation } from '../spec/types.ts';
import type { Logger } from './logger.ts';
import { skippedJobSummary, type JobSummary } from './run-summary.ts';

/**
 * The jobs a run skips because their job file or input file cannot be used (isJobUnusable): each is logged as
 * an ERROR naming the problem and summarized as `skipped`, and the other jobs run.
 */
export class SkippedJobs {
  private readonly errors: UsageError[] = [];

  constructor(private readonly logger: Logger) {}

  /** Skips a job whose file could not be loaded; it goes by the name its file would give it. */
  brokenFile(err: JobFileError): JobSummary {
    return this.skip({ name: basename(err.file, extname(err.file)), operation: null }, err);
  }

  /** Skips a loaded job whose input cannot be planned (missing file, absent column, bad search header). */
  skip(job: { name: string; operation: Operation | null }, err: UsageError): JobSummary {
    this.errors.push(err);
    this.logger.error('job skipped: fix it and run again; the other jobs run', { job: job.name, code: err.code, error: err.message });
    return skippedJobSummary(job, err);
  }

  /** Every problem as one error, for a run in which no job could run; null when no job was skipped. */
  asError(): UsageError | null {
    return this.errors.length > 0 ? combineErrors(this.errors) : null;
  }
}
