import type { Job } from '../jobs/schema.ts';
import type { JobFileError } from '../jobs/job-error.ts';
import type { Logger } from './logger.ts';
import type { RunSummary } from './run-summary.ts';

/** Options of runJobs() (run-jobs.ts); every default lives in RUN_DEFAULTS, whose settings are documented there. */
export interface RunOptions extends RunDefaulted {
  dbPath: string;
  jobs: Job[];
  /** Job files that could not be loaded: the run reports and records each as a skipped job, and runs `jobs`. */
  brokenJobFiles?: readonly JobFileError[];
  /** The exit code the caller gives this outcome, kept in `runs.exit_code` (the CLI passes exitCodeForRun). */
  exitCodeOf?: (summary: RunSummary) => number;
  api: { baseUrl: string; token: string };
  overrides?: JobOverrides;
  /** Call again tasks that are still fresh. */
  refresh?: boolean;
  /** Aborting it stops sending calls; calls in flight finish and are written (SIGINT, SIGTERM). */
  signal?: AbortSignal;
  logger?: Logger;
  /** Where the live progress line goes on a terminal (default stderr); else progress is logged every few seconds. */
  progressStream?: NodeJS.WritableStream & { isTTY?: boolean };
  /**
   * The interval of the progress log line without a terminal (PROGRESS_DEFAULTS.logIntervalMs; the CLI's
   * NETINGEST_PROGRESS_SECONDS).
   * @default 5_000
   */
  progressLogMs?: number;
  /** How a job's failed tasks are logged: `detailedLines` a WARN line each (FAILURE_LOG_DEFAULTS), then counted. */
  failureLog?: { detailedLines?: number };
  /** The run lock's lease (default RUN_LOCK_DEFAULTS.leaseMs): how long another host waits after its last heartbeat. */
  lockLeaseMs?: number;
  /** PostgreSQL: the window the shared requests-per-minute limit is counted over (a minute; tests scale it down). */
  sharedRateWindowMs?: number;
  /**
   * PostgreSQL: how long a wait on a 429's shared pause (another worker's or an earlier run's) must be to get its own
   * WARN line (SHARED_RATE_GATE_DEFAULTS.longWaitMs, the progress log's interval); tests shorten it.
   * @default 5_000
   */
  sharedRateLongWaitMs?: number;
  /**
   * PostgreSQL: how long a wait for credits that calls in flight (every worker's) hold must be to get its WARN line
   * (SHARED_CREDIT_GUARD_DEFAULTS.longWaitMs, the progress log's interval); tests shorten it.
   * @default 5_000
   */
  sharedCreditLongWaitMs?: number;
  /**
   * The wait after a 429 whose Retry-After is missing or garbage (CLIENT_DEFAULTS.retryAfterFallbackMs); tests shorten it.
   * @default 5_000
   */
  retryAfterFallbackMs?: number;
  /**
   * PostgreSQL: how long a server gone away (a restart) has to take a connection again before the run's writer stops and
   * the answers it holds are lost (PG_WRITER_DEFAULTS.serverBackWithinMs).
   * @default 120_000
   */
  dbServerBackWithinMs?: number;
  /**
   * PostgreSQL: the run workers share for `credits.maxPerRun` (NETINGEST_RUN_KEY); by default a worker joins a live run
   * working one of its jobs, or starts its own. The reserve is the account's.
   */
  sharedRunKey?: string;
}

/** The run's settings that RunOptions may change, each with its default. */
export const RUN_DEFAULTS = {
  /** Total time a run may be paused by 429s before it stops and defers the rest. */
  maxThrottleWaitMs: 15 * 60_000,
  /** 429s a task may get before the run stops and defers the rest, whatever Retry-After; with retries, bounds its calls (maxCallsPerTask). */
  maxThrottledAttemptsPerTask: 20,
  requestTimeoutMs: 30_000,
  /**
   * Tasks in a row failing after every retry, no answer between, on errors saying the API is down (`outage` in
   * error-policy.ts: refused or dropped connection, timeout, 5xx) before the run stops as an outage (exit 1) and
   * defers the rest. A job's concurrency raises it: that many tasks fail together in one short blip.
   */
  outageMinTasks: 3,
  /**
   * Paid answers of one operation in a row that its answer contract cannot read before the run stops sending
   * (exit 6) and defers the rest; a job's concurrency raises it, a job's `retry.maxUnusableAnswers` replaces it.
   */
  unusableMinAnswers: 5,
  /**
   * Answers a post-details or search-jobs job must get in a run, all 404 and none with data, before the run warns that a
   * wrong API URL may be answering (not-found-only.ts). Fewer prove nothing: a handful of deleted posts is ordinary.
   */
  notFoundOnlyMinAnswers: 10,
} as const;

/** RUN_DEFAULTS' settings as a run takes them, each documented there. */
type RunDefaulted = { -readonly [K in keyof typeof RUN_DEFAULTS]?: number };

/** The run's options with their defaults filled in. */
export type RunSettings = { refresh: boolean } & Required<RunDefaulted>;

/** Every option RUN_DEFAULTS names, its default where it is unset. */
export function settingsOf(options: RunOptions): RunSettings {
  const settings: RunSettings = { refresh: options.refresh ?? false, ...RUN_DEFAULTS };
  for (const key of Object.keys(RUN_DEFAULTS) as Array<keyof typeof RUN_DEFAULTS>) settings[key] = options[key] ?? RUN_DEFAULTS[key];
  return settings;
}

/** Command-line overrides of every job's settings (`--concurrency`, `--rate`, `--max-credits`, `--reserve`). */
export interface JobOverrides {
  concurrency?: number;
  requestsPerMinute?: number;
  maxCredits?: number;
  reserve?: number;
}

/** The job with the overrides that are set taking the place of its own settings. */
export function applyOverrides(job: Job, o: JobOverrides | undefined): Job {
  if (!o) return job;
  return {
    ...job,
    rate: { requestsPerMinute: o.requestsPerMinute ?? job.rate.requestsPerMinute, concurrency: o.concurrency ?? job.rate.concurrency },
    credits: { reserve: o.reserve ?? job.credits.reserve, maxPerRun: o.maxCredits ?? job.credits.maxPerRun },
  };
}
