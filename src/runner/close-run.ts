/** Closing a run: the summary and `runs` row from its job results, the last log lines, the command's errors thrown. */
import { RunNotRecordedError, UsageError } from '../errors.ts';
import { roundCredits } from '../credits/credit-meter.ts';
import { combineErrors } from '../jobs/job-error.ts';
import { driftPathLines } from '../operations/drift.ts';
import type { RunEnd } from '../store/runs.ts';
import type { RunStatus } from '../store/tables.ts';
import { describeError, type OpenRun, type RunTally } from './open-run.ts';
import type { JobResult } from './run-one-job.ts';
import type { StopReason } from './run-stop.ts';
import { describeStop } from './stop-summary.ts';
import type { JobSummary, RunSummary } from './run-summary.ts';

/**
 * Records the summary, then throws a lost lock's error (exit 4), the database's when the end could not be recorded
 * (RunNotRecordedError, carrying the summary to print), an unusable input's (2), or all-skipped jobs'.
 */
export async function closeRun(run: OpenRun, results: readonly JobResult[]): Promise<RunSummary> {
  await run.closeCalls();
  // The run that took the lock over closed this one's books as abandoned, from what it had committed: they stay so.
  // A PostgreSQL run whose session the server ended was taken over by no one: it closes its own books.
  if (!run.store.hold.held() && !run.store.hold.closesOwnRunWhenLost) {
    // The error itself, which says who holds the lock now, is the command's to print.
    run.logger.error('run stopped: its lock was taken over while it was not running', { run: run.runId, calls: (await run.store.calls.ofRun(run.runId)).calls });
    throw run.lockLost!;
  }
  const summary = summarize(run, results, await callsOfRun(run));
  summary.notRecorded = await recordEnd(run, withoutCountedJobs(summary, results));
  logEnd(run, summary);
  // What the process counted is still printed: a cron log must say what was paid for even when no row does.
  if (summary.notRecorded) throw new RunNotRecordedError(summary, summary.notRecorded);
  // A job whose input turned out unusable is the user's to fix (exit 2), after the run's books are closed.
  if (run.stop.error instanceof UsageError) throw run.stop.error;
  // Every job skipped (runStatus: failed): nothing ran, so the problems are the outcome, as for one bad job.
  if (!run.stop.reason && summary.status === 'failed') {
    const skipped = results.flatMap((r) => (r.unusable ? [r.unusable] : []));
    if (skipped.length > 0) throw combineErrors(skipped);
  }
  return summary;
}

/**
 * Its stop's reason, else a job's credit cap. A signal that kept a not-reached job's refresh from being deferred ends
 * the run as any interrupt (130): a 3 would say every refresh not done was deferred.
 */
function stopReasonOf(run: OpenRun, results: readonly JobResult[], capped: boolean): StopReason | null {
  if (results.some((r) => r.interrupted)) return 'interrupted';
  return run.stop.reason ?? (capped ? 'credits' : null);
}

function summarize(run: OpenRun, results: readonly JobResult[], calls: number): RunSummary {
  const { guard, stop } = run;
  const jobs = results.flatMap((r) => (r.summary ? [r.summary] : []));
  // The first job that stopped on its own credits.maxPerRun while the run went on: the run ends as a credit stop.
  const capStop = results.find((r) => r.capped)?.capped ?? null;
  const stopReason = stopReasonOf(run, results, capStop !== null);
  const error = stop.error ? describeError(stop.error, run.store) : null;
  const stopped = stopReason
    ? describeStop({
        reason: stopReason, errorMessage: error?.message ?? null, throttledMs: run.gate.totalPausedMs, maxThrottleWaitMs: run.settings.maxThrottleWaitMs,
        maxThrottledAttemptsPerTask: run.settings.maxThrottledAttemptsPerTask, calls,
        credit: stop.reason ? guard.stopDetail : capStop, cappedJob: stop.reason ? null : capStop?.job,
      })
    : null;
  return {
    runId: run.runId,
    status: runStatus(stopReason, jobs),
    startedAt: run.startedAt,
    endedAt: new Date().toISOString(),
    jobs,
    calls,
    // Paid answers without readable counters are spent too, even when no counter ever showed the balance.
    creditsSpent: guard.balance === null && guard.estimatedAnswers === 0 ? null : roundCredits(guard.spent),
    creditsRemaining: guard.balance === null ? null : roundCredits(guard.balance),
    creditsEstimatedAnswers: guard.estimatedAnswers,
    creditsSpentEstimated: guard.spentIsEstimate,
    error,
    stop: stopped,
    drift: run.drift.lines(),
    notRecorded: null,
    ...(run.writer.callsNotWritten > 0 ? { callsNotStored: run.writer.callsNotWritten } : {}),
  };
}

/** The summary as the `runs` row takes it: without the jobs the process counted itself (see JobResult.counted). */
function withoutCountedJobs(summary: RunSummary, results: readonly JobResult[]): RunSummary {
  const counted = new Set(results.flatMap((r) => (r.counted && r.summary ? [r.summary] : [])));
  return counted.size === 0 ? summary : { ...summary, jobs: summary.jobs.filter((j) => !counted.has(j)) };
}

/**
 * The run's calls by its api_calls rows and those its writer could not write (it failed first), or the writer's count
 * when the database cannot be read: the summary still says what was paid.
 */
async function callsOfRun(run: OpenRun): Promise<number> {
  try {
    return (await run.store.calls.ofRun(run.runId)).calls + run.writer.callsNotWritten;
  } catch (err) {
    run.logger.warn("could not count the run's calls in the database: the summary gives the process's own count", {
      run: run.runId, calls: run.writer.calls, error: describeError(err, run.store).message,
    });
    return run.writer.calls;
  }
}

/**
 * `step` again once a PostgreSQL server gone away is back (a restart at the run's end, when the writer held nothing to
 * wait for it with), within the writer's bound; else its first error.
 */
async function whenServerBack<T>(run: OpenRun, step: () => T | Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (describeError(err, run.store).code !== 'DB_CONNECTION_LOST' || !(await run.store.serverBack?.(run.options.signal))) throw err;
    return step();
  }
}

/** Writes the end of the `runs` row; a failure is logged and returned (`notRecorded`), unless the lock was lost: that is thrown. */
async function recordEnd(run: OpenRun, summary: RunSummary): Promise<RunSummary['notRecorded']> {
  try {
    // On SQLite the store writes it only while the run holds its lock.
    await whenServerBack(run, () => run.store.runs.end(run.runId, runEnd(summary, run.tally, run.options.exitCodeOf?.(summary) ?? null)));
    return null;
  } catch (err) {
    if (run.lockLost && !run.store.hold.closesOwnRunWhenLost) throw run.lockLost;
    const error = describeError(err, run.store);
    // Left `running`: the next run finds no live session for it and closes it as abandoned.
    run.logger.error('could not record the end of the run; the next run closes it as abandoned', { run: run.runId, code: error.code, error: error.message });
    return error;
  }
}

function logEnd(run: OpenRun, summary: RunSummary): void {
  const { logger, runId, stop } = run;
  const { error, stop: stopped } = summary;
  if (error) {
    const what =
      stop.reason === 'outage' ? 'run stopped: the API looks down' : stop.reason === 'unusable' ? "run stopped: the service's paid answers cannot be read" : 'run stopped by an error';
    logger.error(what, { run: runId, reason: stop.reason, code: error.code, error: error.message });
  } else if (stopped) {
    logger.warn('run stopped early', { run: runId, reason: stopped.reason, limit: stopped.limit ?? undefined, detail: stopped.message });
  }
  for (const line of driftPathLines(summary.drift)) logger.warn(`answer drift: ${line}`);
  // Exit code last: under cron the last line is the one read (on a night with nothing to do, the only one).
  logger.info('run finished', {
    run: runId, status: summary.status, calls: summary.calls, errors: run.tally.attemptErrors, skipped_jobs: summary.jobs.filter((j) => j.status === 'skipped').length || undefined,
    credits_spent: summary.creditsSpent, credits_left: run.guard.balance,
    invalid_rows: summary.jobs.reduce((n, j) => n + j.invalidRows, 0) || undefined, not_stored: summary.callsNotStored, not_recorded: summary.notRecorded?.code,
    exit_code: run.options.exitCodeOf?.(summary),
  });
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
 * The run's final status. A task failed in an earlier run and not retried counts: exit 0 promises every task done or
 * not found. Every job skipped: failed; skipped jobs among others leave it to those (exitCodeForRun counts them).
 */
export function runStatus(stopReason: StopReason | null, jobs: readonly JobSummary[]): RunStatus {
  if (stopReason) return STOP_STATUS[stopReason];
  if (jobs.length > 0 && jobs.every((j) => j.status === 'skipped')) return 'failed';
  return jobs.some((s) => s.failed > 0) ? 'completed_with_failures' : 'completed';
}

export function runEnd(summary: RunSummary, tally: Pick<RunTally, 'creditsAtStart' | 'jobRates'>, exitCode: number | null): RunEnd {
  const { jobs } = summary;
  return {
    status: summary.status,
    endedAt: summary.endedAt,
    creditsAtStart: tally.creditsAtStart,
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
    jobRates: Object.keys(tally.jobRates).length > 0 ? { ...tally.jobRates } : null,
  };
}

// `runs.error`: why the run stopped (`CODE: message`, or the limit), then `skipped job NAME: CODE: message` lines.
function runErrorText({ error, stop, jobs }: RunSummary): string | null {
  const why = error ? `${error.code}: ${error.message}` : stop?.message;
  const lines = [why, ...jobs.map((j) => j.error && `skipped job ${j.name}: ${j.error.code}: ${j.error.message}`)];
  return lines.filter(Boolean).join('\n') || null;
}

function sum(rows: readonly JobSummary[], key: 'planned' | 'done' | 'notFound' | 'failed' | 'deferred' | 'invalidRows'): number {
  return rows.reduce((n, r) => n + r[key], 0);
}
