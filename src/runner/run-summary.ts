/** What a run reports, per job and for the run. Field names are a public contract (`run --json`): add, never rename. */
// Types from light modules only: the package's public types hold a summary and must not reach the drivers' or
// drizzle's types (test/package/package-install.test.ts checks them without skipLibCheck).
import type { InvalidInputRow, RunStatus } from '../store/tables.ts';
import type { Operation } from '../spec/types.ts';
import type { RunStopSummary } from './stop-summary.ts';
import type { DriftLine } from '../operations/drift.ts';

/**
 * What a job did. `done`, `notFound`, `failed`, `deferred`: the ledger's counts of its tasks (every sharing worker's, that
 * night); with the database lost first, those before its calls plus the outcomes committed since (the run's `error` says so).
 */
export interface JobSummary {
  /** The job's name; for a job file that could not be loaded, the file's base name (the name it defaults to). */
  name: string;
  /** Null for a job file that could not be loaded. */
  operation: Operation | null;
  /** `ran`: planned and worked (maybe cut short); `skipped`: its job or input file is unusable (`error`): no call. */
  status: JobStatus;
  /** Why a skipped job was skipped (the message names the file, line and field); null for a job that ran. */
  error: { code: string; message: string } | null;
  planned: number;
  invalidRows: number;
  /** Of `invalidRows`, those an earlier run recorded already: counted, not in `invalidSamples`. */
  invalidKnown: number;
  duplicates: number;
  /** Planned tasks skipped because they were done or not found within refreshAfterDays (by any worker, as it planned). */
  fresh: number;
  /**
   * Planned tasks that failed for good earlier (not retried without --refresh); not fresh, and in `failed` too.
   * planned = fresh + failedBefore + worked, but for a job whose input read was cut: its `planned` are all `deferred`.
   */
  failedBefore: number;
  /** Tasks the run worked on: those due. */
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
  /** What the run noticed that changes neither outcome nor exit code (NOT_FOUND_ONLY); empty for most. */
  warnings: NotFoundOnlyWarning[];
  /** Of `done` and `notFound`, what this worker's own calls answered; only when other workers share its night. */
  thisWorker?: { done: number; notFound: number };
}

/** What the run says of a job whose answers were all 404s (not-found-only.ts): log fields and summary message. */
export interface NotFoundOnlyWarning {
  code: 'NOT_FOUND_ONLY';
  /** Answers of the job in the run, every one a 404. */
  answers: number;
  status: 404;
  /** Excerpt (redacted) of the first 404 body's `message`; null when the bodies had none. */
  bodyMessage: string | null;
  message: string;
}

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
  /** Paid answers with unreadable counters, in creditsSpent at their operation's top learned cost or the default. */
  creditsEstimatedAnswers: number;
  /** Whether creditsSpent is in part an estimate: such answers, or a first call with no counters read before it. */
  creditsSpentEstimated: boolean;
  error: { code: string; message: string } | null;
  /** Why the run stopped before its work was done (credits: which limit), or null when it did not. */
  stop: RunStopSummary | null;
  /** How the run's answers differed from the spec: an entry per operation, member path and kind (docs/contracts.md). */
  drift: DriftLine[];
  /**
   * Why the run's end is not in the database (connection lost, write refused), or null. Its `runs` row stays `running` until
   * the next run closes it as abandoned; figures the database could not give are this process's own counts (see JobSummary).
   */
  notRecorded: { code: string; message: string } | null;
  /**
   * Of `calls`, those whose outcome no commit wrote (the writer stopped first: a PostgreSQL server not back within its
   * bound, a full disk): paid answers among them are lost, and the next run calls their tasks again. Only when some.
   */
  callsNotStored?: number;
}
