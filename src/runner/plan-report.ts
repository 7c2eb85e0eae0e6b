/** `netingest plan`: each job's report, no API call, nothing written; an unusable job set aside as a run skips it. */
import type { Job } from '../jobs/schema.ts';
import { planTasks } from '../jobs/plan-tasks.ts';
import { isJobUnusable } from '../jobs/job-error.ts';
import type { UsageError } from '../errors.ts';
import { PLAN_LEDGER_DEFAULTS, type PlannedTask, type PlanRule } from '../store/plan-ledger.ts';
import { openStore } from '../store/open-store.ts';
import { CREDIT_METER_DEFAULTS, roundCredits } from '../credits/credit-meter.ts';
import { plural } from '../plural.ts';
import { terminalValue } from '../text-width.ts';
import { countExtraFields, PLAN_DEFAULTS, refreshedSince } from './plan-into-ledger.ts';

/** What `netingest plan` reports for a job, without calling the API or writing anything. */
export interface PlanReport {
  job: string;
  operation: string;
  tasks: number;
  invalidRows: number;
  duplicates: number;
  /** Tasks done or not found within refreshAfterDays, by this job or another asking the same: they cost nothing. */
  fresh: number;
  /** Failed for good earlier: not called again without --refresh, not fresh (no data). */
  failedBefore: number;
  /** Calls the next run makes at most (short pages end a list early); tasks = fresh + failedBefore + calls. */
  calls: number;
  /** The cost learned from earlier calls, or the most the run assumes per call before its answers show it. */
  costPerCall: number;
  costLearned: boolean;
  /** calls x the learned cost; null while no call has shown the operation's cost (see estimatedCreditsRange). */
  estimatedCredits: number | null;
  /** With no cost learned: the range the run assumes, from nothing (404s are free) to calls x costPerCall. */
  estimatedCreditsRange: { low: number; high: number } | null;
  lastKnownBalance: number | null;
  /** The balance the service's free credit check gave now (GET /v1/api/auth); null when not asked or not offered. */
  liveBalance: number | null;
  invalidSamples: Array<{ file: string; line: number; field: string | null; reason: string }>;
  /** Rows read although they held values past the header's columns (left out), and the first one's line. */
  extraFields: { rows: number; firstLine: number | null };
}

export interface PlanJobsOptions {
  /** The database a run would use (a SQLite file or a postgres:// URL); read if it exists, never created. */
  db: string;
  /** As if the run had --refresh. */
  refresh: boolean;
  /** The balance the service's free credit check gave now, put in every report; null when not asked. */
  liveBalance: number | null;
  /** Called with each report as soon as it is made (the command prints it then). */
  onReport?: (report: PlanReport, job: Job) => void;
  /** Told, once, why the dataset holds nothing yet (a PostgreSQL database with no netingest schema). */
  onNothingRan?: (why: string) => void;
}

/** Plans every job: the reports, the jobs reported (in order) and why the others could not be planned; any other error stops it. */
export async function planJobs(jobs: readonly Job[], options: PlanJobsOptions) {
  const found = { reports: [] as PlanReport[], planned: [] as Job[], unusable: [] as UsageError[] };
  let told = false;
  const onNothingRan = (why: string) => {
    if (!told) options.onNothingRan?.(why);
    told = true;
  };
  for (const job of jobs) {
    let report: PlanReport;
    try {
      report = await planReport(job, options.db, options.refresh, onNothingRan);
    } catch (err) {
      if (!isJobUnusable(err)) throw err;
      found.unusable.push(err);
      continue;
    }
    report.liveBalance = options.liveBalance;
    found.reports.push(report);
    found.planned.push(job);
    options.onReport?.(report, job);
  }
  return found;
}

/** What a run would do and cost for `job`, from its input and the ledger; `onNothingRan`: why the dataset is empty. */
export async function planReport(job: Job, db: string, refresh = false, onNothingRan?: (why: string) => void): Promise<PlanReport> {
  const store = await openStore(db);
  return store.withPlanLedger(async (ledger) => {
    if (ledger.nothingRan !== null) onNothingRan?.(ledger.nothingRan);
    // The run's due rule, as a run starting now applies it to each task. The run takes another job's fresh answer
    // to the same lookup (adoptSharedAnswers); --refresh only answers from the run itself, which plan cannot know.
    const rule: PlanRule = {
      job: job.name, operation: job.operation,
      freshSince: refreshedSince(job.refreshAfterDays, refresh, new Date().toISOString(), await ledger.now?.(), refresh ? await ledger.deferredSince(job.name) : null),
      refresh, others: refresh ? [] : await ledger.otherJobs(job.operation, job.name),
    };
    // Every count 0 before the input is read, the cost the one assumed until a call shows it.
    const report: PlanReport = {
      job: job.name, operation: job.operation, tasks: 0, invalidRows: 0, duplicates: 0, fresh: 0, failedBefore: 0, calls: 0,
      costPerCall: CREDIT_METER_DEFAULTS.defaultCostPerCall, costLearned: false, estimatedCredits: null, estimatedCreditsRange: null,
      lastKnownBalance: await ledger.lastKnownBalance(), liveBalance: null, invalidSamples: [], extraFields: { rows: 0, firstLine: null },
    };
    let batch: PlannedTask[] = [];
    const settle = async () => {
      for (const state of await ledger.taskStates(rule, batch)) report[state] += 1;
      batch = [];
    };
    for await (const item of planTasks(job)) {
      if (item.kind === 'duplicate') report.duplicates += 1;
      else if (item.kind === 'invalid') {
        report.invalidRows += 1;
        const sample = { file: job.input.csv, line: item.line, field: item.field ?? null, reason: item.reason };
        if (report.invalidSamples.length < PLAN_DEFAULTS.invalidSamples) report.invalidSamples.push(sample);
      } else {
        if (item.extraFields !== undefined) countExtraFields(report.extraFields, item.line);
        report.tasks += 1;
        batch.push({ inputKey: item.inputKey, page: item.page, requestJson: JSON.stringify(item.request) });
        if (batch.length >= PLAN_LEDGER_DEFAULTS.tasksPerBatch) await settle();
      }
    }
    await settle();
    return withCost(report, await ledger.learnedCost(job.operation));
  });
}

/** The estimate: calls x the learned cost, or a range up to the assumed cost while none is learned. */
function withCost(report: PlanReport, learned: number | null): PlanReport {
  const most = roundCredits(report.calls * (learned ?? report.costPerCall));
  if (learned === null) return { ...report, estimatedCreditsRange: { low: 0, high: most } };
  return { ...report, costPerCall: learned, costLearned: true, estimatedCredits: most };
}

export function formatPlanReport(r: PlanReport, reserve: number): string {
  const most = r.estimatedCredits ?? r.estimatedCreditsRange?.high ?? 0;
  const enough = shortfallNote(r, reserve, most);
  const lines = [
    `${r.job} (${r.operation})`,
    `  input: ${plural(r.tasks, 'task')}, ${plural(r.invalidRows, 'invalid row')}, ${plural(r.duplicates, 'duplicate')}`,
    `  ledger: ${plural(r.fresh, 'task')} still fresh${r.failedBefore > 0 ? `, ${r.failedBefore} failed earlier and not retried (use --refresh)` : ''}; at most ${plural(r.calls, 'call')} to make`,
    creditLine(r, most),
    r.liveBalance !== null
      ? `  balance: ${r.liveBalance} (asked the service now)${enough}`
      : `  last known balance: ${r.lastKnownBalance ?? 'unknown (no call yet)'}${enough}`,
  ];
  if (r.extraFields.rows > 0) {
    lines.push(`  warning: ${plural(r.extraFields.rows, 'row')} with values past the header's columns (first on line ${r.extraFields.firstLine}): read, those values left out`);
  }
  // The reason may quote the row's cells: their controls are blanked.
  for (const bad of r.invalidSamples) lines.push(`  invalid: ${terminalValue(`${bad.file}:${bad.line}${bad.field ? ` (${bad.field})` : ''}: ${bad.reason}`)}`);
  const unshown = r.invalidRows - r.invalidSamples.length;
  if (unshown > 0) lines.push(`  ... ${plural(unshown, 'more invalid row')} not shown: \`--invalid-out FILE\` writes them all, with their columns and why`);
  return lines.join('\n') + '\n';
}

function creditLine(r: PlanReport, most: number): string {
  return r.costLearned
    ? `  estimated credits: ${r.estimatedCredits} (${r.costPerCall} per call, learned from earlier calls)`
    : `  estimated credits: unknown: no call has shown this operation's cost yet; the run assumes from 0 to ${r.costPerCall} per call ` +
        `until its first answers show it, so from 0 to ${most} for ${plural(r.calls, 'call')}`;
}

/** Said after the balance when the calls to make would take it below the reserve. */
function shortfallNote(r: PlanReport, reserve: number, most: number): string {
  const balance = r.liveBalance ?? r.lastKnownBalance;
  if (balance === null || balance - most >= reserve) return '';
  return r.costLearned
    ? `  — not enough to finish above the reserve of ${reserve}: the run will stop and defer the rest`
    : `  — maybe not enough to finish above the reserve of ${reserve}: the run stops if it runs short and defers the rest`;
}
