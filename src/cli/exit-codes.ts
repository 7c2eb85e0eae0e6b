import { NetingestError, UsageError } from '../errors.ts';
import type { RunSummary } from '../runner/run-summary.ts';
import type { RunStatus } from '../store/tables.ts';

/** The documented exit codes (README, "Exit codes"). */
export const EXIT = {
  ok: 0,
  fatal: 1,
  usage: 2,
  credits: 3,
  locked: 4,
  failedItems: 5,
  unusableAnswers: 6,
  /** `query` or `export --sql` ran past --timeout (124, as timeout(1) exits). */
  timeout: 124,
  interrupted: 130,
} as const;

/** The codes of errors that escape a command with an exit code of their own; every other error exits 1. */
const EXIT_BY_ERROR_CODE: ReadonlyMap<string, number> = new Map([
  // Another run holds our lock (or took it over), or another process held SQLite's lock past the busy timeout.
  ['LOCKED', EXIT.locked],
  ['LOCK_LOST', EXIT.locked],
  ['DB_LOCKED', EXIT.locked],
  ['OUT_OF_CREDITS', EXIT.credits],
  ['INTERRUPTED', EXIT.interrupted],
  ['QUERY_TIMEOUT', EXIT.timeout],
]);

/** Maps an error that escaped a command to its exit code; errors choose by their class and code. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof NetingestError) return EXIT_BY_ERROR_CODE.get(err.code) ?? EXIT.fatal;
  return EXIT.fatal;
}

/** The exit code of a run's final status (runStatus in run-summary.ts), before its skipped jobs are counted. */
const EXIT_BY_STATUS: Readonly<Record<RunStatus, number>> = {
  completed: EXIT.ok,
  completed_with_failures: EXIT.failedItems,
  stopped_credits: EXIT.credits,
  stopped_throttled: EXIT.credits,
  stopped_unusable: EXIT.unusableAnswers,
  interrupted: EXIT.interrupted,
  failed: EXIT.fatal,
  running: EXIT.fatal,
  abandoned: EXIT.fatal,
};

/**
 * The exit code a finished run stands for, by precedence: an end not recorded exits as its error (RunNotRecordedError);
 * a run-level outcome; skipped jobs (2: never run until fixed, while failed items retry); failed items (5).
 */
export function exitCodeForRun(summary: Pick<RunSummary, 'status' | 'jobs'> & Partial<Pick<RunSummary, 'notRecorded'>>): number {
  if (summary.notRecorded) return EXIT_BY_ERROR_CODE.get(summary.notRecorded.code) ?? EXIT.fatal;
  const skipped = summary.jobs.filter((j) => j.status === 'skipped').length;
  const code = EXIT_BY_STATUS[summary.status];
  if (code === EXIT.ok || code === EXIT.failedItems) return skipped > 0 ? EXIT.usage : code;
  // A run whose every job was skipped did nothing: the job and input files are the problem.
  if (code === EXIT.fatal && skipped > 0 && skipped === summary.jobs.length) return EXIT.usage;
  return code;
}

/** One line for the user: our own errors by code and message, anything else without a stack trace. */
export function describeError(err: unknown): string {
  if (err instanceof NetingestError) return `${err.message} [${err.code}]`;
  return `unexpected error: ${err instanceof Error ? err.message : String(err)}`;
}
