/**
 * A worker's run, on any host, is live while its session holds the dataset lock (the server drops a SIGKILLed worker's).
 * A worker joins a live run working one of its jobs, so overlapping workers share one `credits.maxPerRun`.
 */
import type pg from 'pg';
import { inPgTransaction } from '../transaction.ts';
import { ABANDONED_RUN_ERROR, abandonedRunEnd, measureUnfinishedRunReads, type UnfinishedRun, type UnfinishedRunFigures } from '../../abandoned-runs.ts';
import { END_RUN_SQL, endRunParams } from '../../runs.ts';
import type { RunStart } from '../../run-store.ts';
import { readPg, rows } from '../../read-steps.ts';
import { param, pgValues, sql } from '../../../statement.ts';
import { LOCK_HOLDERS_SQL } from '../dataset-lock.ts';
import { withPgReadSnapshot } from '../read-snapshot.ts';

/**
 * Whether the run `runs` row aliased `r` has a live worker: its session holds the dataset lock, and that pid is
 * the same session (started when recorded) unless the server hides another role's start time.
 */
export function liveRunSql(r: string): string {
  return `EXISTS (SELECT 1 FROM worker_runs w WHERE w.run_id = ${r}.id AND w.backend_pid IN (${LOCK_HOLDERS_SQL})
    AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = w.backend_pid AND a.backend_start <> w.backend_start))`;
}

/** Every run still marked running, and whether it is live: for `status`, which only reads. */
export const RUNNING_RUNS_LIVENESS_SQL = `SELECT r.id, ${liveRunSql('r')} AS live FROM runs r WHERE r.status = 'running'`;

const ANY_RUNNING_SQL = `SELECT 1 FROM runs WHERE status = 'running' LIMIT 1`;

// Taken for the start of a run: two workers starting at once see each other (one joins the other's run).
const START_LOCK = `SELECT pg_advisory_xact_lock(hashtextextended('netingest.worker_runs', 0))`;

export interface WorkerRunStart extends RunStart {
  /** The backend pid of the session holding the dataset lock for this run (dataset-lock.ts). */
  backendPid: number;
}

/**
 * Closes abandoned runs, picks the shared run and writes this one, in one transaction under START_LOCK. The caller
 * holds the dataset lock on `backendPid` already, so the next worker to start sees this run live.
 */
export async function startWorkerRun(pool: pg.Pool, start: WorkerRunStart): Promise<{ runId: number; runKey: string; abandoned: number[] }> {
  return inPgTransaction(pool, async (client) => {
    await client.query(START_LOCK);
    // Nearly every start finds no run marked running (the last one ended): then there is nothing to close or join, and
    // the new session skips the two statements over pg_locks and pg_stat_activity (12-18 ms of its catalog reads here).
    const anyRunning = (await client.query(ANY_RUNNING_SQL)).rows.length > 0;
    const abandoned = anyRunning ? await closeAbandoned(client) : [];
    if (abandoned.length > 0) await client.query(DEAD_RESERVATIONS_SQL);
    const joined = start.sharedRunKey ?? (anyRunning ? await liveRunKey(client, start.jobs) : null);
    const { rows } = await client.query<{ id: string }>(`INSERT INTO runs (jobs, started_at, status, pid, host, refresh)
      VALUES ($1::jsonb, $2, 'running', $3, $4, $5) RETURNING id`, [JSON.stringify(start.jobs), start.startedAt, start.pid, start.host, start.refresh ? 1 : 0]);
    const runId = Number(rows[0]!.id);
    const runKey = joined ?? `run-${runId}`;
    await client.query(`INSERT INTO worker_runs (run_id, run_key, backend_pid, backend_start)
      VALUES ($1, $2, $3, (SELECT backend_start FROM pg_stat_activity WHERE pid = $3))`, [runId, runKey, start.backendPid]);
    return { runId, runKey, abandoned };
  });
}

/** Closes running runs with no live session (killed, or of a netingest that kept none), ended at their last call. */
async function closeAbandoned(client: pg.PoolClient): Promise<number[]> {
  const { rows } = await client.query<{ id: string }>(`UPDATE runs r SET status = 'abandoned', error = $1,
    ended_at = coalesce((SELECT max(at) FROM api_calls c WHERE c.run_id = r.id), r.started_at),
    calls = (SELECT count(*) FROM api_calls c WHERE c.run_id = r.id)
    WHERE r.status = 'running' AND NOT ${liveRunSql('r')} RETURNING r.id`, [ABANDONED_RUN_ERROR]);
  return rows.map((r) => Number(r.id)).sort((a, b) => a - b);
}

/**
 * Drops the credit reservations of run keys that no run still going holds (closeAbandoned has just closed those whose
 * session is gone): counted till they expired (5 min), a killed worker's held the next run's calls back near the
 * reserve, or with the balance unknown. Rows a credit turn is deleting are left to it: a start never waits on one.
 */
const DEAD_RESERVATIONS_SQL = `DELETE FROM credit_reservations WHERE id IN (SELECT c.id FROM credit_reservations c
  WHERE NOT EXISTS (SELECT 1 FROM runs r JOIN worker_runs w ON w.run_id = r.id WHERE w.run_key = c.run_key AND r.status = 'running')
  FOR UPDATE SKIP LOCKED)`;

/** The key of the oldest live run working one of `jobs`, if any. */
async function liveRunKey(client: pg.PoolClient, jobs: string[]): Promise<string | null> {
  const { rows } = await client.query<{ key: string }>(`SELECT w.run_key AS key FROM runs r JOIN worker_runs w ON w.run_id = r.id
    WHERE r.status = 'running' AND r.jobs ?| $1::text[] AND ${liveRunSql('r')} ORDER BY r.id LIMIT 1`, [jobs]);
  return rows[0]?.key ?? null;
}

/**
 * Writes the figures of the runs a start closed as abandoned (before their tasks are re-planned), as SQLite does
 * (abandoned-runs.ts): else a killed worker's run keeps credits_spent NULL and drops out of `status`'s total.
 */
export async function recordAbandonedRunFigures(pool: pg.Pool, runIds: readonly number[]): Promise<void> {
  if (runIds.length === 0) return;
  const measured = await withPgReadSnapshot(pool, (snapshot) => readPg(snapshot, measureRuns(runIds)));
  // Closed by closeAbandoned above, with the same status and error as written here.
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
