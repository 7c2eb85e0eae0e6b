/**
 * How one job of a run ended (runOneJob in run-one-job.ts): its summary (`jobs[]` of `--json`), made as it ends,
 * and what closeRun reads of the run's stop besides: a job that stopped on its own credit cap, a signal that
 * kept a refresh from being deferred, a job that failed and stopped the run.
 */
import type { UsageError } from '../errors.ts';
import type { CreditStop } from '../credits/credit-guard.ts';
import type { PlanCounts } from './plan-into-ledger.ts';
import type { JobStatus, JobSummary } from './run-summary.ts';

/** A job as its summary names it: a job file that could not be loaded has no operation. */
export type JobName = Pick<JobSummary, 'name' | 'operation'>;

export interface JobResult {
  /** Null when an error stopped the run in this job (it is the run's stop error): the jobs after it are not listed. */
  summary: JobSummary | null;
  /** Why its job file or input file cannot be used (status `skipped`): no task, no call; the other jobs run. */
  unusable?: UsageError;
  /**
   * Cut short by the job's own credits.maxPerRun (its rest deferred), which ends this job only; the run goes on
   * and ends as a credit stop.
   */
  capped?: CreditStop & { job: string };
  /** Not reached, or stopped while its input was read: the user's signal kept its --refresh from being deferred. */
  interrupted?: boolean;
}

/** What the read of the job's input wrote, as the summary names it. */
export function plannedFields(plan: PlanCounts): Pick<JobSummary, 'planned' | 'invalidRows' | 'invalidKnown' | 'duplicates' | 'invalidSamples'> {
  return { planned: plan.tasks, invalidRows: plan.invalid, invalidKnown: plan.invalidKnown, duplicates: plan.duplicates, invalidSamples: plan.invalidSamples };
}

/** The summary of a job that read and worked nothing: every count 0 (its keys in the order `--json` prints them). */
export function unplannedJobSummary(job: JobName, status: JobStatus): JobSummary {
  return {
    name: job.name, operation: job.operation, status, error: null,
    planned: 0, invalidRows: 0, invalidKnown: 0, duplicates: 0, fresh: 0, failedBefore: 0, worked: 0,
    done: 0, notFound: 0, failed: 0, failedByCode: {}, deferred: 0, invalidSamples: [], setAside: 0, otherPost: 0, warnings: [],
  };
}
