/**
 * How one job of a run ended (runOneJob in run-one-job.ts), and the job's summary (`jobs[]` of `--json`) made
 * from it. closeRun reads the run's stop from these too: a job that stopped on its own credit cap, a signal
 * that kept a refresh from being deferred, a job that failed and stopped the run.
 */
import type { UsageError } from '../errors.ts';
import type { Operation } from '../spec/types.ts';
import type { TaskStatus } from '../store/tables.ts';
import type { CreditStop } from '../credits/credit-guard.ts';
import type { PlanCounts } from './plan-into-ledger.ts';
import type { JobStatus, JobSummary } from './run-summary.ts';

/** A job as its summary names it: a job file that could not be loaded has no operation. */
export type JobName = Pick<JobSummary, 'name' | 'operation'>;

/** A job that was planned and worked: the summary's figures of its work (run-summary.ts says each), and more. */
export interface WorkedJob extends Pick<JobSummary, 'worked' | 'failedBefore' | 'failedByCode' | 'warnings' | 'setAside' | 'otherPost'> {
  job: { name: string; operation: Operation };
  plan: PlanCounts;
  /** The ledger's count of the job's tasks once worked. */
  counts: Record<TaskStatus, number>;
}

export type JobResult =
  /** Worked to the end of its due tasks. */
  | ({ kind: 'done' } & WorkedJob)
  /**
   * Cut short by a stop (its rest deferred). `capped`: the stop was the job's own credits.maxPerRun, which
   * ends this job only; the run goes on and ends as a credit stop.
   */
  | ({ kind: 'stopped'; capped: (CreditStop & { job: string }) | null } & WorkedJob)
  /** Its job file or input file cannot be used: no task, no call; the other jobs run. */
  | { kind: 'skipped'; job: JobName; error: UsageError }
  /**
   * The run stopped before reaching it: its tasks wait. `deferred`: the tasks of a --refresh deferred for it;
   * `interrupted`: the user's signal kept that refresh from being deferred.
   */
  | { kind: 'not_reached'; job: { name: string; operation: Operation }; deferred: number; interrupted: boolean }
  /** The run stopped while reading its input: the tasks written so far are deferred, no call was made. */
  | { kind: 'partly_planned'; job: { name: string; operation: Operation }; plan: PlanCounts; deferred: number; interrupted: boolean }
  /** An error stopped the run in this job (it is the run's stop error): no summary, and the jobs after it are not listed. */
  | { kind: 'failed'; job: { name: string }; error: unknown };

/** The job's summary; null for a job that failed (the run's error tells of it). */
export function jobSummaryOf(result: JobResult): JobSummary | null {
  switch (result.kind) {
    case 'done':
    case 'stopped':
      return workedJobSummary(result);
    case 'skipped':
      return { ...unplannedJobSummary(result.job, 'skipped'), error: { code: result.error.code, message: result.error.message } };
    case 'not_reached':
      return { ...unplannedJobSummary(result.job, 'not_reached'), deferred: result.deferred };
    case 'partly_planned':
      return partlyPlannedJobSummary(result);
    case 'failed':
      return null;
  }
}

function workedJobSummary(w: WorkedJob): JobSummary {
  const { plan, counts } = w;
  return {
    ...unplannedJobSummary(w.job, 'ran'),
    ...plannedFields(plan),
    fresh: plan.tasks - w.worked - w.failedBefore,
    failedBefore: w.failedBefore,
    worked: w.worked,
    done: counts.done,
    notFound: counts.not_found,
    failed: counts.failed,
    failedByCode: w.failedByCode,
    deferred: counts.deferred + counts.pending,
    setAside: w.setAside,
    otherPost: w.otherPost,
    warnings: w.warnings,
  };
}

/**
 * A job whose input the run was still reading when it stopped (a signal): not reached, no call made, with what
 * the read had written so far (`planned`, `invalidRows`, `duplicates`) and how many of its tasks wait for the
 * next run (`deferred`), which reads the whole input again.
 */
function partlyPlannedJobSummary({ job, plan, deferred }: Extract<JobResult, { kind: 'partly_planned' }>): JobSummary {
  return { ...unplannedJobSummary(job, 'not_reached'), ...plannedFields(plan), deferred };
}

/** What the read of the job's input wrote, as the summary names it. */
function plannedFields(plan: PlanCounts): Pick<JobSummary, 'planned' | 'invalidRows' | 'invalidKnown' | 'duplicates' | 'invalidSamples'> {
  return { planned: plan.tasks, invalidRows: plan.invalid, invalidKnown: plan.invalidKnown, duplicates: plan.duplicates, invalidSamples: plan.invalidSamples };
}

/** The summary of a job that read and worked nothing: every count 0 (its keys in the order `--json` prints them). */
function unplannedJobSummary(job: JobName, status: JobStatus): JobSummary {
  return {
    name: job.name, operation: job.operation, status, error: null,
    planned: 0, invalidRows: 0, invalidKnown: 0, duplicates: 0, fresh: 0, failedBefore: 0, worked: 0,
    done: 0, notFound: 0, failed: 0, failedByCode: {}, deferred: 0, invalidSamples: [], setAside: 0, otherPost: 0, warnings: [],
  };
}
