/**
 * What a run reports: one summary per job and one for the run, the run's final status, and the figures the
 * `runs` row records at the end. The field names are a public contract (`netingest run --json`): add, never
 * rename.
 */
import type { TaskStatus } from '../store/schema.ts';
import type { InvalidInputRow } from '../store/ledger.ts';
import type { RunEnd, RunStatus } from '../store/runs.ts';
import type { Operation } from '../spec/types.ts';
import type { PlanCounts } from './plan-into-ledger.ts';
import type { StopReason } from './run-stop.ts';
import type { NotFoundOnlyWarning } from './not-found-only.ts';
import type { RunStopSummary } from './stop-summary.ts';
import type { DriftLine } from './run-drift.ts';

export type { RunStopSummary } from './stop-summary.ts';

/** What a job did, for the summary. `done`, `notFound`, `failed` and `deferred` are the ledger's count of its tasks. */
export interface JobSummary {
  /** The job's name; for a job file that could not be loaded, the file's base name (the name it defaults to). */
  name: string;
  /** Null for a job file that could not be loaded. */
  operation: Operation | null;
  /**
   * `ran`: planned and worked (maybe cut short by the run's stop); `skipped`: its job file or input file cannot
   * be used (see `error`), so it made no task and no call, and the other jobs ran.
   */
  status: JobStatus;
  /** Why a skipped job was skipped (the message names the file, line and field); null for a job that ran. */
  error: { code: string; message: string } | null;
  planned: number;
  invalidRows: number;
  /** Of `invalidRows`, those an earlier run recorded already: counted, not in `invalidSamples`. */
  invalidKnown: number;
  duplicates: number;
  /** Planned tasks skipped because they were done or not found within refreshAfterDays. */
  fresh: number;
  /**
   * Planned tasks skipped because they failed for good in an earlier run (not retried without --refresh).
   * Not fresh: they hold no data. They are in `failed` too. planned = fresh + failedBefore + worked, but for
   * a job not reached whose input the run stopped reading part way: its `planned` tasks are all `deferred`.
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
  /** Records of its answers set aside in this run because they do not name themselves (table answer_anomalies). */
  setAside: number;
  /** post-details answers in this run whose PostId names another post than the one asked for (answer_anomalies). */
  otherPost: number;
  /**
   * What the run noticed about the job that changes neither its outcome nor the exit code; empty for most.
   * Each has a `code` and a `message`.
   */
  warnings: JobWarning[];
}

/** A warning about a job (by `code`): NOT_FOUND_ONLY, every answer a 404 that a wrong API URL would give too. */
export type JobWarning = NotFoundOnlyWarning;

/** Whether a job of the run was worked, skipped as unusable, or not reached because the run stopped first. */
export type JobStatus = 'ran' | 'skipped' | 'not_reached';

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
  /**
   * Paid answers whose credit counters could not be read (missing, not numbers, body over the size limit, not
   * JSON): each is counted in creditsSpent at the highest cost learned for its operation, or the default.
   */
  creditsEstimatedAnswers: number;
  /** Whether creditsSpent is in part an estimate: such answers, or a first call with no counters read before it. */
  creditsSpentEstimated: boolean;
  error: { code: string; message: string } | null;
  /** Why the run stopped before its work was done (credits: which limit), or null when it did not. */
  stop: RunStopSummary | null;
  /** How the run's answers differed from the spec: one entry per operation, member path and kind (see docs/contracts.md). */
  drift: DriftLine[];
}

/** Which tasks of a job a run skipped and which it worked, known before its first call. */
export interface JobDue {
  /** Tasks the run works on (due). */
  worked: number;
  /** Tasks left failed from an earlier run: not due without --refresh. */
  failedBefore: number;
}

/** The summary of one job from its plan, what was due, the ledger's counts (and failure codes) once it was worked, and its warnings. */
export function jobSummary(
  job: { name: string; operation: Operation },
  plan: PlanCounts,
  due: JobDue,
  counts: Record<TaskStatus, number>,
  failedByCode: Record<string, number>,
  warnings: JobWarning[] = [],
): JobSummary {
  return {
    name: job.name,
    operation: job.operation,
    status: 'ran',
    error: null,
    planned: plan.tasks,
    invalidRows: plan.invalid,
    invalidKnown: plan.invalidKnown,
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
    setAside: 0,
    otherPost: 0,
    warnings,
  };
}

/** The summary of a job skipped because `error` (a bad job file or input file) makes it unusable: nothing planned. */
export function skippedJobSummary(job: { name: string; operation: Operation | null }, error: { code: string; message: string }): JobSummary {
  return { ...unplannedJobSummary(job, 'skipped'), error: { code: error.code, message: error.message } };
}

/**
 * The summary of a job the run stopped before (credits, outage, a signal): its tasks wait for the next run;
 * `deferred` counts those a --refresh run deferred for it (see notReachedJob).
 */
export function notReachedJobSummary(job: { name: string; operation: Operation }, deferred = 0): JobSummary {
  return { ...unplannedJobSummary(job, 'not_reached'), deferred };
}

/**
 * The summary of a job whose input the run was still reading when it stopped (a signal): not reached, no call
 * made, with what the read had written so far (`planned`, `invalidRows`, `duplicates`) and how many of its
 * tasks wait for the next run (`deferred`), which reads the whole input again.
 */
export function partlyPlannedJobSummary(job: { name: string; operation: Operation }, plan: PlanCounts, deferred: number): JobSummary {
  return {
    ...unplannedJobSummary(job, 'not_reached'),
    planned: plan.tasks,
    invalidRows: plan.invalid,
    invalidKnown: plan.invalidKnown,
    duplicates: plan.duplicates,
    deferred,
    invalidSamples: plan.invalidSamples,
  };
}

function unplannedJobSummary(job: { name: string; operation: Operation | null }, status: JobStatus): JobSummary {
  return {
    name: job.name,
    operation: job.operation,
    status,
    error: null,
    planned: 0,
    invalidRows: 0,
    invalidKnown: 0,
    duplicates: 0,
    fresh: 0,
    failedBefore: 0,
    worked: 0,
    done: 0,
    notFound: 0,
    failed: 0,
    failedByCode: {},
    deferred: 0,
    invalidSamples: [],
    setAside: 0,
    otherPost: 0,
    warnings: [],
  };
}

const STOP_STATUS: Record<StopReason, RunStatus> = {
  credits: 'stopped_credits',
  throttled: 'stopped_throttled',
  interrupted: 'interrupted',
  auth: 'failed',
  outage: 'failed',
  unusable: 'stopped_unusable',
  fatal: 'failed',
};

/**
 * The run's final status. Any failed task of a job counts, those failed in an earlier run and not retried
 * included: the README's exit code 0 promises every task done or not found, so they end the run with 5.
 * A run whose every job was skipped as unusable did nothing: it failed. Skipped jobs among others that ran
 * leave the status to those (the CLI's exit code counts them, see exitCodeForRun).
 */
export function runStatus(stopReason: StopReason | null, jobs: readonly JobSummary[]): RunStatus {
  if (stopReason) return STOP_STATUS[stopReason];
  if (jobs.length > 0 && jobs.every((j) => j.status === 'skipped')) return 'failed';
  return jobs.some((s) => s.failed > 0) ? 'completed_with_failures' : 'completed';
}

/** The figures of the `runs` row at the end of a run. */
export function runEnd(summary: RunSummary, creditsAtStart: number | null, exitCode: number | null): RunEnd {
  const { jobs } = summary;
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
    exitCode,
    error: runErrorText(summary),
  };
}

/**
 * `runs.error`: why the run stopped (`CODE: message`, or the limit), then one line per skipped job
 * (`skipped job zz: JOB_INVALID: jobs/zz.json: retries: unknown field ...`); null when there is neither.
 */
function runErrorText({ error, stop, jobs }: RunSummary): string | null {
  const lines = [error ? `${error.code}: ${error.message}` : (stop?.message ?? null)];
  for (const j of jobs) if (j.error) lines.push(`skipped job ${j.name}: ${j.error.code}: ${j.error.message}`);
  const text = lines.filter((l): l is string => l !== null);
  return text.length > 0 ? text.join('\n') : null;
}

function sum(rows: readonly JobSummary[], key: 'planned' | 'done' | 'notFound' | 'failed' | 'deferred' | 'invalidRows'): number {
  return rows.reduce((n, r) => n + r[key], 0);
}
