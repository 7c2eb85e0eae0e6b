/**
 * What a run reports: one summary per job and one for the run, the run's final status, and the figures the
 * `runs` row records at the end. The field names are a public contract (`netingest run --json`): add, never
 * rename.
 */
import type { TaskStatus } from '../db/schema.ts';
import type { InvalidInputRow } from '../db/ledger.ts';
import type { RunEnd, RunStatus } from '../db/runs.ts';
import type { Operation } from '../spec/types.ts';
import type { PlanCounts } from './plan-into-ledger.ts';
import type { StopReason } from './run-stop.ts';
import type { RunStopSummary } from './stop-summary.ts';

export type { RunStopSummary } from './stop-summary.ts';

/** What a job did, for the summary. `done`, `notFound`, `failed` and `deferred` are the ledger's count of its tasks. */
export interface JobSummary {
  name: string;
  operation: Operation;
  planned: number;
  invalidRows: number;
  duplicates: number;
  /** Planned tasks skipped because they were done or not found within refreshAfterDays. */
  fresh: number;
  /**
   * Planned tasks skipped because they failed for good in an earlier run (not retried without --refresh).
   * Not fresh: they hold no data. They are in `failed` too. planned = fresh + failedBefore + worked.
   */
  failedBefore: number;
  worked: number;
  done: number;
  notFound: number;
  failed: number;
  /** `failed` by the code of each task's last error, e.g. `{ NETWORK: 36 }`. */
  failedByCode: Record<string, number>;
  deferred: number;
  invalidSamples: InvalidInputRow[];
}

/** What a run did; the CLI prints it and derives the exit code from `status`. */
export interface RunSummary {
  runId: number;
  status: RunStatus;
  startedAt: string;
  endedAt: string;
  jobs: JobSummary[];
  calls: number;
  creditsSpent: number | null;
  creditsRemaining: number | null;
  error: { code: string; message: string } | null;
  /** Why the run stopped before its work was done (credits: which limit), or null when it did not. */
  stop: RunStopSummary | null;
}

/** Which tasks of a job a run skipped and which it worked, known before its first call. */
export interface JobDue {
  /** Tasks the run works on (due). */
  worked: number;
  /** Tasks left failed from an earlier run: not due without --refresh. */
  failedBefore: number;
}

/** The summary of one job from its plan, what was due, and the ledger's counts (and failure codes) once it was worked. */
export function jobSummary(
  job: { name: string; operation: Operation },
  plan: PlanCounts,
  due: JobDue,
  counts: Record<TaskStatus, number>,
  failedByCode: Record<string, number>,
): JobSummary {
  return {
    name: job.name,
    operation: job.operation,
    planned: plan.tasks,
    invalidRows: plan.invalid,
    duplicates: plan.duplicates,
    fresh: plan.tasks - due.worked - due.failedBefore,
    failedBefore: due.failedBefore,
    worked: due.worked,
    done: counts.done,
    notFound: counts.not_found,
    failed: counts.failed,
    failedByCode,
    deferred: counts.deferred + counts.pending,
    invalidSamples: plan.invalidSamples,
  };
}

const STOP_STATUS: Record<StopReason, RunStatus> = {
  credits: 'stopped_credits',
  throttled: 'stopped_throttled',
  interrupted: 'interrupted',
  auth: 'failed',
  outage: 'failed',
  fatal: 'failed',
};

/**
 * The run's final status. Any failed task of a job counts, those failed in an earlier run and not retried
 * included: the README's exit code 0 promises every task done or not found, so they end the run with 5.
 */
export function runStatus(stopReason: StopReason | null, jobs: readonly JobSummary[]): RunStatus {
  if (stopReason) return STOP_STATUS[stopReason];
  return jobs.some((s) => s.failed > 0) ? 'completed_with_failures' : 'completed';
}

/** The figures of the `runs` row at the end of a run. */
export function runEnd(summary: RunSummary, creditsAtStart: number | null): RunEnd {
  const { jobs, error, stop } = summary;
  return {
    status: summary.status,
    endedAt: summary.endedAt,
    creditsAtStart,
    creditsAtEnd: summary.creditsRemaining,
    creditsSpent: summary.creditsSpent,
    tasksTotal: sum(jobs, 'planned'),
    tasksDone: sum(jobs, 'done'),
    tasksNotFound: sum(jobs, 'notFound'),
    tasksFailed: sum(jobs, 'failed'),
    tasksDeferred: sum(jobs, 'deferred'),
    invalidRows: sum(jobs, 'invalidRows'),
    calls: summary.calls,
    exitCode: null,
    error: error ? `${error.code}: ${error.message}` : (stop?.message ?? null),
  };
}

function sum(rows: readonly JobSummary[], key: 'planned' | 'done' | 'notFound' | 'failed' | 'deferred' | 'invalidRows'): number {
  return rows.reduce((n, r) => n + r[key], 0);
}
