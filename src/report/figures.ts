/** The figures every chart and table of the page shows and `report --json` prints. Pure: no database, no HTML. */
import type { ReportData, TaskAge } from '../store/readers/report-figures.ts';
import type { FullStatusReport } from '../runner/status-report.ts';
import { headlineOf } from './headline.ts';
import { CREDIT_METER_DEFAULTS, roundCredits } from '../credits/credit-meter.ts';
import { OPERATION_SPECS } from '../operations/index.ts';
import { REDACTED } from '../api/redact.ts';

/** Options of buildFigures(): REPORT_DEFAULTS notes each figure; `now` is the clock. */
export type FigureOptions = Readonly<Record<'days' | 'forecastDays' | 'configuredPerMinute', number>> & { now: Date };

/** How often one member of one operation's answers drifted, run by run (share: count / seen). */
export interface DriftSeries {
  operation: string; path: string; kind: string;
  byRun: Array<{ runId: number; count: number; seen: number | null; percent: number }>;
}

const MS_PER_MINUTE = 60_000;
export const MS_PER_DAY = 86_400_000;

/** What the page draws and `report --json` prints (buildFigures' object, its members noted there). */
export type ReportFigures = ReturnType<typeof buildFigures>;

/** The figures of `data` (read in one snapshot) with the live balance `status` gave. */
export function buildFigures(data: ReportData, status: FullStatusReport, options: FigureOptions) {
  // A run with no paid answer stores no balance: it left the one before it as it was.
  let balance: number | null = null;
  // A run still marked running is measured (report-figures' measuredRuns); `unfinished` once its process is gone.
  const gone = new Set(status.unfinishedRuns.map((r) => r.id));
  // A run writes its drift as each job ends: one with no end written says nothing yet of drift it did not store.
  const openRuns = new Set(data.runs.filter((r) => r.status === 'running').map((r) => r.id));
  const nights = data.runs.map((r) => ({
    runId: r.id, startedAt: r.startedAt, endedAt: r.endedAt, status: r.status, unfinished: gone.has(r.id), exitCode: r.exitCode,
    creditsSpent: r.creditsSpent, balanceAfter: (balance = r.creditsAtEnd ?? balance),
    done: r.tasksDone, notFound: r.tasksNotFound, failed: r.tasksFailed, deferred: r.tasksDeferred, invalidRows: r.invalidRows, calls: r.calls,
  }));
  const { defaultCostPerCall } = CREDIT_METER_DEFAULTS;
  const costPerCall = Object.fromEntries(
    Object.entries(data.costPerCall).map(([operation, learned]) => [operation, { credits: learned ?? defaultCostPerCall, learned: learned !== null }]),
  );
  // Each operation's refresh age when its job does not say: the forecast's rule.
  const refreshAfterDays = Object.fromEntries(Object.entries(OPERATION_SPECS).map(([name, spec]) => [name, spec.refreshAfterDays]));
  return {
    generatedAt: options.now.toISOString(),
    days: options.days,
    headline: headlineOf(status, data.lastNight),
    /** The same object `netingest status --json` prints. */
    status,
    nights,
    /** Credits per run and job: the run's spend shared out to the jobs whose calls paid it (creditsByJob). */
    creditsByJob: creditsByJob(data),
    /** Calls per run and job by how they were answered (`job` null: calls no task owns). */
    callsByJob: data.calls.map((c) => ({ runId: c.runId, job: c.job, calls: c.calls, answered: c.answered, notFound: c.notFound, failedCalls: c.failedCalls })),
    pace: paceOf(data, options.configuredPerMinute),
    drift: driftSeries(data.drift, data.answers.filter((a) => !openRuns.has(a.runId))),
    forecast: {
      days: forecastDue(data.taskAges, { ...options, refreshAfterDays, costPerCall: (op) => costPerCall[op]?.credits ?? defaultCostPerCall }),
      costPerCall,
    },
    failures: data.failures.map((f) => ({ ...f, sample: f.sample === null ? null : redactSample(f.sample) })),
    invalidRows: { listed: data.invalidRows.map((r) => ({ ...r, reason: redactSample(r.reason) })), total: data.invalidTotal },
    anomalies: { byKind: data.anomalyKinds, listed: data.anomalies.map((a) => ({ ...a, reason: redactSample(a.reason) })) },
  };
}

/**
 * Each job's pace per run: calls a minute from its first call sent to its last (send times: answers arrive bunched
 * by latency, sends are what the rate gate spaced), the rate recorded (else `--rate`), latency.
 */
function paceOf(data: ReportData, assumedPerMinute: number) {
  const rates = new Map(data.runs.map((r) => [r.id, r.jobRates === null ? {} : (JSON.parse(r.jobRates) as Record<string, number>)]));
  // Calls no task owns (the free balance check) have no job and no pace of their own.
  return data.calls.flatMap((c) => {
    if (c.job === null) return [];
    const recorded = rates.get(c.runId)?.[c.job];
    const minutes = (c.sentSpanMs ?? 0) / MS_PER_MINUTE;
    return [{
      runId: c.runId, job: c.job, calls: c.calls, minutes: round2(minutes),
      // One call, or all sent in the same instant: no pace to speak of.
      callsPerMinute: minutes > 0 && c.timedCalls > 1 ? round2((c.timedCalls - 1) / minutes) : null,
      configuredPerMinute: recorded ?? assumedPerMinute, configuredFrom: recorded === undefined ? ('assumed' as const) : ('recorded' as const),
      latencyAvgMs: c.latencyAvgMs === null ? null : Math.round(c.latencyAvgMs),
      latencyMaxMs: c.latencyMaxMs === null ? null : Math.round(c.latencyMaxMs),
    }];
  });
}

/**
 * Each drifted member's share per run in which its operation was answered (`answers`): 0% (`seen` null: not counted)
 * where it did not drift, so every point the chart draws is in the table; a run without an answer is left out (a gap).
 */
function driftSeries(rows: ReportData['drift'], answers: ReportData['answers']): DriftSeries[] {
  const series = new Map<string, DriftSeries>();
  for (const r of rows) {
    const key = JSON.stringify([r.operation, r.path, r.kind]);
    let s = series.get(key);
    if (!s) series.set(key, (s = { operation: r.operation, path: r.path, kind: r.kind, byRun: [] }));
    s.byRun.push({ runId: r.runId, count: r.count, seen: r.seen, percent: r.seen > 0 ? round2((100 * r.count) / r.seen) : 0 });
  }
  for (const s of series.values()) {
    const drifted = new Set(s.byRun.map((r) => r.runId));
    const quiet = answers.filter((a) => a.operation === s.operation && a.answers > 0 && !drifted.has(a.runId));
    s.byRun.push(...quiet.map((a) => ({ runId: a.runId, count: 0, seen: null, percent: 0 })));
    s.byRun.sort((a, b) => a.runId - b.runId);
  }
  // The members that drifted most first: the chart draws the first few, the table all.
  return [...series.values()].sort((a, b) => total(b) - total(a) || (a.operation + a.path + a.kind < b.operation + b.path + b.kind ? -1 : 1));
}

const total = (s: DriftSeries) => s.byRun.reduce((n, r) => n + r.count, 0);
const round2 = (n: number) => Math.round(n * 100) / 100;

// What the next runs will cost: tasks by the day the plan's rule makes them due, at the cost per call learned.
type ForecastOptions = Pick<FigureOptions, 'forecastDays' | 'now'> & {
  /** Each operation's refresh age (days) when its job does not say. */
  refreshAfterDays: Readonly<Record<string, number>>;
  costPerCall: (operation: string) => number;
};

/**
 * Tasks of each job coming due each day (UTC), by day then job, days with none left out; day 0 holds those due already.
 * A task comes due again each refresh age after it is taken, at most once a day (a nightly run takes it once); a
 * not-found one is called again but costs nothing (404s are free).
 */
export function forecastDue(ages: readonly TaskAge[], options: ForecastOptions) {
  const today = Date.UTC(options.now.getUTCFullYear(), options.now.getUTCMonth(), options.now.getUTCDate());
  const byKey = new Map<string, { day: string; job: string; tasks: number; credits: number }>();
  for (const age of ages) {
    const due = dueAt(age, options);
    if (due === null) continue;
    const cost = age.status === 'not_found' ? 0 : options.costPerCall(age.operation);
    for (const index of dueDays(due, (options.refreshAfterDays[age.operation] ?? 0) * MS_PER_DAY, today, options)) {
      const day = new Date(today + index * MS_PER_DAY).toISOString().slice(0, 10);
      const key = `${day}\u0000${age.job}`;
      const entry = byKey.get(key) ?? { day, job: age.job, tasks: 0, credits: 0 };
      entry.tasks += age.n;
      entry.credits = roundCredits(entry.credits + age.n * cost);
      byKey.set(key, entry);
    }
  }
  return [...byKey.values()].sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : a.job < b.job ? -1 : a.job > b.job ? 1 : 0));
}

/**
 * The window's days (0: today) on which a task first due at `due` comes due: then every `refreshMs` after it is taken
 * (one due already is taken now), each day once. Jumps straight to the next day's first due time, so a refresh age of
 * minutes costs no more than one of days.
 */
function dueDays(due: number, refreshMs: number, today: number, options: ForecastOptions): number[] {
  const end = today + options.forecastDays * MS_PER_DAY;
  const days: number[] = [];
  for (let at = Math.max(due, options.now.getTime()); at < end; ) {
    const index = Math.floor((at - today) / MS_PER_DAY);
    days.push(index);
    if (!(refreshMs > 0)) break;
    const nextDay = today + (index + 1) * MS_PER_DAY;
    at += Math.max(1, Math.ceil((nextDay - at) / refreshMs)) * refreshMs;
  }
  return days;
}

/** When a task is first due (ms), or null when no run takes it again without --refresh. */
function dueAt(age: TaskAge, options: ForecastOptions): number | null {
  const now = options.now.getTime();
  if (age.status === 'pending' || age.status === 'deferred') return now;
  if (age.status === 'failed') return age.retryable === 1 ? now : null;
  if (age.completedHour === null) return now;
  const refreshDays = options.refreshAfterDays[age.operation] ?? 0;
  return Date.parse(`${age.completedHour}:00:00Z`) + refreshDays * MS_PER_DAY;
}

/** Credits one job spent in one run (`job` null: the run's spend that no job's call shows, see creditsByJob). */
export interface JobCredits { runId: number; job: string | null; paidAnswers: number; credits: number }

/** Below this, a difference is float noise of fractional costs. */
const NOISE = 1e-9;

/**
 * Per run with a spend, its credits per job (name order). A paid call is its task's job's (a lookup two jobs share is
 * paid once, by one), costing its counter's step over the run's previous one; the run's lowest call, which no counter
 * shows, takes the rest of `runs.credits_spent`, so the jobs add up to the run's. Shares are whole units (apportion).
 */
export function creditsByJob(data: Pick<ReportData, 'runs' | 'creditSteps' | 'calls'>): JobCredits[] {
  const stepsByRun = byRun(data.creditSteps);
  const answeredByRun = byRun(data.calls);
  return data.runs.flatMap((run) => (run.creditsSpent === null ? [] : ofRun(run.id, run.creditsSpent, stepsByRun.get(run.id) ?? [], answeredByRun.get(run.id) ?? [])));
}

function ofRun(runId: number, spent: number, steps: ReportData['creditSteps'], calls: ReportData['calls']): JobCredits[] {
  const stepped = steps.reduce((n, s) => n + (s.steps ?? 0), 0);
  // On a shared account another worker's calls fall between this run's counters: its steps then hold more than
  // it spent, and are scaled down to the run's figure.
  const scale = stepped > spent && stepped > 0 ? spent / stepped : 1;
  const rest = Math.max(0, spent - stepped * scale);
  const byJob = new Map<string | null, JobCredits>();
  for (const s of steps) byJob.set(s.job, { runId, job: s.job, paidAnswers: s.paid, credits: (s.steps ?? 0) * scale });
  if (rest > NOISE) {
    const owner = restOwner(steps, calls);
    const row = byJob.get(owner) ?? { runId, job: owner, paidAnswers: 0, credits: 0 };
    row.credits += rest;
    byJob.set(owner, row);
  }
  const rows = [...byJob.values()].sort((a, b) => (a.job ?? '\uffff').localeCompare(b.job ?? '\uffff'));
  return apportion(rows, spent, creditUnit([spent, ...steps.map((s) => s.steps ?? 0)]));
}

/** The finest decimal the figures are written in: 1 for whole credits, 0.01 where a call costs 0.25. */
function creditUnit(figures: readonly number[]): number {
  return 10 ** -Math.max(...figures.map((n) => (String(roundCredits(n)).split('.')[1] ?? '').length));
}

/**
 * The jobs' shares as whole units that still add up to `spent` (largest remainder): scaled shares of a shared account
 * are fractions no bill shows. Each is rounded down, and the units left go to the largest remainders, in name order.
 */
function apportion(rows: JobCredits[], spent: number, unit: number): JobCredits[] {
  const exact = rows.map((r) => r.credits / unit);
  const whole = exact.map((x) => Math.floor(x));
  const left = Math.max(0, Math.round(spent / unit) - whole.reduce((n, x) => n + x, 0));
  const byRemainder = exact.map((_, i) => i).sort((i, j) => exact[j]! - whole[j]! - (exact[i]! - whole[i]!));
  for (const i of byRemainder.slice(0, left)) whole[i]! += 1;
  return rows.map((r, i) => ({ ...r, credits: roundCredits(whole[i]! * unit) }));
}

/** Who takes the spend the steps do not show: the job of the run's lowest counter, else (no counter read) the job with the most answers. */
function restOwner(steps: ReportData['creditSteps'], calls: ReportData['calls']): string | null {
  const lowest = steps.find((s) => s.lowest > 0);
  if (lowest) return lowest.job;
  const most = calls.filter((c) => c.job !== null && c.answered > 0).sort((a, b) => b.answered - a.answered)[0];
  return most?.job ?? null;
}

function byRun<T extends { runId: number }>(items: readonly T[]): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const item of items) (out.get(item.runId) ?? out.set(item.runId, []).get(item.runId)!).push(item);
  return out;
}

/** Longest sample of a stored message, in characters. */
export const SAMPLE_MAX_CHARS = 200;

/** What could be a secret in a stored message: a URL's password, a bearer token, a key in a query string. */
const SECRETS: ReadonlyArray<[RegExp, string]> = [
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]*@/gi, `$1${REDACTED}@`],
  [/\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]+/gi, `$1 ${REDACTED}`],
  [/([?&;\s](?:token|api[_-]?key|key|password|secret|access_token)=)[^&\s"']+/gi, `$1${REDACTED}`],
];

/** A stored message with secrets masked first (so no half of one is left at the cut), then cut to SAMPLE_MAX_CHARS. */
export function redactSample(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRETS) out = out.replace(pattern, replacement);
  return out.length > SAMPLE_MAX_CHARS ? `${out.slice(0, SAMPLE_MAX_CHARS - 1)}…` : out;
}
