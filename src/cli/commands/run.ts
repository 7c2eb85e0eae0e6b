import { datasetOption, defineCommand, pathCoerce, withApi, withDb, withLogFormat } from '../common-options.ts';
import { resolveApiConfig } from '../../api/config.ts';
import { runJobs, type RunOptions, type RunSummary } from '../../runner/run-jobs.ts';
import { createOutputRedactor } from '../../api/redact.ts';
import { RUN_SETTING_RULES } from '../../jobs/schema.ts';
import { numberFlag, numberOption } from '../number-flags.ts';
import { createLogger, loggerOf, type LoggerOptions } from '../../runner/logger.ts';
import { CLEAR_LINE } from '../../runner/progress.ts';
import { withStopSignals } from '../signals.ts';
import { formatRunSummary } from '../format-summary.ts';
import { exitCodeForRun } from '../exit-codes.ts';
import { checkInvalidOut, INVALID_OUT_OPTION, loadJobs, writeInvalidOut } from '../job-args.ts';
import { RunNotRecordedError } from '../../errors.ts';
import { terminalSafeJson } from '../../text-width.ts';
import { secondsFromEnv } from '../../seconds-from-env.ts';

/** PostgreSQL: names the run whose `credits.maxPerRun` workers share, not the live run they join (docs/postgres.md). */
const RUN_KEY_ENV = 'NETINGEST_RUN_KEY';

/** The run lock's lease in seconds: how long after a run's last heartbeat another host may take its lock over. */
const LOCK_LEASE_ENV = 'NETINGEST_LOCK_LEASE_SECONDS';

/** The lease shortest allowed: below it, a pause of the event loop or the disk would cost a run its lock. */
const MIN_LEASE_SECONDS = 1;

/** PostgreSQL: how long the run waits for a server gone away (a restart, a failover) to write the answers it holds. */
const DB_BACK_ENV = 'NETINGEST_PG_RECONNECT_SECONDS';

/** Without a terminal (cron), the seconds between two progress lines. */
const PROGRESS_ENV = 'NETINGEST_PROGRESS_SECONDS';

/** `netingest run`: the run engine from the command line. */
export const runCommand = defineCommand({
  builder: (y) =>
    withDb(withLogFormat(withApi(y)), 'create')
      .positional('jobs', { type: 'string', array: true, describe: 'job files (.json or .ts)' })
      .option('all', { type: 'boolean', default: false, describe: 'run every job in jobs/' })
      .option('jobs-dir', { type: 'string', default: 'jobs', describe: 'folder searched by --all', coerce: pathCoerce('--jobs-dir') })
      .option('concurrency', numberOption("override every job's rate.concurrency (a whole number >= 1)"))
      .option('rate', numberOption("override every job's rate.requestsPerMinute (> 0)"))
      .option('max-credits', numberOption("override every job's credits.maxPerRun (> 0)"))
      .option('reserve', numberOption("override every job's credits.reserve (>= 0)"))
      .option('refresh', { type: 'boolean', default: false, describe: 'call again tasks done within refreshAfterDays' })
      .option('json', { type: 'boolean', default: false, describe: 'print the summary as JSON on stdout' })
      .option('invalid-out', INVALID_OUT_OPTION)
      .example('$0 run jobs/lookalikes.json', 'run one job')
      .example('$0 run --all --db data/nightly.db', 'run every job in jobs/ (nightly cron)'),
  run: async (argv, io) => {
    const overrides = overridesFromFlags(argv);
    const dbPath = datasetOption(argv.db);
    const lockLeaseMs = lockLeaseFromEnv();
    const dbServerBackWithinMs = secondsFromEnv(DB_BACK_ENV, 1, process.env);
    const progressLogMs = secondsFromEnv(PROGRESS_ENV, 1, process.env);
    const { jobs, broken } = await loadJobs(argv.jobs ?? [], argv.all, argv['jobs-dir']);
    await checkInvalidOut(jobs, argv['invalid-out'], dbPath);
    const api = resolveApiConfig({ apiUrl: argv['api-url'], tokenFile: argv['token-file'] });
    const redact = createOutputRedactor([api.token]);
    const tty = Boolean(io.stderr.isTTY);
    const logOptions = {
      stream: io.stderr,
      format: argv['log-format'],
      level: tty && argv['log-format'] === 'text' ? ('warn' as const) : ('info' as const),
      secrets: [api.token],
    };
    // Without a terminal (cron), a night with nothing to do writes one line (holdRoutineLines).
    const held = tty ? null : holdRoutineLines(logOptions);
    const logger = held?.logger ?? createLogger(logOptions);
    const summary = await withStopSignals(
      (sig, again) => {
        // The progress line and an echoed ^C may be on screen: the notice gets a line of its own.
        if (tty) io.stderr.write(CLEAR_LINE);
        if (again) logger.warn('signal received again: stopping at once; the calls in flight are not written, the next run repeats them', { signal: sig });
        else logger.warn('signal received: finishing calls in flight (send it again to stop at once)', { signal: sig });
      },
      (signal) =>
      runJobs({
        dbPath, jobs, brokenJobFiles: broken, api, overrides, refresh: argv.refresh, signal, logger, progressStream: io.stderr, progressLogMs,
        // A wait shorter than the progress log's interval needs no line of its own.
        sharedRateLongWaitMs: progressLogMs, sharedCreditLongWaitMs: progressLogMs,
        exitCodeOf: exitCodeForRun, lockLeaseMs, dbServerBackWithinMs, sharedRunKey: process.env[RUN_KEY_ENV]?.trim() || undefined,
      }),
    ).catch((err: unknown) => {
      held?.settle(false);
      // The run's end is in no row: its summary (the process's own count) is all a cron log will have of it. The error
      // then ends the command as it would have without a summary (its line on stderr, its exit code).
      if (err instanceof RunNotRecordedError) io.stdout.write(summaryOutput(err.summary, argv.json, redact));
      throw err;
    });
    const quiet = held !== null && hadNothingToDo(summary);
    held?.settle(quiet);
    if (!(quiet && !io.stdout.isTTY && !argv.json)) io.stdout.write(summaryOutput(summary, argv.json, redact));
    // The jobs whose input the run read whole; an interrupted run writes nothing more.
    if (argv['invalid-out'] !== undefined && summary.status !== 'interrupted') {
      const read = jobs.filter((j) => summary.jobs.some((s) => s.name === j.name && s.status === 'ran'));
      await writeInvalidOut(read, argv['invalid-out'], dbPath, io.stderr);
    }
    return exitCodeForRun(summary);
  },
});

/** The override flags, each checked by the rule of the job file field it overrides. */
function overridesFromFlags(argv: Record<string, unknown>): NonNullable<RunOptions['overrides']> {
  return {
    concurrency: numberFlag('--concurrency', argv['concurrency'], RUN_SETTING_RULES.concurrency, 'rate.concurrency'),
    requestsPerMinute: numberFlag('--rate', argv['rate'], RUN_SETTING_RULES.requestsPerMinute, 'rate.requestsPerMinute'),
    maxCredits: numberFlag('--max-credits', argv['max-credits'], RUN_SETTING_RULES.maxPerRun, 'credits.maxPerRun'),
    reserve: numberFlag('--reserve', argv['reserve'], RUN_SETTING_RULES.reserve, 'credits.reserve'),
  };
}

/** The summary as printed, text or JSON, with the token redacted. */
function summaryOutput(summary: RunSummary, json: boolean, redact: (text: string) => string): string {
  if (!json) return redact(formatRunSummary(summary));
  // Redacting each string before it is escaped keeps the JSON valid whatever the token holds, and keys intact.
  return terminalSafeJson(JSON.stringify(summary, (_key, value: unknown) => (typeof value === 'string' ? redact(value) : value), 2)) + '\n';
}

/** The lease set in the environment, in ms, or undefined for the default; a bad value is a usage error. */
export function lockLeaseFromEnv(env: NodeJS.ProcessEnv = process.env): number | undefined {
  return secondsFromEnv(LOCK_LEASE_ENV, MIN_LEASE_SECONDS, env);
}

/**
 * Quiet under cron: a logger holding a run's routine lines until it has something to say (a warning, error or progress
 * line), and how the run's end settles them: a night with nothing to do keeps only `run finished` (the exit code).
 */
function holdRoutineLines(options: LoggerOptions) {
  let held: string[] | null = [];
  let lastLine = -1;
  const sink = {
    write: (line: string) => (held === null ? options.stream.write(line) : held.push(line) > 0),
  } as unknown as NodeJS.WritableStream;
  const inner = createLogger({ ...options, stream: sink });
  const release = () => {
    if (held === null) return;
    const lines = held;
    held = null;
    for (const line of lines) options.stream.write(line);
  };
  const logger = loggerOf((level, msg, fields) => {
    if (level === 'warn' || level === 'error' || msg === 'progress') release();
    if (msg === 'run finished' && held !== null) lastLine = held.length;
    inner[level](msg, fields);
  });
  return {
    logger,
    /** Writes what is held, or for a quiet run only the `run finished` line; later lines are written at once. */
    settle(quiet: boolean): void {
      if (quiet && held !== null) held = held.slice(lastLine, lastLine + 1);
      release();
    },
  };
}

/** A run with nothing to tell: no call, completed, nothing new invalid, failed, deferred or warned about. */
function hadNothingToDo(summary: RunSummary): boolean {
  return (
    summary.calls === 0 &&
    summary.status === 'completed' &&
    summary.jobs.every(
      (j) => j.status === 'ran' && j.invalidRows === j.invalidKnown && j.failed === 0 && j.deferred === 0 && j.warnings.length === 0,
    )
  );
}
