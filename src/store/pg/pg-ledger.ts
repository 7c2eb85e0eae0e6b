/**
 * The task ledger on PostgreSQL, with SQLite's meanings (store/ledger.ts says what each method does). request_json
 * is jsonb here: a changed request is compared as JSON, never as text.
 */
import type pg from 'pg';
import { inPgTransaction, retryingConflicts, withPgClient } from './transaction.ts';
import { pipelineTransaction } from './pg-pipeline.ts';
import { readPg } from '../read-steps.ts';
import { countByKey, deferredSinceReads, dueRule, invalidParams, LEDGER_SQL, otherJobsWithOperationReads, ownAnswersReads, statusCounts, type InvalidInputRow, type NewTask, type RunnableFilter } from '../ledger.ts';
import type { RunLedger } from '../run-store.ts';
import type { TaskStatus } from '../tables.ts';
import { heldByOtherWorker, LEASE_HOLDERS } from './coordination/task-claims.ts';

/** The due rule (ledger.ts, dueRule) at $3 freshSince, $4 refresh; RUNNABLE's $1 job, $2 runId before them. */
export const PG_DUE = dueRule({ at: '', refresh: '$4::boolean', freshSince: '$3::timestamptz' });

const RUNNABLE = `job = $1 AND run_id = $2::bigint AND ${PG_DUE}`;

/** Rows per multi-row upsert: PostgreSQL takes at most 65,535 parameters a statement. */
const TASK_ROWS_PER_STATEMENT = 500;

/** Planning a task again with another request (compared as jsonb) sets it back to pending, whatever its state. */
export const pgRequestChanged = (task: string, planned: string) => `${task}.request_json <> ${planned}`;

/** `of`'s lookup answered by a job of $5 at or after $3, on tasks alias `u` (ledger.ts's sharedAnswer). */
export const pgSharedAnswer = (of: { inputKey: string; page: string; operation: string; requestJson: string }) =>
  `u.job = ANY($5::text[]) AND u.input_key = ${of.inputKey} AND u.page = ${of.page}
  AND u.operation = ${of.operation} AND u.request_json = ${of.requestJson}
  AND u.status IN ('done', 'not_found') AND u.completed_at >= $3::timestamptz`;

const SHARED = pgSharedAnswer({ inputKey: 'tasks.input_key', page: 'tasks.page', operation: 'tasks.operation', requestJson: 'tasks.request_json' });

/**
 * The statistics the claims' plans read: the columns they filter, join and order by (jsonb and error texts were half
 * the time: bench/README.md). A tenth of the default sample: the plans need the table's size and a job's share, and the
 * full one took 143 ms of a run's start at 100,000 tasks (20 ms so; 22 -> 10 at 10,000); autovacuum's takes all.
 */
const ANALYZE_CLAIMED_COLUMNS = ['SET LOCAL default_statistics_target = 10',
  'ANALYZE tasks (id, job, operation, input_key, page, status, retryable, updated_at, completed_at, run_id)'];

const filterParams = (f: RunnableFilter) => [f.job, f.runId, f.freshSince, f.refresh];

/**
 * A stopping run defers its pending tasks but those whose input another live worker holds: the last worker to plan
 * stamped them with its run, yet they are that worker's to call, and its "nothing left" must not count them deferred.
 */
const DEFER_PENDING = `WITH ${LEASE_HOLDERS} UPDATE tasks t SET status = 'deferred', updated_at = $1
  WHERE t.job = $2 AND t.run_id = $3 AND t.status = 'pending' AND NOT ${heldByOtherWorker('$4')}`;

/** `holderPid`: the session holding this worker's dataset lock, which its own leases name (none: every lease is another's). */
export function createPgLedger(pool: pg.Pool, holderPid: number | null = null): RunLedger {
  return {
    recordedInvalid: async (job, file) => countByKey((await pool.query<InvalidInputRow>(LEDGER_SQL.recordedInvalid.postgres, [job, file])).rows),
    // Workers planning one job at once upsert the same rows: a deadlock between them is tried again (the batch is idempotent).
    insertPlanned: (tasks, invalid, runId, at) => retryingConflicts(2, () => insertPlanned(pool, tasks, invalid, runId, at)),
    dropStaleInvalid: async (job, runId) => (await pool.query(LEDGER_SQL.dropStaleInvalid.postgres, [job, runId])).rowCount ?? 0,
    otherJobs: (operation, job) => readPg({ client: pool }, otherJobsWithOperationReads(operation, job)),
    async adoptSharedAnswers(filter, others, at) {
      if (others.length === 0) return 0;
      const { rowCount } = await pool.query(`UPDATE tasks SET (status, completed_at, last_error) = (
          SELECT u.status, u.completed_at, u.last_error FROM tasks u WHERE ${SHARED} ORDER BY u.completed_at DESC LIMIT 1),
        last_error_code = NULL, retryable = NULL, updated_at = $6
        WHERE ${RUNNABLE} AND EXISTS (SELECT 1 FROM tasks u WHERE ${SHARED})`, [...filterParams(filter), others, at]);
      return rowCount ?? 0;
    },
    async reopenDue(filter, at) {
      const { rowCount } = await pool.query(`UPDATE tasks SET status = 'pending', updated_at = $5
        WHERE ${RUNNABLE} AND status NOT IN ('pending', 'deferred')`, [...filterParams(filter), at]);
      // The rows just planned must be in the statistics before the claims, or the planner sorts every due task per
      // claim instead of using the id index. A role that does not own the table gets a warning and the old plan.
      await withPgClient(pool, (client) => pipelineTransaction(client, ANALYZE_CLAIMED_COLUMNS));
      return rowCount ?? 0;
    },
    deferPending: async (job, runId, at) => (await pool.query(DEFER_PENDING, [at, job, runId, holderPid])).rowCount ?? 0,
    deferredSince: (job) => readPg({ client: pool }, deferredSinceReads(job)),
    countsByStatus: async (job, runId) => statusCounts((await pool.query<{ status: TaskStatus; n: number }>(LEDGER_SQL.countsByStatus.postgres, [job, runId])).rows),
    async failedByCode(job, runId) {
      const { rows } = await pool.query<{ code: string; n: number }>(LEDGER_SQL.failedByCode.postgres, [job, runId]);
      return Object.fromEntries(rows.map((r) => [r.code, r.n]));
    },
    ownAnswers: (job, runId) => readPg({ client: pool }, ownAnswersReads(job, runId)),
  };
}

async function insertPlanned(pool: pg.Pool, tasks: NewTask[], invalid: InvalidInputRow[], runId: number, at: string): Promise<void> {
  return inPgTransaction(pool, async (client) => {
    for (let i = 0; i < tasks.length; i += TASK_ROWS_PER_STATEMENT) {
      const chunk = tasks.slice(i, i + TASK_ROWS_PER_STATEMENT);
      // Duplicates within one statement would make ON CONFLICT touch a row twice: the input order's last wins.
      const rows = [...new Map(chunk.map((t) => [`${t.inputKey}\0${t.page}`, t])).values()];
      await client.query(`INSERT INTO tasks (job, operation, input_key, page, request_json, input_line, status, attempts, created_at, updated_at, run_id)
        SELECT u.job, u.operation, u.input_key, u.page, u.request_json::jsonb, u.input_line, 'pending', 0, $6, $6, $7
        FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[], $8::int[]) AS u(job, operation, input_key, page, request_json, input_line)
        ON CONFLICT (job, input_key, page) DO UPDATE SET
          run_id = excluded.run_id,
          status = CASE WHEN ${pgRequestChanged('tasks', 'excluded.request_json')} THEN 'pending' ELSE tasks.status END,
          request_json = excluded.request_json,
          operation = excluded.operation`,
      [rows.map((t) => t.job), rows.map((t) => t.operation), rows.map((t) => t.inputKey), rows.map((t) => t.page),
        rows.map((t) => t.requestJson), at, runId, rows.map((t) => t.inputLine)]);
    }
    for (const r of invalid) await client.query(LEDGER_SQL.upsertInvalid.postgres, invalidParams(r, runId, at));
  });
}
