import type { Job } from '../jobs/schema.ts';
import { planTasks } from '../jobs/plan-tasks.ts';
import { invalidRowKey, type InvalidInputRow, type NewTask, type RunnableFilter } from '../store/ledger.ts';
import type { RunLedger } from '../store/run-store.ts';

export const PLAN_DEFAULTS = {
  /** Rows written per transaction while the input streams into the ledger. */
  batchRows: 5000,
  /** New invalid rows kept in memory for the run summary (all of them are in `invalid_inputs`). */
  invalidSamples: 20,
} as const;

/** Due again a little before refreshAfterDays: a run's answers arrive after it starts; else a nightly run refreshes a night late. */
export const FRESHNESS_DEFAULTS = {
  /** Share of refreshAfterDays by which an answer may be younger and still be due (covers a long run). */
  toleranceFraction: 0.1,
  /** The tolerance at most, whatever refreshAfterDays (12 hours). */
  maxToleranceMs: 12 * 3_600_000,
} as const;

/** What reading a job's input found: of a read cut short, what the batches written until then hold. */
export interface PlanCounts {
  tasks: number;
  invalid: number;
  /** Of `invalid`, the rows an earlier run recorded already (same field, value and reason): counted, not listed. */
  invalidKnown: number;
  duplicates: number;
  /** The first new invalid rows (not recorded by an earlier run). */
  invalidSamples: InvalidInputRow[];
  /** False when a stop ended the read before the end of the input. */
  complete: boolean;
  /** Rows read although they held values past the header's columns (left out), and the first one's line. */
  extraFields: { rows: number; firstLine: number | null };
}

/**
 * Streams a job's input into the ledger in batches, a transaction each, before any call; unusable rows go to
 * `invalid_inputs`, and those not seen again are dropped at the end. An aborted `stop` ends the read at the next row.
 */
export async function planIntoLedger(job: Job, ledger: RunLedger, runId: number, stop?: AbortSignal): Promise<PlanCounts> {
  const counts: PlanCounts = {
    tasks: 0, invalid: 0, invalidKnown: 0, duplicates: 0, invalidSamples: [], complete: false, extraFields: { rows: 0, firstLine: null },
  };
  let tasks: NewTask[] = [];
  let invalid: InvalidInputRow[] = [];
  let duplicates = 0;
  // The rows earlier runs reported, read before this run records its own (each matches one row of this read).
  const reported = await ledger.recordedInvalid(job.name, job.input.csv);
  // Counted as written, so that the counts of a read cut short are those of the ledger.
  const flush = async () => {
    await ledger.insertPlanned(tasks, invalid, runId, new Date().toISOString());
    counts.tasks += tasks.length;
    counts.invalid += invalid.length;
    counts.duplicates += duplicates;
    for (const row of invalid) {
      const key = invalidRowKey(row);
      const left = reported.get(key) ?? 0;
      if (left > 0) {
        reported.set(key, left - 1);
        counts.invalidKnown += 1;
      } else if (counts.invalidSamples.length < PLAN_DEFAULTS.invalidSamples) {
        counts.invalidSamples.push(row);
      }
    }
    tasks = [];
    invalid = [];
    duplicates = 0;
  };
  for await (const item of planTasks(job)) {
    // Checked every row (a stretch of duplicates flushes nothing). The gathered batch is dropped (the next run reads it
    // again), and no stale invalid row either: the lines not read may still be invalid, their records still true.
    if (stop?.aborted) return counts;
    if (item.kind === 'task') {
      if (item.extraFields !== undefined) countExtraFields(counts.extraFields, item.line);
      const { inputKey, page, line: inputLine } = item;
      tasks.push({ job: job.name, operation: job.operation, inputKey, page, requestJson: JSON.stringify(item.request), inputLine });
    } else if (item.kind === 'invalid') {
      const value = item.value === undefined || item.value === null ? null : String(item.value).slice(0, 200);
      invalid.push({ job: job.name, file: job.input.csv, line: item.line, field: item.field ?? null, value, reason: item.reason });
    } else {
      duplicates += 1;
    }
    if (tasks.length + invalid.length >= PLAN_DEFAULTS.batchRows) await flush();
  }
  await flush();
  await ledger.dropStaleInvalid(job.name, runId);
  counts.complete = true;
  return counts;
}

export function countExtraFields(extra: PlanCounts['extraFields'], line: number): void {
  extra.rows += 1;
  extra.firstLine ??= line;
}

/** The ISO time before which a job's settled answers are due again, for a run starting at `nowMs`. */
export function freshSince(refreshAfterDays: number, nowMs: number = Date.now()): string {
  const ageMs = refreshAfterDays * 86_400_000;
  const toleranceMs = Math.min(ageMs * FRESHNESS_DEFAULTS.toleranceFraction, FRESHNESS_DEFAULTS.maxToleranceMs);
  return new Date(nowMs - ageMs + toleranceMs).toISOString();
}

/**
 * The cut-off of a run's due rule: freshSince() at the store's clock (by default this host's). Under --refresh, the
 * run's start, so what it settled stays settled; or, if an earlier run within refreshAfterDays deferred this job's
 * tasks or was a killed --refresh (`deferredSince`), that run's start: a --refresh repeated after a stop, Ctrl-C or
 * kill resumes it without paying twice.
 */
export function refreshedSince(refreshAfterDays: number, refresh: boolean, startedAt: string, now: string | undefined, deferredSince: string | null): string {
  const fresh = freshSince(refreshAfterDays, now === undefined ? Date.now() : Date.parse(now));
  if (!refresh) return fresh;
  return deferredSince !== null && deferredSince < startedAt && deferredSince >= fresh ? deferredSince : startedAt;
}

/**
 * Before the job's first call: a lookup another job answered (fresh, or in this run under --refresh) is taken, not paid
 * again; then the due tasks are reopened. `before`: the job's tasks by status as the calls find them.
 */
export async function settleDue(operation: string, ledger: RunLedger, filter: RunnableFilter) {
  const shared = await ledger.adoptSharedAnswers(filter, await ledger.otherJobs(operation, filter.job), new Date().toISOString());
  await ledger.reopenDue(filter, new Date().toISOString());
  // Counted over the night's tasks, not this run's stamp alone: a worker planning meanwhile re-stamps them all.
  const before = await ledger.countsByStatus(filter.job, filter.runId);
  // Once the due ones are reopened, the tasks still failed are those an earlier run failed for good.
  return { shared, runnable: before.pending + before.deferred, failedBefore: before.failed, before };
}

/**
 * Under --refresh, a job the run never reached has its settled tasks reopened and deferred, so the next run refreshes
 * them with or without --refresh (else a second --refresh run pays again for all this one did). An aborted `stop` cuts
 * the read and reopens nothing: a refresh deferred for only the rows read could not be told from the rest.
 */
export async function deferRefresh(job: Job, ledger: RunLedger, runId: number, refreshSince: string, stop?: AbortSignal) {
  const plan = await planIntoLedger(job, ledger, runId, stop);
  if (!plan.complete) return { plan, deferred: 0 };
  await settleDue(job.operation, ledger, { job: job.name, runId, freshSince: refreshSince, refresh: true });
  return { plan, deferred: await ledger.deferPending(job.name, runId, new Date().toISOString()) };
}
