import type { Job } from '../jobs/schema.ts';
import type { Ledger } from '../store/ledger.ts';
import type { Logger } from './logger.ts';
import type { PlanCounts } from './plan-into-ledger.ts';
import { partlyPlannedJobSummary, type JobSummary } from './run-summary.ts';

/**
 * Closes the books of a job whose input the run stopped reading part way (a signal during the plan): the
 * tasks written so far are deferred, as a run stopped during its calls defers what it did not call, and no
 * call is made. The next run reads the whole input again; its upsert keeps one task per input and page.
 */
export function partlyPlanned(job: Job, plan: PlanCounts, ledger: Ledger, runId: number, logger: Logger): JobSummary {
  ledger.deferPending(job.name, runId, new Date().toISOString());
  const deferred = ledger.countsByStatus(job.name, runId).deferred;
  logger.warn('job stopped while reading its input: the next run reads it again', {
    job: job.name, tasks_read: plan.tasks, invalid: plan.invalid, deferred,
  });
  return partlyPlannedJobSummary(job, plan, deferred);
}
