import type { Database } from './open.ts';
import { createRunLog } from './runs.ts';
import { createApiCallLog } from './api-calls.ts';
import { readRunLock, type RunLockState } from './run-lock.ts';
import { roundCredits } from '../credits/credit-meter.ts';
import { measureUnfinishedRun, unfinishedRuns, type UnfinishedRun } from './abandoned-runs.ts';
import { uncountedCredits } from './uncounted-credits.ts';
import { lastRunDrift } from './answer-drift.ts';

/**
 * What `netingest status` shows: recent runs, tasks by status per job, credits. Only reads: a run still
 * marked running shows the figures the database holds for it so far, and `unfinished` when its process is
 * gone (the next run closes it as abandoned).
 */
export function readStatus(database: Database, recentRuns = 10) {
  const lock = readRunLock(database);
  const open = new Map<number, { run: UnfinishedRun; figures: ReturnType<typeof measureUnfinishedRun> }>();
  for (const run of unfinishedRuns(database)) open.set(run.id, { run, figures: measureUnfinishedRun(database, run) });

  const runs = createRunLog(database)
    .recent(recentRuns)
    .map((row) => {
      const measured = open.get(row.id);
      if (!measured) return { ...row, unfinished: false };
      // Its end is not written: the same fields, as far as the database shows them now.
      const { endedAt: _lastCall, creditsAtStart: _notListed, ...figures } = measured.figures;
      return { ...row, ...figures, unfinished: !isLockHolder(measured.run, lock) };
    });
  const tasks = database.sqlite
    .prepare(`SELECT job, status, count(*) AS n FROM tasks GROUP BY job, status ORDER BY job, status`)
    .all() as Array<{ job: string; status: string; n: number }>;
  const byJob = new Map<string, Record<string, number>>();
  for (const row of tasks) {
    const counts = byJob.get(row.job) ?? {};
    counts[row.status] = row.n;
    byJob.set(row.job, counts);
  }
  // A run still marked running has no credits_spent yet: what its stored counters show counts instead.
  let spent = database.sqlite.prepare(`SELECT coalesce(sum(credits_spent), 0) FROM runs WHERE status <> 'running'`).pluck().get() as number;
  for (const { figures } of open.values()) spent += figures.creditsSpent ?? 0;
  // Paid 200s of the wrong shape, kept apart from the answers until `reprocess` validates them after a fix.
  const wrongShapeBodiesKept = database.sqlite
    .prepare(`SELECT count(*) FROM raw_responses WHERE error_code IS NOT NULL`)
    .pluck()
    .get() as number;
  return {
    runs,
    /** Runs still marked running whose process is gone, oldest first. */
    unfinishedRuns: [...open.values()].filter(({ run }) => !isLockHolder(run, lock)).map(({ run }) => run),
    tasksByJob: Object.fromEntries(byJob),
    creditsSpentAllRuns: roundCredits(spent),
    /** Used between runs by calls no run stored (lost in flight to a kill) or by the token elsewhere: in no run's spend. */
    creditsUncountedBetweenRuns: uncountedCredits(database),
    wrongShapeBodiesKept,
    lastCounters: createApiCallLog(database).lastCounters() ?? null,
    /** How the answers of the last run that received any differed from the spec (answer_drift). */
    drift: lastRunDrift(database),
    lock,
  };
}

export type StatusReport = ReturnType<typeof readStatus>;

/** Whether a run still marked running is the live holder of the lock (a run writes its row only after taking it). */
function isLockHolder(run: UnfinishedRun, lock: RunLockState | null): boolean {
  return lock !== null && lock.alive && run.pid === lock.pid && run.host === lock.host && run.startedAt >= lock.acquiredAt;
}
