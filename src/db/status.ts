import type { Database } from './open.ts';
import { createRunLog } from './runs.ts';
import { createApiCallLog } from './api-calls.ts';

/** What `netingest status` shows: recent runs, tasks by status per job, credits. */
export function readStatus(database: Database, recentRuns = 10) {
  const runs = createRunLog(database).recent(recentRuns);
  const tasks = database.sqlite
    .prepare(`SELECT job, status, count(*) AS n FROM tasks GROUP BY job, status ORDER BY job, status`)
    .all() as Array<{ job: string; status: string; n: number }>;
  const byJob = new Map<string, Record<string, number>>();
  for (const row of tasks) {
    const counts = byJob.get(row.job) ?? {};
    counts[row.status] = row.n;
    byJob.set(row.job, counts);
  }
  const spent = database.sqlite.prepare(`SELECT coalesce(sum(credits_spent), 0) FROM runs`).pluck().get() as number;
  const lock = database.sqlite
    .prepare(`SELECT pid, host, run_id AS runId, acquired_at AS acquiredAt FROM run_lock WHERE id = 1`)
    .get() as { pid: number; host: string; runId: number | null; acquiredAt: string } | undefined;
  // Paid 200s of the wrong shape, kept apart from the answers until `reprocess` validates them after a fix.
  const wrongShapeBodiesKept = database.sqlite
    .prepare(`SELECT count(*) FROM raw_responses WHERE error_code IS NOT NULL`)
    .pluck()
    .get() as number;
  return {
    runs,
    tasksByJob: Object.fromEntries(byJob),
    creditsSpentAllRuns: spent,
    wrongShapeBodiesKept,
    lastCounters: createApiCallLog(database).lastCounters() ?? null,
    lock: lock ?? null,
  };
}

export type StatusReport = ReturnType<typeof readStatus>;
