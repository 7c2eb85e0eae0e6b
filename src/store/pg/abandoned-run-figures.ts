/**
 * The figures of runs closed as abandoned on PostgreSQL, measured as SQLite closes them (abandoned-runs.ts: the
 * tasks each run planned by status, its invalid rows and calls, its credits replayed from its answers'
 * counters). Closing a killed worker's run with its status alone would leave credits_spent NULL, and its credits
 * would drop out of `status`'s total of all runs.
 */
import type pg from 'pg';
import type { RunStore } from '../run-store.ts';
import { abandonedRunEnd, measureUnfinishedRunReads, type UnfinishedRun, type UnfinishedRunFigures } from '../abandoned-runs.ts';
import { END_RUN_SQL, endRunParams } from '../runs.ts';
import { readPg, rows } from '../read-steps.ts';
import { withPgReadSnapshot } from './read-snapshot.ts';
import { pgValues, sql, param } from '../../statement.ts';

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
  // Closed as abandoned by this worker's start (worker-runs.ts), with the same status and error as written here.
  for (const { id, f } of measured) await pool.query(END_RUN_SQL.postgres, pgValues(END_RUN_SQL, endRunParams(id, abandonedRunEnd(f))));
}

function* measureRuns(runIds: readonly number[]) {
  const out: Array<{ id: number; f: UnfinishedRunFigures }> = [];
  for (const id of runIds) {
    const [run] = yield* rows<UnfinishedRun>(sql`SELECT id, jobs, started_at AS "startedAt", pid, host FROM runs WHERE id = ${param}`, [id]);
    if (run) out.push({ id, f: yield* measureUnfinishedRunReads(run) });
  }
  return out;
}
