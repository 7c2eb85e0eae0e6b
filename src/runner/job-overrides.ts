import type { Job } from '../jobs/schema.ts';

/** Command-line overrides of every job's settings (`--concurrency`, `--rate`, `--max-credits`, `--reserve`). */
export interface JobOverrides {
  concurrency?: number;
  requestsPerMinute?: number;
  maxCredits?: number;
  reserve?: number;
}

/** The job with the overrides that are set taking the place of its own settings. */
export function applyOverrides(job: Job, o: JobOverrides | undefined): Job {
  if (!o) return job;
  return {
    ...job,
    rate: {
      requestsPerMinute: o.requestsPerMinute ?? job.rate.requestsPerMinute,
      concurrency: o.concurrency ?? job.rate.concurrency,
    },
    credits: {
      reserve: o.reserve ?? job.credits.reserve,
      maxPerRun: o.maxCredits ?? job.credits.maxPerRun,
    },
  };
}
