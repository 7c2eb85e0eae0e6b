import type { Database } from './open.ts';
import type { RunStatus } from './tables.ts';
import type { RunStart } from './run-store.ts';
import { rows } from './read-steps.ts';
import { sql, param, named, literal, fragment, statementOf } from '../statement.ts';

export interface RunEnd {
  status: RunStatus;
  endedAt: string;
  creditsAtStart: number | null;
  creditsAtEnd: number | null;
  creditsSpent: number | null;
  tasksTotal: number;
  tasksDone: number;
  tasksNotFound: number;
  tasksFailed: number;
  tasksDeferred: number;
  invalidRows: number;
  calls: number;
  exitCode: number | null;
  error: string | null;
  /** Each worked job's calls per minute, as the run used them (`runs.job_rates`); null when no job was worked. */
  jobRates: Readonly<Record<string, number>> | null;
}

/** `runs.job_rates` as JSON text, keys in jsonb's order (shorter, then by bytes): both engines export alike. */
export function jobRatesJson(rates: RunEnd['jobRates']): string | null {
  if (rates === null) return null;
  const bytes = (key: string) => Buffer.from(key, 'utf8');
  const keys = Object.keys(rates).sort((a, b) => bytes(a).length - bytes(b).length || Buffer.compare(bytes(a), bytes(b)));
  return JSON.stringify(Object.fromEntries(keys.map((key) => [key, rates[key]])));
}

/** A row of `runs` as `status` lists it: the figures its end writes (none yet while it runs), and its start. */
export type RecentRun = Omit<RunEnd, 'endedAt' | 'creditsAtStart' | 'jobRates'> & { id: number; jobs: string; startedAt: string; endedAt: string | null };

/** The columns of a RecentRun, for the readers that list runs (status, report). */
export const RECENT_RUN_COLUMNS = `id, jobs, started_at AS "startedAt", ended_at AS "endedAt", status, credits_spent AS "creditsSpent",
  credits_at_end AS "creditsAtEnd", tasks_total AS "tasksTotal", tasks_done AS "tasksDone", tasks_not_found AS "tasksNotFound",
  tasks_failed AS "tasksFailed", tasks_deferred AS "tasksDeferred", invalid_rows AS "invalidRows", calls, exit_code AS "exitCode", error`;

const RECENT_RUNS = sql`SELECT ${literal(RECENT_RUN_COLUMNS)} FROM runs ORDER BY id DESC LIMIT ${param}`;

/**
 * The ids of run `anchor`'s night: it and the runs whose time overlaps it, one after another (workers sharing a job on
 * PostgreSQL are one night's run; SQLite's runs never overlap). A run still going (no end) overlaps what follows.
 */
export const nightRunIds = (anchor: string | typeof param) => fragment([`WITH RECURSIVE night(id, started_at, ended_at) AS (
    SELECT id, started_at, ended_at FROM runs WHERE id = `, anchor, `
    UNION
    SELECT r.id, r.started_at, r.ended_at FROM runs r JOIN night n
      ON (n.ended_at IS NULL OR r.started_at <= n.ended_at) AND (r.ended_at IS NULL OR n.started_at <= r.ended_at)
  ) SELECT id FROM night`]);

/** The last run's night (`changes --since last`, the report's headline): no parameter, the same text on both engines. */
export const LAST_RUN_IDS = statementOf([nightRunIds('(SELECT max(id) FROM runs)')]).sqlite;

/** A run's end, named parameters (endRunParams), for both engines. */
export const END_RUN_SQL = sql`UPDATE runs SET status = ${named('status')}, ended_at = ${named('endedAt')},
  credits_at_start = ${named('creditsAtStart')}, credits_at_end = ${named('creditsAtEnd')}, credits_spent = ${named('creditsSpent')},
  tasks_total = ${named('tasksTotal')}, tasks_done = ${named('tasksDone')}, tasks_not_found = ${named('tasksNotFound')},
  tasks_failed = ${named('tasksFailed')}, tasks_deferred = ${named('tasksDeferred')}, invalid_rows = ${named('invalidRows')},
  calls = ${named('calls')}, exit_code = ${named('exitCode')}, error = ${named('error')}, job_rates = ${named('jobRates')} WHERE id = ${named('id')}`;

export const endRunParams = (id: number, fields: RunEnd) => ({ id, ...fields, jobRates: jobRatesJson(fields.jobRates) });

/** The `runs` table: one row per run, written when it starts and when it ends. */
export function createRunLog(database: Database) {
  const { sqlite } = database;
  const start = sqlite.prepare(`INSERT INTO runs (jobs, started_at, status, pid, host, refresh) VALUES (?, ?, 'running', ?, ?, ?)`);
  const end = sqlite.prepare(END_RUN_SQL.sqlite);
  return {
    start(run: Omit<RunStart, 'sharedRunKey'>): number {
      return Number(start.run(JSON.stringify(run.jobs), run.startedAt, run.pid, run.host, run.refresh ? 1 : 0).lastInsertRowid);
    },
    end(id: number, fields: RunEnd): void {
      end.run(endRunParams(id, fields));
    },
  };
}

/** The last `limit` runs, newest first, as Reads (read-steps.ts): the same on both engines. */
export function* recentRunsReads(limit: number) {
  return yield* rows<RecentRun>(RECENT_RUNS, [limit]);
}
