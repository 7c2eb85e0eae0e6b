/**
 * The `netingest` package: `defineJob` for job files and a small API for scripts (docs/api.md). Job files import it, so
 * it stays light: each function imports its implementation when first called.
 */
import type { Job, JobDefinition } from './jobs/schema.ts';
import type { RunOptions } from './runner/run-options.ts';
import type { RunSummary } from './runner/run-summary.ts';
import type { PlanReport } from './runner/plan-report.ts';
import type { ExportResult, ExportSqlOptions, ExportTableOptions } from './export/export-table.ts';
import type { DatasetAt } from './store/readers/dataset.ts';

export type { Job, JobDefinition } from './jobs/schema.ts';
export type { RunSummary, JobSummary } from './runner/run-summary.ts';
export type { PlanReport } from './runner/plan-report.ts';
export type { ExportResult, ExportSqlOptions, ExportTableOptions } from './export/export-table.ts';
export type { Dataset, DatasetAt, PgDataset, QueryParams, SqliteDataset } from './store/readers/dataset.ts';
export type { Logger } from './runner/logger.ts';
export { NetingestError, RunNotRecordedError, UsageError } from './errors.ts';

/** Types a job definition in a `.ts` job file (typos in field names are compile errors); returns it unchanged. */
export function defineJob(def: JobDefinition): JobDefinition {
  return def;
}

/** A job file's path (`.json` or `.ts`, relative to the current directory) or a job loaded by loadJob(). */
export type JobSource = string | Job;

/** Loads, checks and resolves one job file; throws a JobFileError naming the file, line and field. */
export async function loadJob(path: string): Promise<Job> {
  return (await import('./jobs/load.ts')).loadJob(path);
}

/** Options of run(): those of the engine (RunOptions), with jobs given as files and the API from the environment. */
export interface RunJobsOptions extends Omit<RunOptions, 'dbPath' | 'jobs' | 'api' | 'exitCodeOf' | 'brokenJobFiles'> {
  /** The dataset to fill, created when missing: a SQLite file or a postgres:// URL. */
  db: string;
  jobs: readonly JobSource[];
  /** Default: NETINGEST_API_URL and NETINGEST_API_TOKEN, as the CLI reads them. */
  api?: { baseUrl: string; token: string };
}

/** What run() resolves to: the summary `netingest run --json` prints, and the exit code the CLI would end with. */
export interface RunResult {
  summary: RunSummary;
  exitCode: number;
}

/** Runs jobs as `netingest run` does: calls the API for every due task and stores the results. */
export async function run(options: RunJobsOptions): Promise<RunResult> {
  const [{ runJobs }, { resolveApiConfig }, { exitCodeForRun }] = await Promise.all([
    import('./runner/run-jobs.ts'),
    import('./api/config.ts'),
    import('./cli/exit-codes.ts'),
  ]);
  const { db, jobs, api, ...rest } = options;
  const summary = await runJobs({
    ...rest,
    dbPath: db,
    jobs: await resolveJobs(jobs),
    api: api ?? resolveApiConfig(),
    exitCodeOf: exitCodeForRun,
  });
  return { summary, exitCode: exitCodeForRun(summary) };
}

export interface PlanOptions {
  /** The database a run would use, a SQLite file or a postgres:// URL; read if it exists, never created. */
  db: string;
  /** As if the run had --refresh. Default false. */
  refresh?: boolean;
}

/** What a run of `job` would do and cost, as `netingest plan` reports it; no API call, nothing written. */
export async function plan(job: JobSource, options: PlanOptions): Promise<PlanReport> {
  const { planReport } = await import('./runner/plan-report.ts');
  const [resolved] = await resolveJobs([job]);
  return planReport(resolved!, options.db, options.refresh ?? false);
}

/**
 * Opens the dataset read-only for your own SQL; close it when done. `db` defaults as the CLI's --db does. `query()`
 * reads on both engines; SQLite's synchronous `all()` is not on PostgreSQL (check `engine`).
 */
export async function openDataset<Db extends string | undefined = undefined>(db?: Db): Promise<DatasetAt<Db>> {
  const { openDataset: open } = await import('./store/readers/dataset.ts');
  // The engine is the value's: DatasetAt only says what the argument's type already tells of it.
  return (await open(db)) as DatasetAt<Db>;
}

/** Exports a table or view (`table`) as `netingest export` does: CSV or JSON Lines to `out` or `stream`. */
export async function exportTable(options: ExportTableOptions): Promise<ExportResult> {
  return (await import('./export/export-table.ts')).exportTable(options);
}

/** Exports the rows of one read-only SELECT (`sql`), as `netingest export --sql` does. */
export async function exportSql(options: ExportSqlOptions): Promise<ExportResult> {
  return (await import('./export/export-table.ts')).exportSql(options);
}

async function resolveJobs(sources: readonly JobSource[]): Promise<Job[]> {
  const jobs: Job[] = [];
  for (const source of sources) jobs.push(typeof source === 'string' ? await loadJob(source) : source);
  return jobs;
}
