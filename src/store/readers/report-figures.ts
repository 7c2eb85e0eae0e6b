/**
 * What `netingest report` draws, for both engines; its top figures are `status`'s (store/status.ts), read in the same
 * snapshot so the two never disagree.
 */
import { apiCallReads } from '../api-calls.ts';
import { rows, value, type Reads } from '../read-steps.ts';
import { statusReads } from '../status.ts';
import { measureUnfinishedRunReads } from '../abandoned-runs.ts';
import { LAST_RUN_IDS, RECENT_RUN_COLUMNS, type RecentRun } from '../runs.ts';
import { sql, param, dialect, literal, perEngine } from '../../statement.ts';
import { OPERATIONS } from '../../spec/types.ts';

export interface ReportWindow {
  /** Runs started at or after this ISO time are drawn. */
  sinceIso: string;
  /** How many invalid rows and anomalies are listed one by one (the rest is counted). */
  listedRows: number;
}

/** One run of the window, as `status` lists it, with `runs.job_rates` (JSON text; null before the run recorded it). */
export type ReportRun = RecentRun & { jobRates: string | null };

/**
 * A run's calls for one job (null: calls no task owns, such as the free balance check). `timedCalls`: those with a
 * latency, whose send time is known; `sentSpanMs`: from the first of them sent to the last (null: none).
 */
export interface RunJobCalls {
  runId: number; job: string | null; calls: number; answered: number; notFound: number; failedCalls: number; timedCalls: number;
  sentSpanMs: number | null; latencyAvgMs: number | null; latencyMaxMs: number | null;
}

/** How many answers (200) one operation received in one run: drift is counted over them. */
export interface RunOperationAnswers { runId: number; operation: string; answers: number }

/** One run's counted answers of one job (see CREDIT_STEPS). */
export interface RunJobCreditSteps { runId: number; job: string | null; paid: number; steps: number | null; lowest: number }

/** Tasks of one job and state, by the hour their answer was stored (null: never). */
export interface TaskAge { job: string; operation: string; status: string; retryable: number | null; completedHour: string | null; n: number }

/** The runs of the window; `jobRates` is the column, or NULL where the dataset has none (see HAS_JOB_RATES). */
const runsSql = (jobRates: 'job_rates' | 'NULL') =>
  sql`SELECT ${literal(RECENT_RUN_COLUMNS)}, ${literal(jobRates)} AS "jobRates" FROM runs WHERE started_at >= ${param} ORDER BY id`;
const RUNS = { withRates: runsSql('job_rates'), withoutRates: runsSql('NULL') };

/**
 * Whether `runs` has job_rates: a dataset opened for reading is not upgraded when it cannot be (a read-only role
 * or file) and may lack it; its runs are then drawn as runs that recorded no rates (against --rate, "assumed").
 */
const HAS_JOB_RATES = perEngine({
  sqlite: `SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'job_rates'`,
  postgres: `SELECT count(*)::int FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'runs' AND column_name = 'job_rates'`,
});

/** The last night's runs, newest first: the headline judges the night, not whichever worker started last. */
const LAST_NIGHT = `SELECT ${RECENT_RUN_COLUMNS} FROM runs WHERE id IN (${LAST_RUN_IDS}) ORDER BY id DESC`;

/**
 * When a call was sent, in ms since 1970: `at` is written once its answer arrived, `latency_ms` after the send (the
 * rate gate spaces sends, not arrivals). Null without a latency: an arrival is never taken for a send.
 */
const SENT_MS = dialect({
  // Rounded: julianday() is a day count in a double, off by up to 0.05 ms, where `at` holds whole milliseconds.
  sqlite: '(round((julianday(a.at) - 2440587.5) * 86400000.0) - a.latency_ms)',
  postgres: '(extract(epoch FROM a.at) * 1000 - a.latency_ms)',
});

const CALLS = sql`SELECT a.run_id AS "runId", t.job, count(*) AS calls, sum(CASE WHEN a.status = 200 THEN 1 ELSE 0 END) AS answered,
  sum(CASE WHEN a.status = 404 THEN 1 ELSE 0 END) AS "notFound",
  sum(CASE WHEN a.status IS NULL OR (a.status <> 200 AND a.status <> 404) THEN 1 ELSE 0 END) AS "failedCalls",
  count(a.latency_ms) AS "timedCalls", max(${SENT_MS}) - min(${SENT_MS}) AS "sentSpanMs", avg(a.latency_ms) AS "latencyAvgMs", max(a.latency_ms) AS "latencyMaxMs"
  FROM api_calls a LEFT JOIN tasks t ON t.id = a.task_id
  WHERE a.run_id IN (SELECT id FROM runs WHERE started_at >= ${param}) GROUP BY a.run_id, t.job ORDER BY a.run_id, t.job`;

/**
 * A run's paid answers per job. `steps`: their charges, steps between counters once sorted (concurrent answers are
 * written out of charge order); `lowest`: 1 for the job with the run's lowest counter, whose cost no step shows.
 */
const CREDIT_STEPS = sql`SELECT "runId", job, count(*) AS paid, sum(step) AS steps, sum(CASE WHEN step IS NULL THEN 1 ELSE 0 END) AS lowest
  FROM (SELECT a.run_id AS "runId", t.job,
      a.credits_used - lag(a.credits_used) OVER (PARTITION BY a.run_id ORDER BY a.credits_used, a.id) AS step
    FROM api_calls a LEFT JOIN tasks t ON t.id = a.task_id
    WHERE a.status = 200 AND a.credits_used IS NOT NULL AND a.run_id IN (SELECT id FROM runs WHERE started_at >= ${param})) s
  GROUP BY "runId", job ORDER BY "runId", job`;

const DRIFT = sql`SELECT run_id AS "runId", operation, path, kind, count, seen FROM answer_drift
  WHERE run_id IN (SELECT id FROM runs WHERE started_at >= ${param}) ORDER BY run_id, operation, path, kind`;

const ANSWERS = sql`SELECT run_id AS "runId", operation, count(*) AS answers FROM api_calls
  WHERE status = 200 AND run_id IN (SELECT id FROM runs WHERE started_at >= ${param}) GROUP BY run_id, operation ORDER BY run_id, operation`;

const FAILURES = `SELECT job, last_error_code AS code, count(*) AS n, min(id) AS "firstId" FROM tasks
  WHERE status = 'failed' GROUP BY job, last_error_code ORDER BY count(*) DESC, job, last_error_code`;

const INVALID = sql`SELECT job, file, line, field, reason FROM invalid_inputs ORDER BY file, line, job LIMIT ${param}`;

const ANOMALY_KINDS = `SELECT operation, kind, count(*) AS n FROM answer_anomalies GROUP BY operation, kind ORDER BY operation, kind`;
const ANOMALIES = sql`SELECT run_id AS "runId", operation, kind, request_key AS "requestKey", path, reason FROM answer_anomalies ORDER BY id DESC LIMIT ${param}`;

/** The hour an answer was stored, as text, the same on both engines (PostgreSQL stores timestamptz). */
const TASK_AGES = sql`SELECT job, operation, status, ${dialect({ sqlite: 'retryable', postgres: 'retryable::int' })} AS retryable,
  ${dialect({ sqlite: 'substr(completed_at, 1, 13)', postgres: `to_char(completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24')` })} AS "completedHour",
  count(*) AS n FROM tasks GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5`;

/** Everything the report shows, in one read (one snapshot on PostgreSQL). */
export function* reportFiguresReads(window: ReportWindow, recentRuns = 10) {
  const status = yield* statusReads(recentRuns);
  const hasRates = ((yield* value<number>(HAS_JOB_RATES, [])) ?? 0) > 0;
  const runs = yield* measuredRuns(yield* rows<ReportRun>(hasRates ? RUNS.withRates : RUNS.withoutRates, [window.sinceIso]));
  const lastNight = yield* rows<RecentRun>(LAST_NIGHT);
  const calls = yield* rows<RunJobCalls>(CALLS, [window.sinceIso]);
  const creditSteps = yield* rows<RunJobCreditSteps>(CREDIT_STEPS, [window.sinceIso]);
  const answers = yield* rows<RunOperationAnswers>(ANSWERS, [window.sinceIso]);
  const drift = yield* rows<{ runId: number; operation: string; path: string; kind: string; count: number; seen: number }>(DRIFT, [window.sinceIso]);
  const failures = [];
  for (const f of yield* rows<{ job: string; code: string | null; n: number; firstId: number }>(FAILURES)) {
    const sample = (yield* value<string | null>(sql`SELECT last_error FROM tasks WHERE id = ${param}`, [f.firstId])) ?? null;
    failures.push({ job: f.job, code: f.code, tasks: f.n, sample });
  }
  const invalidRows = yield* rows<{ job: string; file: string; line: number; field: string | null; reason: string }>(INVALID, [window.listedRows]);
  const invalidTotal = (yield* value<number>(`SELECT count(*) FROM invalid_inputs`)) ?? 0;
  const anomalyKinds = yield* rows<{ operation: string; kind: string; n: number }>(ANOMALY_KINDS);
  const anomalies = yield* rows<{ runId: number | null; operation: string; kind: string; requestKey: string; path: string | null; reason: string }>(
    ANOMALIES,
    [window.listedRows],
  );
  const taskAges = yield* rows<TaskAge>(TASK_AGES, []);
  const costPerCall: Record<string, number | null> = {};
  // Each operation's learned cost per call, for the forecast.
  for (const operation of OPERATIONS) costPerCall[operation] = yield* apiCallReads.learnedCost(operation);
  return { status, runs, lastNight, calls, creditSteps, answers, drift, failures, invalidRows, invalidTotal, anomalyKinds, anomalies, taskAges, costPerCall };
}

/**
 * The runs with those still marked running measured as `status` measures them (its end not written: what its stored
 * calls and tasks show), so the credits chart holds the spend the headline counts for a run killed mid-run.
 */
function* measuredRuns(runs: ReportRun[]): Reads<ReportRun[]> {
  const out: ReportRun[] = [];
  for (const run of runs) {
    if (run.status !== 'running') out.push(run);
    else {
      const { endedAt: _lastCall, creditsAtStart: _notListed, ...figures } = yield* measureUnfinishedRunReads({ ...run, pid: null, host: null });
      out.push({ ...run, ...figures });
    }
  }
  return out;
}

export type ReportData = ReturnType<typeof reportFiguresReads> extends Reads<infer T> ? T : never;
