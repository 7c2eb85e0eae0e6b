import { hostname } from 'node:os';
import { UsageError } from '../errors.ts';
import { createApiClient } from '../api/client.ts';
import { openDatabase, toDatabaseUseError } from '../store/open.ts';
import { createLedger } from '../store/ledger.ts';
import { createRunLog } from '../store/runs.ts';
import { acquireRunLock, recentLockCheck, type LockLostError, type RunLock } from '../store/run-lock.ts';
import { lockGuardedLedger } from './lock-guarded-ledger.ts';
import { createApiCallLog } from '../store/api-calls.ts';
import type { Operation } from '../spec/types.ts';
import { CreditGuard } from './credit-guard.ts';
import { roundCredits } from '../credits/credit-meter.ts';
import { RateGate } from './rate-gate.ts';
import { RunStop } from './run-stop.ts';
import { jobStopOf, settleJobStop } from './job-stop.ts';
import type { CreditStop } from './credit-guard.ts';
import { ResultWriter } from './result-writer.ts';
import { planIntoLedger, settleDue, type PlanCounts } from './plan-into-ledger.ts';
import { dueSince } from '../jobs/freshness.ts';
import { workJob, type JobProgress } from './run-job.ts';
import { ProgressReporter } from './progress.ts';
import { silentLogger, type Logger } from './logger.ts';
import { notReachedJob } from './not-reached-job.ts';
import { jobSummary, runEnd, runStatus, type JobSummary, type RunSummary } from './run-summary.ts';
import { partlyPlanned } from './partly-planned-job.ts';
import { OutageBreaker } from './outage-breaker.ts';
import { FailureLog, formatCodeCounts } from './failure-log.ts';
import { describeStop } from './stop-summary.ts';
import { SkippedJobs } from './skipped-jobs.ts';
import { applyOverrides } from './job-overrides.ts';
import { isJobUnusable } from '../jobs/job-error.ts';
import { RUN_DEFAULTS, type RunOptions } from './run-options.ts';
import { NotFoundOnlyWatch } from './not-found-only.ts';
import { seedFromBalance } from './balance-check.ts';
import { UnusableAnswerBreaker } from './unusable-breaker.ts';
import { RunDrift } from './run-drift.ts';
import { driftPathLines } from '../operations/drift.ts';
import { anomalyCountsOf } from '../store/answer-anomalies.ts';
import { pruneJobBodies } from './job-retention.ts';

export type { JobSummary, RunStopSummary, RunSummary } from './run-summary.ts';
export { RUN_DEFAULTS, type RunOptions } from './run-options.ts';

/**
 * Runs jobs one after the other against one database: takes the run lock, streams each job's input into the
 * ledger, works its due tasks, and records the run. Stops early, deferring what is left, on credits, a
 * throttle that outlasts its cap, a signal, or a refused token. A job whose input file cannot be used is
 * skipped (as are `brokenJobFiles`) and the others run; when none could run, the run throws their errors.
 */
export async function runJobs(options: RunOptions): Promise<RunSummary> {
  const logger = options.logger ?? silentLogger;
  const database = openDatabase(options.dbPath);
  try {
    let lock: RunLock;
    try {
      lock = acquireRunLock(database, { leaseMs: options.lockLeaseMs });
    } catch (err) {
      throw toDatabaseUseError(err, database.file);
    }
    try {
      return await runLocked(options, database, lock, logger);
    } catch (err) {
      throw toDatabaseUseError(err, database.file);
    } finally {
      try {
        lock.release();
      } catch (err) {
        // A lock row left behind names a dead pid and is taken over by the next run; the outcome matters more.
        logger.warn('could not release the run lock', { error: describe(err, database.file).message });
      }
    }
  } finally {
    database.close();
  }
}

async function runLocked(
  options: RunOptions,
  database: ReturnType<typeof openDatabase>,
  lock: RunLock,
  logger: Logger,
): Promise<RunSummary> {
  const startedAt = new Date().toISOString();
  const runs = createRunLog(database);
  const ledger = lockGuardedLedger(createLedger(database), lock);
  const callLog = createApiCallLog(database);
  const runId = runs.start(options.jobs.map((j) => j.name), startedAt, process.pid, hostname());
  lock.setRunId(runId);
  logger.info('run started', { run: runId, jobs: options.jobs.map((j) => j.name).join(','), db: database.file });
  if (lock.abandonedRuns.length > 0) {
    logger.warn('closed runs whose process ended without finishing them, as abandoned', { runs: lock.abandonedRuns.join(',') });
  }

  const stop = new RunStop();
  // Its lock taken over (suspended past its lease): no call, no commit, no write of its books from here on.
  const lockLost: { error: LockLostError | null } = { error: null };
  lock.onLost((err) => {
    lockLost.error = err;
    stop.stop('fatal', err);
  });
  const onAbort = () => stop.stop('interrupted');
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });

  const knownCosts: Partial<Record<Operation, number>> = {};
  for (const job of options.jobs) {
    const op: Operation = job.operation;
    knownCosts[op] ??= callLog.learnedCost(op) ?? undefined;
  }
  const guard = new CreditGuard({ reserve: 0, maxPerRun: null }, { costs: knownCosts, lastCreditsUsed: callLog.lastCounters()?.creditsUsed ?? null });
  const concurrency = Math.max(...options.jobs.map((j) => options.overrides?.concurrency ?? j.rate.concurrency), 1);
  const client = createApiClient({
    baseUrl: options.api.baseUrl,
    token: options.api.token,
    timeoutMs: options.requestTimeoutMs ?? RUN_DEFAULTS.requestTimeoutMs,
    connections: concurrency,
  });
  const writer = new ResultWriter(database, runId, (err) => stop.stop('fatal', err), lock);
  const gate = new RateGate({ requestsPerMinute: null });
  const outageMinTasks = options.outageMinTasks ?? RUN_DEFAULTS.outageMinTasks;
  const breaker = new OutageBreaker(stop, outageMinTasks);
  const unusableMinAnswers = options.unusableMinAnswers ?? RUN_DEFAULTS.unusableMinAnswers;
  const unusableAnswers = new UnusableAnswerBreaker(stop, (op) => guard.costOf(op));
  const drift = new RunDrift(database, runId);
  const maxThrottleWaitMs = options.maxThrottleWaitMs ?? RUN_DEFAULTS.maxThrottleWaitMs;
  const maxThrottledAttemptsPerTask = options.maxThrottledAttemptsPerTask ?? RUN_DEFAULTS.maxThrottledAttemptsPerTask;
  const notFoundOnlyMinAnswers = options.notFoundOnlyMinAnswers ?? RUN_DEFAULTS.notFoundOnlyMinAnswers;
  const skipped = new SkippedJobs(logger);
  const summaries: JobSummary[] = (options.brokenJobFiles ?? []).map((err) => skipped.brokenFile(err));
  let creditsAtStart: number | null = null;
  // The first job that stopped on its own credits.maxPerRun while the run went on: the run ends as a credit stop.
  let capStop: (CreditStop & { job: string }) | null = null;
  let errors = 0;
  // A signal that came after the run stopped for another reason, and kept a job's refresh from being deferred.
  let refreshInterrupted = false;
  // The free balance check is asked once, before the run's first call.
  let balanceAsked = false;

  try {
    for (const configured of options.jobs) {
      const job = applyOverrides(configured, options.overrides);
      // Listed, so that a nightly log says which jobs waited; their tasks are planned and worked by the next run.
      if (stop.reason) {
        const notReached = await notReachedJob(job, {
          ledger, runId, refresh: options.refresh ?? false, startedAt, stopReason: stop.reason, interrupt: options.signal, logger,
        });
        summaries.push(notReached.summary);
        refreshInterrupted ||= notReached.interrupted;
        continue;
      }
      let plan: PlanCounts;
      try {
        plan = await planIntoLedger(job, ledger, runId, stop.signal);
      } catch (err) {
        if (!isJobUnusable(err)) throw err;
        summaries.push(skipped.skip(job, err));
        continue;
      }
      if (!plan.complete) {
        summaries.push(partlyPlanned(job, plan, ledger, runId, logger));
        continue;
      }
      const refresh = options.refresh ?? false;
      const filter = { job: job.name, runId, freshSince: dueSince(job.refreshAfterDays, refresh, startedAt), refresh };
      const { shared, runnable, failedBefore } = settleDue(job.operation, ledger, filter);
      logger.info('job planned', { job: job.name, tasks: plan.tasks, invalid: plan.invalid, invalid_known: plan.invalidKnown || undefined, duplicates: plan.duplicates, due: runnable, failed_before: failedBefore, shared: shared || undefined });
      for (const bad of plan.invalidSamples) {
        logger.info('invalid input row', { job: job.name, file: bad.file, line: bad.line, field: bad.field, reason: bad.reason });
      }
      guard.setLimits({ reserve: job.credits.reserve, maxPerRun: job.credits.maxPerRun ?? null });
      if (!balanceAsked && runnable > 0) {
        balanceAsked = true;
        await seedFromBalance(client, guard, callLog.lastCounters()?.creditsUsed ?? null, stop.signal, logger);
      }
      gate.setRequestsPerMinute(job.rate.requestsPerMinute);
      breaker.setThreshold(Math.max(outageMinTasks, job.rate.concurrency));
      unusableAnswers.setThreshold(job.retry.maxUnusableAnswers ?? Math.max(unusableMinAnswers, job.rate.concurrency));
      const progress: JobProgress = { runnable, done: 0, notFound: 0, failed: 0, errors: 0 };
      const startedMs = performance.now();
      const reporter = new ProgressReporter(
        { stream: options.progressStream ?? process.stderr, logger, logIntervalMs: options.progressLogIntervalMs },
        () => ({
          job: job.name,
          total: runnable,
          done: progress.done,
          notFound: progress.notFound,
          failed: progress.failed,
          deferred: 0,
          errors: progress.errors,
          creditsLeft: guard.balance,
          startedAtMs: startedMs,
        }),
      );
      reporter.start();
      const failures = new FailureLog(reporter.above(logger), job.name, options.failureLog);
      const jobStop = jobStopOf(stop);
      const notFoundOnly = new NotFoundOnlyWatch(job.operation, notFoundOnlyMinAnswers, [options.api.token]);
      try {
        await workJob(job, ledger, filter, {
          client,
          guard,
          gate,
          stop: jobStop.stop,
          writer,
          retry: job.retry,
          maxThrottleWaitMs,
          maxThrottledAttemptsPerTask,
          holdsLock: recentLockCheck(() => lock.held()),
          onAttemptError: () => {
            progress.errors += 1;
            errors += 1;
          },
          onTaskEnded: (task, outcome) => {
            breaker.record(outcome.kind === 'failed' ? { kind: 'failed', error: outcome.error } : { kind: 'answered' });
            unusableAnswers.record(job.operation, outcome.kind === 'failed' ? { kind: 'failed', error: outcome.error } : { kind: 'stored' });
            if (outcome.kind === 'done') drift.add(job.operation, outcome.drift);
            notFoundOnly.record(outcome);
            if (outcome.kind !== 'failed') return;
            failures.record({ inputKey: task.inputKey, page: task.page, code: outcome.code, message: outcome.message, retryable: outcome.retryable });
          },
        }, progress);
      } finally {
        reporter.stop();
        jobStop.release();
        failures.flush();
        creditsAtStart ??= guard.balance === null ? null : guard.balance + guard.spent;
        await writer.drain();
      }
      if (settleJobStop(jobStop.stop, stop, guard)) capStop ??= { ...guard.stopDetail!, job: job.name };
      // On a full disk this write fails too: the pending tasks wait all the same, and the summary still says what was done.
      if (jobStop.stop.reason) deferPending(() => ledger.deferPending(job.name, runId, new Date().toISOString()), stop);
      else if (job.keepRawDays !== null) pruneJobBodies(database, job.name, job.keepRawDays, logger);
      const counts = ledger.countsByStatus(job.name, runId);
      const failedByCode = ledger.failedByCode(job.name, runId);
      const warning = notFoundOnly.warning(job.name);
      drift.save(job.operation);
      const anomalies = anomalyCountsOf(database, runId, job.name);
      summaries.push({
        ...jobSummary(job, plan, { worked: runnable, failedBefore }, counts, failedByCode, warning ? [warning] : []),
        setAside: anomalies.no_identity,
        otherPost: anomalies.other_post,
      });
      const fields = {
        job: job.name,
        done: counts.done,
        not_found: counts.not_found,
        failed: counts.failed,
        failed_codes: counts.failed > 0 ? formatCodeCounts(failedByCode) : undefined,
        deferred: counts.deferred,
        set_aside: anomalies.no_identity || undefined,
        other_post: anomalies.other_post || undefined,
      };
      // A job cut short is not "finished": its deferred tasks are the run's stop, told next.
      if (jobStop.stop.reason) logger.warn('job stopped before its end', { ...fields, reason: jobStop.stop.reason });
      else logger.info('job finished', fields);
      if (warning) logger.warn(warning.message, { job: job.name, answers: warning.answers, status: warning.status, body_message: warning.bodyMessage });
    }
  } catch (err) {
    stop.stop('fatal', err);
  } finally {
    await client.close().catch(() => undefined);
    // A writer that failed has reported why through stop(); closing it can add nothing.
    await writer.close().catch(() => undefined);
    options.signal?.removeEventListener('abort', onAbort);
  }
  // The run that took the lock over closed this one's books as abandoned, from what it had committed: they stay so.
  if (!lock.held()) {
    // The error itself, which says who holds the lock now, is the command's to print.
    logger.error('run stopped: its lock was taken over while it was not running', { run: runId, calls: callLog.ofRun(runId).calls });
    throw lockLost.error!;
  }
  // Jobs never reached because the run stopped keep their pending tasks for the next run.
  // Such a signal ends the run as any interrupt does (130): a 3 would say that every refresh not done was deferred.
  const stopReason = refreshInterrupted ? 'interrupted' : (stop.reason ?? (capStop ? 'credits' : null));
  const status = runStatus(stopReason, summaries);
  const endedAt = new Date().toISOString();
  const { calls } = callLog.ofRun(runId);
  const error = stop.error ? describe(stop.error, database.file) : null;
  const stopped = stopReason
    ? describeStop({
        reason: stopReason, errorMessage: error?.message ?? null, throttledMs: gate.totalPausedMs, maxThrottleWaitMs,
        maxThrottledAttemptsPerTask,
        credit: stop.reason ? guard.stopDetail : capStop, cappedJob: stop.reason ? null : capStop?.job,
      })
    : null;
  const summary: RunSummary = {
    runId,
    status,
    startedAt,
    endedAt,
    jobs: summaries,
    calls,
    // Paid answers without readable counters are spent too, even when no counter ever showed the balance.
    creditsSpent: guard.balance === null && guard.estimatedAnswers === 0 ? null : roundCredits(guard.spent),
    creditsRemaining: guard.balance === null ? null : roundCredits(guard.balance),
    creditsEstimatedAnswers: guard.estimatedAnswers,
    creditsSpentEstimated: guard.spentIsEstimate,
    error,
    stop: stopped,
    drift: drift.lines(),
  };
  try {
    lock.whileHeld(() => runs.end(runId, runEnd(summary, creditsAtStart, options.exitCodeOf?.(summary) ?? null)));
  } catch (err) {
    if (lockLost.error) throw lockLost.error;
    logger.error('could not record the end of the run', { run: runId, error: describe(err, database.file).message });
  }
  if (error) {
    const what =
      stop.reason === 'outage' ? 'run stopped: the API looks down' : stop.reason === 'unusable' ? "run stopped: the service's paid answers cannot be read" : 'run stopped by an error';
    logger.error(what, { run: runId, reason: stop.reason, code: error.code, error: error.message });
  } else if (stopped) {
    logger.warn('run stopped early', { run: runId, reason: stopped.reason, limit: stopped.limit ?? undefined, detail: stopped.message });
  }
  for (const line of driftPathLines(summary.drift)) logger.warn(`answer drift: ${line}`);
  const skippedJobs = summaries.filter((j) => j.status === 'skipped').length;
  // The exit code ends the line: under cron the last line is the one read (and, on a night with nothing to do, the only one).
  logger.info('run finished', {
    run: runId, status, calls, errors, skipped_jobs: skippedJobs > 0 ? skippedJobs : undefined, credits_spent: summary.creditsSpent, credits_left: guard.balance,
    invalid_rows: summary.jobs.reduce((n, j) => n + j.invalidRows, 0) || undefined, exit_code: options.exitCodeOf?.(summary),
  });
  // A job whose input turned out unusable is the user's to fix (exit 2), after the run's books are closed.
  if (stop.error instanceof UsageError) throw stop.error;
  // Every job skipped (runStatus: failed): nothing ran, so the problems are the outcome, as for one bad job.
  const unusable = !stop.reason && status === 'failed' ? skipped.asError() : null;
  if (unusable) throw unusable;
  return summary;
}

/** Defers a stopped job's pending tasks; a failed write stops the run (pending tasks are picked up all the same). */
function deferPending(write: () => void, stop: RunStop): void {
  try {
    write();
  } catch (err) {
    stop.stop('fatal', err);
  }
}

function describe(err: unknown, dbFile: string): { code: string; message: string } {
  // SQLite's own messages ("database or disk is full") do not say which file: the mapped error does.
  const mapped = toDatabaseUseError(err, dbFile);
  const code = (mapped as { code?: unknown })?.code;
  return {
    code: typeof code === 'string' ? code : 'INTERNAL',
    message: mapped instanceof Error ? mapped.message : String(mapped),
  };
}
