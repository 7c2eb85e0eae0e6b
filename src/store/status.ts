import { recentRunsReads } from './runs.ts';
import { apiCallReads } from './api-calls.ts';
import { runLockReads, type RunLockState } from './run-lock.ts';
import { roundCredits } from '../credits/credit-meter.ts';
import { measureUnfinishedRunReads, unfinishedRunsReads, type UnfinishedRun, type UnfinishedRunFigures } from './abandoned-runs.ts';
import { lastRunDriftReads } from './answer-drift.ts';
import { rows, value, type Reads } from './read-steps.ts';
import { RUNNING_RUNS_LIVENESS_SQL } from './pg/coordination/worker-runs.ts';
import { codePointOrder, perEngine, sql, param } from '../statement.ts';

/** On PostgreSQL, whether each unfinished run's worker still holds its session; SQLite tells by the run lock. */
const RUNNING_RUNS_LIVENESS = perEngine({ sqlite: 'SELECT id, 1 AS live FROM runs WHERE 0', postgres: RUNNING_RUNS_LIVENESS_SQL });

/** Tasks by job and status in code-point order on both engines (PostgreSQL's own follows the database's collation). */
const TASKS_BY_JOB = sql`SELECT job, status, count(*) AS n FROM tasks GROUP BY job, status ORDER BY ${codePointOrder('job')}, ${codePointOrder('status')}`;

/**
 * What `netingest status` shows: recent runs, tasks by status per job, credits. Only reads: a run still marked running
 * shows its figures so far, `unfinished` once its process lost its lock; the next run closes it as abandoned.
 */
export function* statusReads(recentRuns = 10) {
  const lock = yield* runLockReads();
  const open = new Map<number, { run: UnfinishedRun; figures: UnfinishedRunFigures }>();
  for (const run of yield* unfinishedRunsReads()) open.set(run.id, { run, figures: yield* measureUnfinishedRunReads(run) });
  // PostgreSQL: a run is live while its worker's session holds the dataset lock, on any host (read after the runs;
  // not at all when none is unfinished, as nearly always: the read joins catalogs a new session reads cold).
  const live = new Map(open.size === 0 ? [] : (yield* rows<{ id: number | string; live: boolean }>(RUNNING_RUNS_LIVENESS, []))
    .map((r) => [Number(r.id), r.live]));
  const running = (run: UnfinishedRun) => live.get(run.id) ?? isLockHolder(run, lock);

  const runs = (yield* recentRunsReads(recentRuns)).map((row) => {
    const measured = open.get(row.id);
    if (!measured) return { ...row, unfinished: false };
    // Its end is not written: the same fields, as far as the database shows them now.
    const { endedAt: _lastCall, creditsAtStart: _notListed, ...figures } = measured.figures;
    return { ...row, ...figures, unfinished: !running(measured.run) };
  });
  const tasks = yield* rows<{ job: string; status: string; n: number }>(TASKS_BY_JOB, []);
  const byJob = new Map<string, Record<string, number>>();
  for (const row of tasks) byJob.set(row.job, { ...byJob.get(row.job), [row.status]: row.n });
  // A run still marked running has no credits_spent yet: what its stored counters show counts instead.
  let spent = (yield* value<number>(`SELECT coalesce(sum(credits_spent), 0) FROM runs WHERE status <> 'running'`)) ?? 0;
  for (const { figures } of open.values()) spent += figures.creditsSpent ?? 0;
  // Paid 200s of the wrong shape, kept apart from the answers until `reprocess` validates them after a fix.
  const wrongShapeBodiesKept = (yield* value<number>(`SELECT count(*) FROM raw_responses WHERE error_code IS NOT NULL`)) ?? 0;
  return {
    runs,
    /** Runs still marked running whose process is gone, oldest first. */
    unfinishedRuns: [...open.values()].filter(({ run }) => !running(run)).map(({ run }) => run),
    tasksByJob: Object.fromEntries(byJob),
    creditsSpentAllRuns: roundCredits(spent),
    /** Spent between runs by calls no run stored (lost to a kill) or by the token elsewhere: in no run's spend. */
    creditsUncountedBetweenRuns: yield* uncountedCreditsReads(),
    wrongShapeBodiesKept,
    lastCounters: (yield* apiCallReads.lastCounters()) ?? null,
    /** How the answers of the last run that received any differed from the spec (answer_drift). */
    drift: yield* lastRunDriftReads(),
    lock,
    /** Where `netingest report` last wrote its page for this dataset (netingest_meta), or null. */
    lastReport: yield* lastReportReads(),
  };
}

export type StatusReport = ReturnType<typeof statusReads> extends Reads<infer R> ? R : never;

/** Whether a run still marked running is the live holder of the lock (a run writes its row only after taking it). */
function isLockHolder(run: UnfinishedRun, lock: RunLockState | null): boolean {
  return lock !== null && lock.alive && run.pid === lock.pid && run.host === lock.host && run.startedAt >= lock.acquiredAt;
}

/** Below this, a gap is float noise of fractional costs. */
const NOISE = 1e-6;

/**
 * For each run begun after every earlier one's last stored paid answer: the step from the highest credits_used stored
 * before it to the lowest it stored, less that call's cost (learned before the run). A reset (credits_used went down: a
 * plan renewal) or an unknown cost counts 0; overlapping runs count no step between them, as their counters interleave.
 */
function* uncountedCreditsReads(): Reads<number> {
  const runs = yield* rows<{ runId: number; firstId: number; lastId: number; minUsed: number; maxUsed: number }>(
    `SELECT run_id AS "runId", min(id) AS "firstId", max(id) AS "lastId", min(credits_used) AS "minUsed", max(credits_used) AS "maxUsed"
      FROM api_calls WHERE status = 200 AND credits_used IS NOT NULL AND run_id IS NOT NULL GROUP BY run_id ORDER BY "firstId"`,
  );
  let total = 0;
  let before: number | null = null;
  let lastId = 0;
  for (const run of runs) {
    if (before === null) before = run.maxUsed;
    // Begun before an earlier run's last stored call: workers side by side, their counters interleaved.
    else if (run.firstId < lastId) before = Math.max(before, run.maxUsed);
    else if (run.minUsed >= before) {
      total += yield* uncountedStep(run, before);
      before = run.maxUsed;
    } else before = run.maxUsed; // a reset
    lastId = Math.max(lastId, run.lastId);
  }
  return roundCredits(total);
}

/** The credits between `before` and a run's lowest stored credits_used that its first call's cost does not explain. */
function* uncountedStep(run: { runId: number; firstId: number; minUsed: number }, before: number): Reads<number> {
  const operation = (yield* value<string>(
    sql`SELECT operation FROM api_calls WHERE run_id = ${param} AND status = 200 AND credits_used = ${param} ORDER BY id LIMIT 1`,
    [run.runId, run.minUsed],
  ))!;
  const cost = (yield* apiCallReads.learnedCost(operation, run.firstId)) ?? (yield* apiCallReads.learnedCost(operation));
  const gap = cost === null ? 0 : run.minUsed - before - cost;
  return gap > NOISE ? gap : 0;
}

/** netingest_meta key of the page `netingest report` last wrote (report/write-report.ts), as `{ path, writtenAt }`. */
export const LAST_REPORT_KEY = 'last_report';

/** The last report written for this dataset, or null when none was (or the row is not ours to read). */
function* lastReportReads(): Reads<{ path: string; writtenAt: string } | null> {
  const text = yield* value<string>(sql`SELECT value FROM netingest_meta WHERE key = ${param}`, [LAST_REPORT_KEY]);
  if (text === undefined) return null;
  try {
    const parsed = JSON.parse(text) as { path?: unknown; writtenAt?: unknown };
    return typeof parsed.path === 'string' && typeof parsed.writtenAt === 'string' ? { path: parsed.path, writtenAt: parsed.writtenAt } : null;
  } catch {
    return null;
  }
}
