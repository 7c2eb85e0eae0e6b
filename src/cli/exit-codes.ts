import { NetingestError, UsageError } from '../errors.ts';
import type { RunSummary } from '../runner/run-summary.ts';

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

/** Maps an error that escaped a command to its exit code; errors choose by their class and code. */
export function exitCodeFor(err: unknown): number {
  if (err instanceof UsageError) return EXIT.usage;
  if (err instanceof NetingestError) {
    // Another run holds our lock (or took it over from this one), or another process holds SQLite's own lock past the busy timeout.
    if (err.code === 'LOCKED' || err.code === 'LOCK_LOST' || err.code === 'DB_LOCKED') return EXIT.locked;
    if (err.code === 'OUT_OF_CREDITS') return EXIT.credits;
    if (err.code === 'INTERRUPTED') return EXIT.interrupted;
    if (err.code === 'QUERY_TIMEOUT') return EXIT.timeout;
  }
  return EXIT.fatal;
}

/**
 * The exit code a finished run stands for (README, "Exit codes"). A run-level outcome comes first (interrupted
 * 130, credits or throttle 3, unusable paid answers 6, fatal 1); then jobs skipped for a bad job file or input file (2: they never run
 * until someone fixes them, while failed items are retried by later runs or are data to look at); then failed
 * items (5).
 */
export function exitCodeForRun(summary: Pick<RunSummary, 'status' | 'jobs'>): number {
  const skipped = summary.jobs.some((j) => j.status === 'skipped');
  switch (summary.status) {
    case 'completed':
      return skipped ? EXIT.usage : EXIT.ok;
    case 'completed_with_failures':
      return skipped ? EXIT.usage : EXIT.failedItems;
    case 'stopped_credits':
    case 'stopped_throttled':
      return EXIT.credits;
    case 'interrupted':
      return EXIT.interrupted;
    case 'stopped_unusable':
      return EXIT.unusableAnswers;
    default:
      // A run whose every job was skipped did nothing: the job and input files are the problem.
      return summary.jobs.length > 0 && summary.jobs.every((j) => j.status === 'skipped') ? EXIT.usage : EXIT.fatal;
  }
}
