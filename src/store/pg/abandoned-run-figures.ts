/**
 * The figures of runs closed as abandoned on PostgreSQL, measured as SQLite closes them (abandoned-runs.ts: the
 * tasks each run planned by status, its invalid rows and calls, its credits replayed from its answers'
 * counters). Closing a killed worker's run with its status alone would leave credits_spent NULL, and its credits
 * would drop out of `status`'s total of all runs.
 */
import type pg from 'pg';
import type { RunStore } from '../run-store.ts';
import { measureUnfinishedRunReads, type UnfinishedRun, type UnfinishedRunFigures } from '../abandoned-runs.ts';
import { readPg, rows } from '../read-steps.ts';
import { withPgReadSnapshot } from './read-snapshot.ts';
import { sql, param } from '../../statement.ts';

/** `runs` whose start, having closed the runs of dead workers (`hold.abandonedRuns`), writes their figures. */
export function withAbandonedRunFigures(pool: pg.Pool, runs: RunStore['runs'], hold: { readonly abandonedRuns: readonly number[] }): RunStore['runs'] {
  return {
    ...runs,
    async start(...args: Parameters<RunStore['runs']['start']>) {
      const started = await runs.start(...args);
      await recordAbandonedRunFigures(pool, hold.abandonedRuns);
      return started;
    },
  };
}

/** Measures the runs `runIds` (closed as abandoned, their tasks not re-planned yet) and writes their figures. */
export async function recordAbandonedRunFigures(pool: pg.Pool, runIds: readonly number[]): Promise<void> {
  if (runIds.length === 0) return;
  const measured = await withPgReadSnapshot(pool, (snapshot) => readPg(snapshot, measureRuns(runIds)));
  for (const { id, f } of measured) {
    await pool.query(`UPDATE runs SET ended_at = $2, credits_at_start = $3, credits_at_end = $4, credits_spent = $5,
      tasks_total = $6, tasks_done = $7, tasks_not_found = $8, tasks_failed = $9, tasks_deferred = $10, invalid_rows = $11,
      calls = $12 WHERE id = $1 AND status = 'abandoned'`,
    [id, f.endedAt, f.creditsAtStart, f.creditsAtEnd, f.creditsSpent, f.tasksTotal, f.tasksDone, f.tasksNotFound,
      f.tasksFailed, f.tasksDeferred, f.invalidRows, f.calls]);
  }
}

function* measureRuns(runIds: readonly number[]) {
  const out: Array<{ id: number; f: UnfinishedRunFigures }> = [];
  for (const id of runIds) {
    const [run] = yield* rows<UnfinishedRun>(sql`SELECT id, jobs, started_at AS "startedAt", pid, host FROM runs WHERE id = ${param}`, [id]);
    if (run) out.push({ id, f: yield* measureUnfinishedRunReads(run) });
  }
  return out;
}
