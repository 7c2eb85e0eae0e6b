/**
 * `netingest plan` over several jobs: each job's report (plan-report.ts), in order; a job whose job file or
 * input file cannot be used is set aside, as a run skips it, and the others are planned.
 */
import type { Job } from '../jobs/schema.ts';
import { isJobUnusable } from '../jobs/job-error.ts';
import type { UsageError } from '../errors.ts';
import { planReport, type PlanReport } from './plan-report.ts';

/** Options of planJobs(). */
export interface PlanJobsOptions {
  /** The database a run would use (a SQLite file or a postgres:// URL); read if it exists, never created. */
  db: string;
  /** As if the run had --refresh. */
  refresh: boolean;
  /** The balance the service's free credit check gave now, put in every report; null when not asked. */
  liveBalance: number | null;
  /** Called with each report as soon as it is made (the command prints it then). */
  onReport?: (report: PlanReport, job: Job) => void;
  /** Told, once, why the dataset holds nothing yet (a PostgreSQL database with no netingest schema). */
  onNothingRan?: (why: string) => void;
}

/** What planJobs() found. */
export interface PlannedJobs {
  reports: PlanReport[];
  /** The jobs reported, in order. */
  planned: Job[];
  /** Why each of the others could not be planned. */
  unusable: UsageError[];
}

/** Plans every job of `jobs`; an error other than an unusable job's stops it. */
export async function planJobs(jobs: readonly Job[], options: PlanJobsOptions): Promise<PlannedJobs> {
  const found: PlannedJobs = { reports: [], planned: [], unusable: [] };
  let told = false;
  const onNothingRan = (why: string) => {
    if (!told) options.onNothingRan?.(why);
    told = true;
  };
  for (const job of jobs) {
    let report: PlanReport;
    try {
      report = await planReport(job, options.db, options.refresh, { onNothingRan });
    } catch (err) {
      if (!isJobUnusable(err)) throw err;
      found.unusable.push(err);
      continue;
    }
    report.liveBalance = options.liveBalance;
    found.reports.push(report);
    found.planned.push(job);
    options.onReport?.(report, job);
  }
  return found;
}
