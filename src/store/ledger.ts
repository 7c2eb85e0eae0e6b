import type { Connection } from './connection.ts';
import { readSync, rows, value, type Reads } from './read-steps.ts';
import type { InvalidInputRow, TaskStatus } from './tables.ts';
import { sql, param, named, dialect } from '../statement.ts';
import type { Settlement } from './outcome-ops.ts';
import { nightRunIds } from './runs.ts';

export interface TaskRow {
  id: number;
  job: string;
  operation: string;
  inputKey: string;
  page: number;
  requestJson: string;
  status: TaskStatus;
}

/** A planned unit of work (input x page), before it is in the ledger. */
export interface NewTask extends Omit<TaskRow, 'id' | 'status'> {
  inputLine: number;
}

export type { InvalidInputRow };

/** What tells one invalid row from another across runs: what was wrong with it, wherever it is in the file. */
export function invalidRowKey(row: Pick<InvalidInputRow, 'field' | 'value' | 'reason'>): string {
  return JSON.stringify([row.field, row.value, row.reason]);
}

export function countByKey(rows: ReadonlyArray<Pick<InvalidInputRow, 'field' | 'value' | 'reason'>>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of rows) {
    const key = invalidRowKey(r);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/**
 * Which settled tasks are due again: done or not found before `freshSince` (under --refresh, the run's start:
 * what the run itself settled stays settled), and with `refresh` those that failed for good too.
 */
export interface DueRule {
  job: string;
  freshSince: string;
  refresh: boolean;
}

/** The tasks of one run's job that the rule makes due. */
export interface RunnableFilter extends DueRule {
  runId: number;
}

/** Where a statement gives the due rule its values (SQL expressions in that statement's own dialect). */
export interface DueValues {
  /** Table alias with its dot (`t.`), or '' for the table's own columns. */
  at: string;
  /** True under --refresh: `@refresh = 1` (SQLite), `$4::boolean` (PostgreSQL). */
  refresh: string;
  /** Answers older than this are due again. */
  freshSince: string;
  /** With it, a failed task is due only when last tried before it (a claim leaves another worker's failure be). */
  failedBefore?: string;
}

/** Whether a task row is due: the one definition, applied by RUNNABLE, `plan` (dueState) and PostgreSQL's claims. */
export function dueRule(v: DueValues): string {
  const failedBefore = v.failedBefore ? ` AND (${v.failedBefore} IS NULL OR ${v.at}updated_at < ${v.failedBefore})` : '';
  return `(${v.at}status IN ('pending', 'deferred')
  OR (${v.at}status = 'failed' AND (${v.at}retryable = 1 OR ${v.refresh})${failedBefore})
  OR (${v.at}status IN ('done', 'not_found') AND (${v.at}completed_at IS NULL OR ${v.at}completed_at < ${v.freshSince})))`;
}

const DUE = dueRule({ at: '', refresh: '@refresh = 1', freshSince: '@freshSince' });

const RUNNABLE = `job = @job AND run_id = @runId AND ${DUE}`;

/** Planning a task again with another request text sets it back to pending (the upsert), whatever its state. */
const requestChanged = (planned: string) => `tasks.request_json <> ${planned}`;

/** How the next run takes a task: new, due (to call, or to take from another job), fresh, or failed for good. */
export type DueState = 'new' | 'due' | 'fresh' | 'failed';

/**
 * The same lookup as `of` (the `tasks` row, or named parameters) settled by a job of `@others` (a JSON array) at or
 * after `@answeredSince`: one probe of the unique index per job name.
 */
const sharedAnswer = (of: 'tasks.' | '@') => `u.job IN (SELECT value FROM json_each(@others))
  AND u.input_key = ${of === '@' ? '@inputKey' : 'tasks.input_key'} AND u.page = ${of}page
  AND u.operation = ${of}operation AND u.request_json = ${of === '@' ? '@requestJson' : 'tasks.request_json'}
  AND u.status IN ('done', 'not_found') AND u.completed_at >= @answeredSince`;

/** Ledger statements the same on both engines; counts cast to integer, as node-postgres gives a bigint as text. */
export const LEDGER_SQL = {
  upsertInvalid: sql`INSERT INTO invalid_inputs (job, file, line, field, value, reason, run_id, created_at)
    VALUES (${param}, ${param}, ${param}, ${param}, ${param}, ${param}, ${param}, ${param})
    ON CONFLICT (job, file, line) DO UPDATE SET field = excluded.field, value = excluded.value,
      reason = excluded.reason, run_id = excluded.run_id`,
  // Rows the job's latest complete read of its input did not find again (fixed, removed, or moved to another line).
  dropStaleInvalid: sql`DELETE FROM invalid_inputs WHERE job = ${param} AND run_id <> ${param}`,
  recordedInvalid: sql`SELECT field, value, reason FROM invalid_inputs WHERE job = ${param} AND file = ${param}`,
  // SQLite's; PostgreSQL's (pg-ledger.ts) also leaves the inputs another live worker holds.
  deferPending: sql`UPDATE tasks SET status = 'deferred', updated_at = ${param} WHERE job = ${param} AND run_id = ${param} AND status = 'pending'`,
  // Read before the job is planned again (planning stamps its tasks with the new run). A killed --refresh run defers
  // nothing: its tasks stay pending, and once it is closed as abandoned they are resumed as a stopped run's deferred ones are.
  deferredSince: sql`SELECT min(r.started_at) AS since FROM tasks t JOIN runs r ON r.id = t.run_id WHERE t.job = ${param}
    AND (t.status = 'deferred' OR (t.status = 'pending' AND r.status = 'abandoned' AND r.refresh = 1))`,
  // The latest ended runs that listed the job, newest first (a run still going, the one planning among them, is not one).
  latestRunsOfJob: sql`SELECT r.started_at AS "startedAt", r.status, r.refresh FROM runs r WHERE r.status <> 'running'
    AND EXISTS (SELECT 1 FROM ${dialect({ sqlite: 'json_each(r.jobs) AS j', postgres: 'jsonb_array_elements_text(r.jobs) AS j(value)' })}
      WHERE j.value = ${param}) ORDER BY r.id DESC LIMIT ${param}`,
  // A run's tasks are those stamped by its night: workers sharing a job re-stamp each other's as they plan and settle.
  countsByStatus: sql`SELECT status, CAST(count(*) AS INTEGER) AS n FROM tasks WHERE job = ${param} AND run_id IN (${nightRunIds(param)}) GROUP BY status`,
  failedByCode: sql`SELECT coalesce(last_error_code, 'UNKNOWN') AS code, CAST(count(*) AS INTEGER) AS n FROM tasks
    WHERE job = ${param} AND run_id IN (${nightRunIds(param)}) AND status = 'failed' GROUP BY 1`,
  // Named (markRecovered's object): only a task whose latest outcome is this very body, failed with its code.
  markRecovered: sql`UPDATE tasks SET status = 'done', last_error_code = NULL, last_error = NULL, retryable = NULL,
    updated_at = ${named('at')}, completed_at = ${named('receivedAt')} WHERE id = ${named('id')} AND status = 'failed'
    AND last_error_code = ${named('code')} AND NOT EXISTS (SELECT 1 FROM raw_responses r WHERE r.task_id = ${named('id')} AND r.id > ${named('rawId')})`,
};

/** The values of an invalid row's upsert (LEDGER_SQL.upsertInvalid). */
export const invalidParams = (r: InvalidInputRow, runId: number, at: string) => [r.job, r.file, r.line, r.field, r.value, r.reason, runId, at];

/**
 * When the refresh of the job that a --refresh run resumes began (ISO): the earliest run that left its tasks deferred
 * (or, a killed --refresh, pending), or the killed --refresh runs that last listed it (killedRefreshSinceReads); null if none.
 */
export function* deferredSinceReads(job: string): Reads<string | null> {
  // ISO text on both engines: the store's readers take PostgreSQL's timestamptz as SQLite holds times.
  const deferred = (yield* value<string | null>(LEDGER_SQL.deferredSince, [job])) ?? null;
  const killed = yield* killedRefreshSinceReads(job);
  return deferred === null || (killed !== null && killed < deferred) ? killed : deferred;
}

/** Killed --refresh runs in a row looked back over: a longer chain of kills is refreshed again (paid, nothing skipped). */
const KILLED_REFRESH_CHAIN = 20;

/**
 * When the latest runs that listed the job began, while each was a --refresh run killed (abandoned): a job such a run
 * finished has no task left pending, and each run again resumed the one before. Null when the latest was another run.
 */
function* killedRefreshSinceReads(job: string): Reads<string | null> {
  const runs = yield* rows<{ startedAt: string; status: string; refresh: number | null }>(LEDGER_SQL.latestRunsOfJob, [job, KILLED_REFRESH_CHAIN]);
  let since: string | null = null;
  for (const run of runs) {
    if (run.status !== 'abandoned' || run.refresh !== 1) break;
    since = run.startedAt;
  }
  return since;
}

/** Of a job's done and not-found tasks, those whose answer the run's own calls gave (JobSummary's `thisWorker`). */
export type OwnAnswers = { done: number; notFound: number };

// By the call whose time the answer holds: every worker's planning re-stamps tasks.run_id; a task answered twice is the later's.
const OWN_ANSWERS = sql`SELECT t.status, CAST(count(*) AS INTEGER) AS n FROM api_calls a JOIN tasks t ON t.id = a.task_id
  WHERE a.run_id = ${param} AND t.job = ${param} AND t.status IN ('done', 'not_found') AND t.completed_at = a.at GROUP BY t.status`;

/** What run `runId`'s calls answered of the job's tasks; null when its night is itself (every SQLite run): nothing to tell apart. */
export function* ownAnswersReads(job: string, runId: number): Reads<OwnAnswers | null> {
  const runs = yield* value<number>(sql`SELECT CAST(count(*) AS INTEGER) FROM runs WHERE id IN (${nightRunIds(param)})`, [runId]);
  if ((runs ?? 0) < 2) return null;
  const counts = statusCounts(yield* rows<{ status: TaskStatus; n: number }>(OWN_ANSWERS, [runId, job]));
  return { done: counts.done, notFound: counts.not_found };
}

/** countsByStatus's rows as counts of every status. */
export function statusCounts(rows: ReadonlyArray<{ status: TaskStatus; n: number }>): Record<TaskStatus, number> {
  const counts: Record<TaskStatus, number> = { pending: 0, done: 0, not_found: 0, failed: 0, deferred: 0 };
  for (const r of rows) counts[r.status] = r.n;
  return counts;
}

/** Every job name in the ledger, by a skip-scan of the job index: one probe per name, however many tasks. */
export const JOB_NAMES_SQL = `WITH RECURSIVE names(job) AS (
    SELECT (SELECT min(job) FROM tasks)
    UNION ALL SELECT (SELECT min(job) FROM tasks WHERE job > names.job) FROM names WHERE names.job IS NOT NULL
  ) SELECT job FROM names WHERE job IS NOT NULL`;

/** Other jobs than `own` with tasks of `operation`: JOB_NAMES_SQL, then one EXISTS per name checks its operation. */
export function* otherJobsWithOperationReads(operation: string, own: string): Reads<string[]> {
  const names = yield* rows<{ job: string }>(JOB_NAMES_SQL);
  const others: string[] = [];
  for (const { job } of names) {
    if (job === own) continue;
    const has = yield* value<number>(sql`SELECT EXISTS (SELECT 1 FROM tasks WHERE job = ${param} AND operation = ${param})`, [job, operation]);
    if (has === 1) others.push(job);
  }
  return others;
}

/** One task's values in the upsert: taskParams' placeholders. */
const TASK_VALUES = "(?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)";
const taskParams = (t: NewTask, at: string, runId: number) =>
  [t.job, t.operation, t.inputKey, t.page, t.requestJson, t.inputLine, at, at, runId];
/** Task rows per multi-row upsert statement (the rest of a batch goes one by one). */
const TASK_ROWS_PER_STATEMENT = 50;

/** The task ledger: every unit of work is a row before any call is made, and its status says what is left. */
export function createLedger(database: Connection) {
  const { sqlite } = database;
  // A task planned again is stamped with the run that planned it (inputs removed from the CSV stay alone); a changed
  // request makes it due again. Positional, several rows a statement: named binding and a step per row slowed the fill.
  const upsertTasks = (rows: number) =>
    sqlite.prepare(`INSERT INTO tasks (job, operation, input_key, page, request_json, input_line, status, attempts, created_at, updated_at, run_id)
    VALUES ${Array.from({ length: rows }, () => TASK_VALUES).join(', ')}
    ON CONFLICT (job, input_key, page) DO UPDATE SET
      run_id = excluded.run_id,
      status = CASE WHEN ${requestChanged('excluded.request_json')} THEN 'pending' ELSE tasks.status END,
      request_json = excluded.request_json,
      operation = excluded.operation`);
  const upsertTask = upsertTasks(1);
  const upsertTaskChunk = upsertTasks(TASK_ROWS_PER_STATEMENT);
  const upsertInvalid = sqlite.prepare(LEDGER_SQL.upsertInvalid.sqlite);
  const insertBatch = sqlite.transaction((tasks: NewTask[], invalid: InvalidInputRow[], runId: number, at: string) => {
    // Rows go in input order (a conflict within one statement resolves as it would row by row).
    let i = 0;
    for (; i + TASK_ROWS_PER_STATEMENT <= tasks.length; i += TASK_ROWS_PER_STATEMENT) {
      upsertTaskChunk.run(tasks.slice(i, i + TASK_ROWS_PER_STATEMENT).flatMap((t) => taskParams(t, at, runId)));
    }
    for (; i < tasks.length; i++) upsertTask.run(taskParams(tasks[i]!, at, runId));
    for (const r of invalid) upsertInvalid.run(invalidParams(r, runId, at));
  });
  const deleteStaleInvalid = sqlite.prepare(LEDGER_SQL.dropStaleInvalid.sqlite);
  const selectRecordedInvalid = sqlite.prepare(LEDGER_SQL.recordedInvalid.sqlite);
  const selectRunnable = sqlite.prepare(`SELECT id, job, operation, input_key AS inputKey, page, request_json AS requestJson, status
    FROM tasks INDEXED BY tasks_job_id_idx WHERE ${RUNNABLE} AND id > @afterId ORDER BY id LIMIT @limit`);
  // Not due and not pending: a settled answer still fresh, or a failure not retried.
  const selectDueState = sqlite.prepare(`SELECT CASE WHEN ${requestChanged('@requestJson')} OR ${DUE} THEN 'due'
      WHEN status = 'failed' THEN 'failed' ELSE 'fresh' END
    FROM tasks WHERE job = @job AND input_key = @inputKey AND page = @page`).pluck();
  // Positional: binding by name looks each parameter up in an object, and this runs once per answer.
  const settle = sqlite.prepare(`UPDATE tasks SET status = ?, attempts = attempts + ?, last_error_code = ?, last_error = ?,
    retryable = ?, updated_at = ?, completed_at = CASE WHEN ? = 'failed' THEN NULL ELSE ? END, run_id = ? WHERE id = ?`);
  const recovered = sqlite.prepare(LEDGER_SQL.markRecovered.sqlite);
  // The answer's own time is kept, so freshness and enrich's latest answers run from when it was received.
  const adopt = sqlite.prepare(`UPDATE tasks SET (status, completed_at, last_error) = (
      SELECT u.status, u.completed_at, u.last_error FROM tasks u WHERE ${sharedAnswer('tasks.')} ORDER BY u.completed_at DESC LIMIT 1),
    last_error_code = NULL, retryable = NULL, updated_at = @at
    WHERE ${RUNNABLE} AND EXISTS (SELECT 1 FROM tasks u WHERE ${sharedAnswer('tasks.')})`);
  const findShared = sqlite.prepare(`SELECT EXISTS (SELECT 1 FROM tasks u WHERE ${sharedAnswer('@')})`).pluck();
  const reopen = sqlite.prepare(`UPDATE tasks SET status = 'pending', updated_at = @at
    WHERE ${RUNNABLE} AND status NOT IN ('pending', 'deferred')`);
  const defer = sqlite.prepare(LEDGER_SQL.deferPending.sqlite);
  const countsByStatus = sqlite.prepare(LEDGER_SQL.countsByStatus.sqlite);
  const failedByCode = sqlite.prepare(LEDGER_SQL.failedByCode.sqlite);

  return {
    /** Writes planned tasks and invalid rows in one transaction (call it with batches of a few thousand). */
    insertPlanned(tasks: NewTask[], invalid: InvalidInputRow[], runId: number, at: string): void {
      insertBatch(tasks, invalid, runId, at);
    },
    /** Drops the job's invalid rows this run's read did not report again. Call only once the whole input was read. */
    dropStaleInvalid(job: string, runId: number): number {
      return deleteStaleInvalid.run(job, runId).changes;
    },
    /** The job's invalid rows by invalidRowKey() (not by line: rows shift). Read it before the first insertPlanned. */
    recordedInvalid(job: string, file: string): Map<string, number> {
      return countByKey(selectRecordedInvalid.all(job, file) as InvalidInputRow[]);
    },
    /** The next runnable tasks after `afterId`, in ledger order (input order, pages together). */
    runnableAfter(filter: RunnableFilter, afterId: number, limit: number): TaskRow[] {
      return selectRunnable.all({ ...filterParams(filter), afterId, limit }) as TaskRow[];
    },
    /** What a run planning this task now would do with it, by runnableAfter's rule (for `plan`: it writes nothing). */
    dueState(rule: DueRule, task: Pick<TaskRow, 'inputKey' | 'page' | 'requestJson'>): DueState {
      const state = selectDueState.get({ job: rule.job, freshSince: rule.freshSince, refresh: rule.refresh ? 1 : 0, ...task });
      return (state as DueState | undefined) ?? 'new';
    },
    /** Writes a task's outcome (outcome-ops.ts's settlementOf) for run `runId`. */
    settle(s: Settlement, runId: number): void {
      settle.run(s.status, s.attempts, s.code, s.message, s.retryable, s.at, s.status, s.at, runId, s.id);
    },
    /** Sets done a task that failed on a body reprocess has now written (LEDGER_SQL.markRecovered); completed_at: the receipt. */
    markRecovered(id: number, rawId: number, code: string, receivedAt: string, at: string): boolean {
      return recovered.run({ id, rawId, code, receivedAt, at }).changes > 0;
    },
    /** Names of the other jobs in the ledger with tasks of `operation`: those whose answers a job can share. */
    otherJobs(operation: string, job: string): string[] {
      return readSync(sqlite, otherJobsWithOperationReads(operation, job));
    },
    /** Settles due tasks a job of `others` answered (same lookup, since `freshSince`) with that answer, not paying again; before reopenDue. */
    adoptSharedAnswers(filter: RunnableFilter, others: readonly string[], at: string): number {
      if (others.length === 0) return 0;
      return adopt.run({ ...filterParams(filter), others: JSON.stringify(others), answeredSince: filter.freshSince, at }).changes;
    },
    /** Whether another job (of `others`) answered this lookup at or after `answeredSince` (for `plan`). */
    hasSharedAnswer(task: Pick<TaskRow, 'operation' | 'inputKey' | 'page' | 'requestJson'>, others: readonly string[], answeredSince: string): boolean {
      if (others.length === 0) return false;
      return findShared.get({ ...task, others: JSON.stringify(others), answeredSince }) === 1;
    },
    /**
     * Sets due tasks an earlier run settled back to pending (their results stay till replaced), so the ledger holds the
     * decision to call again: a run stopping first defers them, the next resumes, and nothing refreshed is paid twice.
     */
    reopenDue(filter: RunnableFilter, at: string): number {
      return reopen.run({ ...filterParams(filter), at }).changes;
    },
    /** Marks every task of the job still pending in this run as deferred to the next run. */
    deferPending(job: string, runId: number, at: string): number {
      return defer.run(at, job, runId).changes;
    },
    deferredSince(job: string): string | null {
      return readSync(sqlite, deferredSinceReads(job));
    },
    /** Status counts of the job's tasks this run (with the runs of its night) planned or settled. */
    countsByStatus(job: string, runId: number): Record<TaskStatus, number> {
      return statusCounts(countsByStatus.all(job, runId) as Array<{ status: TaskStatus; n: number }>);
    },
    /** countsByStatus' failed tasks by the code of their last error. */
    failedByCode(job: string, runId: number): Record<string, number> {
      return Object.fromEntries((failedByCode.all(job, runId) as Array<{ code: string; n: number }>).map((r) => [r.code, r.n]));
    },
    ownAnswers: (job: string, runId: number): OwnAnswers | null => readSync(sqlite, ownAnswersReads(job, runId)),
  };
}

export type Ledger = ReturnType<typeof createLedger>;

function filterParams(f: RunnableFilter) {
  return { job: f.job, runId: f.runId, freshSince: f.freshSince, refresh: f.refresh ? 1 : 0 };
}
