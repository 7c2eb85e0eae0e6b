/** One job of a run, input to books: every way it ends (not reached, skipped, read cut, worked) is one JobResult. */
import { basename, extname } from 'node:path';
import { reportedBalance, roundCredits } from '../credits/credit-meter.ts';
import type { UsageError } from '../errors.ts';
import { isJobUnusable, type JobFileError } from '../jobs/job-error.ts';
import type { Job } from '../jobs/schema.ts';
import type { RunnableFilter } from '../store/ledger.ts';
import type { SettledCounts } from '../store/group-commit-writer.ts';
import type { TaskStatus } from '../store/tables.ts';
import type { RunStore } from '../store/run-store.ts';
import { recentLockCheck } from '../store/run-lock.ts';
import { FailureLog, formatCodeCounts } from './failure-log.ts';
import { applyOverrides } from './run-options.ts';
import type { Logger } from './logger.ts';
import { NotFoundOnlyWatch } from './not-found-only.ts';
import { describeError, type OpenRun } from './open-run.ts';
import { deferRefresh, planIntoLedger, refreshedSince, settleDue, type PlanCounts } from './plan-into-ledger.ts';
import { ProgressReporter, type JobProgress } from './progress.ts';
import { workJob } from './run-job.ts';
import { jobStopOf, settleJobStop, type RunStop } from './run-stop.ts';
import type { JobStatus, JobSummary } from './run-summary.ts';
import type { CreditStop } from '../credits/credit-guard.ts';

/** How one job of a run ended: its summary, and what closeRun reads of the run's stop besides. */
export interface JobResult {
  /** Null when an error stopped the run in this job (it is the run's stop error): the jobs after it are not listed. */
  summary: JobSummary | null;
  /** Why its job file or input file cannot be used (status `skipped`): no task, no call; the other jobs run. */
  unusable?: UsageError;
  /** Cut short by its own credits.maxPerRun (rest deferred): only this job ends; the run ends as a credit stop. */
  capped?: CreditStop & { job: string };
  /** Not reached, or stopped while its input was read: the user's signal kept its --refresh from being deferred. */
  interrupted?: boolean;
  /** The process's own count (countedJob), the database lost: left out of `runs`, as a job whose error stopped the run always was. */
  counted?: boolean;
}

/** A job as its summary names it: a job file that could not be loaded has no operation. */
type JobName = Pick<JobSummary, 'name' | 'operation'>;

/** Runs one job. Any error but an unusable input stops the run ('fatal'): no summary, and no job listed after it. */
export async function runOneJob(run: OpenRun, configured: Job): Promise<JobResult> {
  const job = applyOverrides(configured, run.options.overrides);
  try {
    // Listed, so that a nightly log says which jobs waited; their tasks are planned and worked by the next run.
    if (run.stop.reason) return await notReached(run, job);
    // Read before planning, which stamps the job's tasks with this run.
    const resumed = run.settings.refresh ? await run.store.ledger.deferredSince(job.name) : null;
    let plan: PlanCounts;
    try {
      plan = await planIntoLedger(job, run.store.ledger, run.runId, run.stop.signal);
    } catch (err) {
      if (!isJobUnusable(err)) throw err;
      return skipped(run.logger, job, err);
    }
    if (!plan.complete) return await partlyPlanned(run, job, plan, false);
    return await workPlanned(run, job, plan, resumed);
  } catch (err) {
    run.stop.stop('fatal', err);
    return { summary: null };
  }
}

/** A job file that could not be loaded: skipped under its file's name, as a job whose input is unusable. */
export function brokenJobFile(logger: Logger, err: JobFileError): JobResult {
  return skipped(logger, { name: basename(err.file, extname(err.file)), operation: null }, err);
}

/** A job whose file or input cannot be used: logged as an ERROR naming the problem; the other jobs run. */
function skipped(logger: Logger, job: JobName, err: UsageError): JobResult {
  logger.error('job skipped: fix it and run again; the other jobs run', { job: job.name, code: err.code, error: err.message });
  return { summary: { ...unplannedJobSummary(job, 'skipped'), error: { code: err.code, message: err.message } }, unusable: err };
}

/**
 * Not reached: its tasks wait for the next run, under --refresh its refresh too (deferRefresh), unless interrupted (the
 * user waits for the exit; a large input takes seconds to read) or fatal (the dataset may have failed).
 */
async function notReached(run: OpenRun, job: Job): Promise<JobResult> {
  const waits = unplannedJobSummary(job, 'not_reached');
  const reason = run.stop.reason;
  if (!run.settings.refresh || reason === 'interrupted' || reason === 'fatal') return { summary: waits };
  // The run's stop cannot tell of the user's signal here: it was set first, for another reason, and keeps it.
  if (run.options.signal?.aborted) return { summary: waits, interrupted: true };
  try {
    const { plan, deferred } = await deferRefresh(job, run.store.ledger, run.runId, run.startedAt, run.options.signal);
    // Its tasks written so far are deferred like those of any read a signal cut short; its refresh is not.
    if (!plan.complete) return await partlyPlanned(run, job, plan, true);
    run.logger.info('job not reached: its refresh is deferred to the next run', { job: job.name, deferred });
    return { summary: { ...waits, deferred } };
  } catch (err) {
    // The next run reports an unusable input; the refresh of this job is then the user's to ask again.
    run.logger.warn('job not reached, and its refresh could not be deferred', { job: job.name, error: err instanceof Error ? err.message : String(err) });
    return { summary: waits };
  }
}

/**
 * A job whose input a signal stopped the run reading part way: the tasks written so far are deferred and no call is
 * made. The next run reads the whole input again; its upsert keeps one task per input and page.
 */
async function partlyPlanned(run: OpenRun, job: Job, plan: PlanCounts, interrupted: boolean): Promise<JobResult> {
  await run.store.ledger.deferPending(job.name, run.runId, new Date().toISOString());
  const deferred = (await run.store.ledger.countsByStatus(job.name, run.runId)).deferred;
  run.logger.warn('job stopped while reading its input: the next run reads it again', {
    job: job.name, tasks_read: plan.tasks, invalid: plan.invalid, deferred,
  });
  return { summary: { ...unplannedJobSummary(job, 'not_reached'), ...plannedFields(plan), deferred }, interrupted };
}

/** Decides what is due, works it, and closes the job's books. */
async function workPlanned(run: OpenRun, job: Job, plan: PlanCounts, resumed: string | null): Promise<JobResult> {
  const { settings, runId } = run;
  const freshSince = refreshedSince(job.refreshAfterDays, settings.refresh, run.startedAt, run.store.now?.(), resumed);
  const filter = { job: job.name, runId, freshSince, refresh: settings.refresh };
  const { shared, runnable, failedBefore, before } = await settleDue(job.operation, run.store.ledger, filter);
  run.logger.info('job planned', {
    job: job.name, tasks: plan.tasks, invalid: plan.invalid, invalid_known: plan.invalidKnown || undefined, duplicates: plan.duplicates,
    due: runnable, failed_before: failedBefore, shared: shared || undefined,
  });
  for (const bad of plan.invalidSamples) {
    run.logger.info('invalid input row', { job: job.name, file: bad.file, line: bad.line, field: bad.field, reason: bad.reason });
  }
  if (plan.extraFields.rows > 0) {
    run.logger.warn("input rows with values past the header's columns: read, those values left out", {
      job: job.name, file: job.input.csv, rows: plan.extraFields.rows, first_line: plan.extraFields.firstLine,
    });
  }
  await prepareCalls(run, job, runnable);
  // Only tasks an earlier run failed for good are failed yet: read only when there are some.
  const failedByCode = before.failed > 0 ? await run.store.ledger.failedByCode(job.name, runId) : {};
  const books: BooksBefore = { counts: before, failedByCode, settled: run.writer.settled };
  try {
    return await workAndBook(run, job, plan, filter, { worked: runnable, failedBefore });
  } catch (err) {
    // Its calls were paid for: a server gone before its books were read must not take the job out of the summary.
    if (describeError(err, run.store).code !== 'DB_CONNECTION_LOST') throw err;
    run.stop.stop('fatal', err);
    return countedJob(run, job, plan, { worked: runnable, failedBefore }, books);
  }
}

/** Works the due tasks, then closes the job's books from the ledger. */
async function workAndBook(run: OpenRun, job: Job, plan: PlanCounts, filter: RunnableFilter, due: Pick<JobSummary, 'worked' | 'failedBefore'>): Promise<JobResult> {
  const { stop, warning } = await workDue(run, job, filter, due.worked);
  const capped = settleJobStop(stop, run.stop, run.guard) ? { ...run.guard.stopDetail!, job: job.name } : null;
  let deferredAll = false;
  if (stop.reason) {
    // Failing (a full disk) stops the run: the pending tasks wait all the same, and the summary still says what was done.
    try {
      await run.store.ledger.deferPending(job.name, run.runId, new Date().toISOString());
      deferredAll = true;
    } catch (err) {
      run.stop.stop('fatal', err);
    }
  } else if (job.keepRawDays !== null) await pruneJobBodies(run.store, job.name, job.keepRawDays, run.logger);
  const { summary, counts } = await bookWorked(run, job, plan, { ...due, warnings: warning ? [warning] : [] }, deferredAll);
  logWorked(run.logger, summary, counts.deferred, stop);
  return capped ? { summary, capped } : { summary };
}

/** The ledger's counts of a job before its calls, and where the writer's count of committed outcomes stood then. */
type BooksBefore = { counts: Record<TaskStatus, number>; failedByCode: Record<string, number>; settled: SettledCounts };

/** JobSummary's counts when the database is lost mid-job; an outcome not committed left its task due: the next run does it. */
function countedJob(run: OpenRun, job: Job, plan: PlanCounts, due: Pick<JobSummary, 'worked' | 'failedBefore'>, books: BooksBefore): JobResult {
  const now = run.writer.settled;
  const moved = { done: now.done - books.settled.done, notFound: now.notFound - books.settled.notFound, failed: now.failed - books.settled.failed };
  const { counts } = books;
  const summary: JobSummary = {
    ...ranSummary(job, plan, due),
    done: counts.done + moved.done, notFound: counts.not_found + moved.notFound, failed: counts.failed + moved.failed,
    failedByCode: movedCodes(books.failedByCode, books.settled.failedByCode, now.failedByCode),
    deferred: Math.max(0, counts.pending + counts.deferred - moved.done - moved.notFound - moved.failed),
  };
  run.logger.warn("the job's books could not be read from the database: its figures are the ledger's before its calls and the outcomes this process committed since", { job: job.name });
  logWorked(run.logger, summary, summary.deferred, run.stop);
  return { summary, counted: true };
}

/** Failures by code: those before the job's calls, plus the writer's count now less its count then. */
function movedCodes(before: Record<string, number>, then: Record<string, number>, now: Record<string, number>): Record<string, number> {
  const codes: Record<string, number> = { ...before };
  for (const [code, n] of Object.entries(now)) {
    const added = n - (then[code] ?? 0);
    if (added > 0) codes[code] = (codes[code] ?? 0) + added;
  }
  return codes;
}

/** Sets the job's credit limits, rate and breaker thresholds; before the run's first call, reads the balance. */
async function prepareCalls(run: OpenRun, job: Job, runnable: number): Promise<void> {
  const { guard, settings, tally } = run;
  guard.setLimits({ reserve: job.credits.reserve, maxPerRun: job.credits.maxPerRun ?? null });
  if (runnable > 0) await checkBalance(run, job);
  run.gate.setRequestsPerMinute(job.rate.requestsPerMinute);
  // Recorded with the run's end: the report draws each job's pace against the rate it really had.
  tally.jobRates[job.name] = job.rate.requestsPerMinute;
  run.outage.setThreshold(Math.max(settings.outageMinTasks, job.rate.concurrency));
  run.unusable.setThreshold(job.retry.maxUnusableAnswers ?? Math.max(settings.unusableMinAnswers, job.rate.concurrency));
}

/** Works the due tasks (progress line, failure log, 404 watch); once it returns, every answer is committed. */
async function workDue(run: OpenRun, job: Job, filter: RunnableFilter, runnable: number) {
  const { guard, tally } = run;
  const progress: JobProgress = { runnable, done: 0, notFound: 0, failed: 0, errors: 0 };
  const startedAtMs = performance.now();
  const snapshot = () => ({ ...progress, job: job.name, creditsLeft: guard.balance, startedAtMs });
  const reporter = new ProgressReporter(run.options.progressStream ?? process.stderr, run.logger, snapshot, run.options.progressLogMs);
  reporter.start();
  const failures = new FailureLog(reporter.above(), job.name, run.options.failureLog?.detailedLines);
  sayWaits(run, reporter.above(), job.name);
  const jobStop = jobStopOf(run.stop);
  const { notFoundOnlyMinAnswers, maxThrottleWaitMs, maxThrottledAttemptsPerTask } = run.settings;
  const notFoundOnly = new NotFoundOnlyWatch(job.operation, notFoundOnlyMinAnswers, [run.options.api.token]);
  try {
    await workJob(job, run.store.dueTasks(filter, jobStop.stop.signal), {
      client: run.client, guard, gate: run.gate, stop: jobStop.stop, writer: run.writer,
      retry: job.retry, maxThrottleWaitMs, maxThrottledAttemptsPerTask,
      holdsLock: recentLockCheck(() => run.store.hold.held()),
      onAttemptError: () => {
        progress.errors += 1;
        tally.attemptErrors += 1;
      },
      onTaskEnded: (task, outcome) => {
        run.outage.record(outcome);
        run.unusable.record(job.operation, outcome);
        if (outcome.kind === 'done') run.drift.add(job.operation, outcome.drift);
        notFoundOnly.record(outcome);
        if (outcome.kind === 'failed') failures.record({ ...outcome, inputKey: task.inputKey, page: task.page });
      },
    }, progress);
  } finally {
    run.gate.onWait = null;
    guard.onWait = null;
    reporter.stop();
    jobStop.release();
    failures.flush();
    tally.creditsAtStart ??= guard.balance === null ? null : guard.balance + guard.spent;
    await run.writer.drain();
  }
  return { stop: jobStop.stop, warning: notFoundOnly.warning(job.name) };
}

/**
 * Long waits said, or the run would sit silent for minutes: a 429's pause, up to the throttle cap (on PostgreSQL also
 * one another worker or an earlier run met), and credits that calls in flight hold (PostgreSQL's shared budget).
 */
function sayWaits({ gate, guard }: OpenRun, logger: Logger, job: string): void {
  guard.onWait = (w) => {
    const held = w.reason === 'reserve' ? 'the credits left above the reserve' : "what is left of the run's credits.maxPerRun";
    logger.warn(`waiting: calls in flight (every worker's) hold ${held}`, { job, reserved: w.reserved, balance: w.balance });
  };
  gate.onWait = (w) => {
    logger.warn(`waiting: the API asked to slow down (429)${w.shared ? ', and every worker holds back' : ''}`, {
      job, wait_s: Math.round(w.waitMs / 1000), until: w.until, asked_at: w.askedAt,
    });
  };
}

/** The job's summary from the ledger once worked (its drift saved for `status`); counts too, as the log tells deferred from pending. */
async function bookWorked(run: OpenRun, job: Job, plan: PlanCounts, due: Pick<JobSummary, 'worked' | 'failedBefore' | 'warnings'>, deferredAll = false) {
  const counts = await run.store.ledger.countsByStatus(job.name, run.runId);
  const failedByCode = await run.store.ledger.failedByCode(job.name, run.runId);
  await run.drift.save(job.operation);
  const anomalies = await run.store.anomalyCounts(run.runId, job.name);
  const own = await run.store.ledger.ownAnswers(job.name, run.runId);
  // Once this run deferred what it left, a task still pending is another live worker's (PostgreSQL): not deferred.
  const deferred = counts.deferred + (deferredAll ? 0 : counts.pending);
  const summary: JobSummary = {
    ...ranSummary(job, plan, due),
    done: counts.done, notFound: counts.not_found, failed: counts.failed, failedByCode, deferred,
    setAside: anomalies.no_identity, otherPost: anomalies.other_post, warnings: due.warnings, ...(own && { thisWorker: own }),
  };
  return { summary, counts };
}

function logWorked(logger: Logger, w: JobSummary, deferred: number, stop: RunStop): void {
  const fields = {
    job: w.name, done: w.done, not_found: w.notFound, failed: w.failed, failed_codes: w.failed > 0 ? formatCodeCounts(w.failedByCode) : undefined,
    deferred, set_aside: w.setAside || undefined, other_post: w.otherPost || undefined,
  };
  // A job cut short is not "finished": its deferred tasks are the run's stop, told next.
  if (stop.reason) logger.warn('job stopped before its end', { ...fields, reason: stop.reason });
  else logger.info('job finished', fields);
  for (const warning of w.warnings) {
    logger.warn(warning.message, { job: w.name, answers: warning.answers, status: warning.status, body_message: warning.bodyMessage });
  }
}

/**
 * Before a job's calls while no balance is known: the free credit check, once before the run's first call; where the
 * service offers none, the last balance stored (what `plan` shows) against the reserve, or each run would pay one call below it.
 */
async function checkBalance(run: OpenRun, job: Job): Promise<void> {
  if (run.guard.balance !== null) return;
  const last = await run.store.calls.lastCounters();
  if (!run.tally.balanceAsked) {
    run.tally.balanceAsked = true;
    await seedFromBalance(run, last?.creditsUsed ?? null);
  }
  if (last === undefined || run.stop.signal.aborted) return;
  run.guard.stopOnLastKnown(job.operation, last);
}

/**
 * Seeds the guard from the free credit check before the first paid call: that call need not go alone, its cost is exact,
 * and a balance that cannot pay makes none. Logs credits used since the last stored answer (a kill, or use elsewhere).
 */
async function seedFromBalance(run: OpenRun, lastCreditsUsed: number | null): Promise<void> {
  const counters = await run.client.balance(run.stop.signal);
  // Cut short by the run's stop (a signal), the check says nothing of the API: the stop's own line tells it.
  if (run.stop.signal.aborted) return;
  if (counters === null || !run.guard.seed(counters)) {
    run.logger.info('balance not offered by the API (GET /v1/api/auth): learned from the first answers instead');
    return;
  }
  const since = lastCreditsUsed === null ? undefined : roundCredits(counters.credits_used - lastCreditsUsed);
  run.logger.info('balance read before the first call', {
    balance: roundCredits(reportedBalance(counters)), total: counters.total_credits,
    used_since_last_answer: since !== undefined && since > 0 ? since : undefined,
  });
}

/**
 * keepRawDays: once the job ran to its end, raw bodies a newer answer superseded over that many days ago are dropped
 * (store/raw-prune.ts says what is always kept). A failure costs disk, never data: logged, and the run goes on.
 */
async function pruneJobBodies(store: Pick<RunStore, 'pruneJobBodies'>, job: string, keepDays: number, logger: Logger): Promise<void> {
  try {
    const report = await store.pruneJobBodies(job, keepDays);
    if (report.dropped > 0) logger.info('dropped superseded raw bodies', { job, bodies: report.dropped, bytes: report.droppedBytes, keep_days: keepDays });
  } catch (err) {
    logger.warn('could not drop superseded raw bodies', { job, error: err instanceof Error ? err.message : String(err) });
  }
}

/** What the read of the job's input wrote, as the summary names it. */
function plannedFields(plan: PlanCounts): Pick<JobSummary, 'planned' | 'invalidRows' | 'invalidKnown' | 'duplicates' | 'invalidSamples'> {
  return { planned: plan.tasks, invalidRows: plan.invalid, invalidKnown: plan.invalidKnown, duplicates: plan.duplicates, invalidSamples: plan.invalidSamples };
}

/** A job that ran, before its outcomes: what its read wrote, the tasks worked, those failed for good earlier, the rest fresh. */
function ranSummary(job: Job, plan: PlanCounts, due: Pick<JobSummary, 'worked' | 'failedBefore'>): JobSummary {
  const fresh = plan.tasks - due.worked - due.failedBefore;
  return { ...unplannedJobSummary(job, 'ran'), ...plannedFields(plan), fresh, failedBefore: due.failedBefore, worked: due.worked };
}

/** The summary of a job that read and worked nothing: every count 0 (its keys in the order `--json` prints them). */
function unplannedJobSummary(job: JobName, status: JobStatus): JobSummary {
  return {
    name: job.name, operation: job.operation, status, error: null,
    planned: 0, invalidRows: 0, invalidKnown: 0, duplicates: 0, fresh: 0, failedBefore: 0, worked: 0,
    done: 0, notFound: 0, failed: 0, failedByCode: {}, deferred: 0, invalidSamples: [], setAside: 0, otherPost: 0, warnings: [],
  };
}
