import type { Job } from '../jobs/schema.ts';
import type { Ledger } from '../store/ledger.ts';
import { deferRefresh } from './plan-into-ledger.ts';
import { partlyPlanned } from './partly-planned-job.ts';
import type { Logger } from './logger.ts';
import type { StopReason } from './run-stop.ts';
import { notReachedJobSummary, type JobSummary } from './run-summary.ts';

/** What notReachedJob() needs of the run. */
export interface NotReachedContext {
  ledger: Ledger;
  runId: number;
  /** The run's --refresh, and its start: answers settled before it are the ones the refresh asked for. */
  refresh: boolean;
  startedAt: string;
  stopReason: StopReason;
  /**
   * The user's signal (SIGINT/SIGTERM). The run's stop cannot tell of it here: it was set first, for
   * `stopReason`, and keeps that reason.
   */
  interrupt: AbortSignal | undefined;
  logger: Logger;
}

/** A job the run did not reach: its summary, and whether the user's signal kept its refresh from being deferred. */
export interface NotReached {
  summary: JobSummary;
  interrupted: boolean;
}

/**
 * Summarizes a job the run stopped before reaching; its tasks wait for the next run. Under --refresh the refresh
 * is written into the ledger too (deferRefresh), so that the next run, with or without --refresh, refreshes
 * this job as well. Not after an interrupt (the user is waiting for the exit, and reading a large input takes
 * seconds), even one that comes while the input is being read, nor after a fatal error (the dataset itself may
 * be what failed).
 */
export async function notReachedJob(job: Job, ctx: NotReachedContext): Promise<NotReached> {
  if (!ctx.refresh || ctx.stopReason === 'interrupted' || ctx.stopReason === 'fatal') return { summary: notReachedJobSummary(job), interrupted: false };
  if (ctx.interrupt?.aborted) return { summary: notReachedJobSummary(job), interrupted: true };
  try {
    const { plan, deferred } = await deferRefresh(job, ctx.ledger, ctx.runId, ctx.startedAt, ctx.interrupt);
    // Its tasks written so far are deferred like those of any read a signal cut short; its refresh is not.
    if (!plan.complete) return { summary: partlyPlanned(job, plan, ctx.ledger, ctx.runId, ctx.logger), interrupted: true };
    ctx.logger.info('job not reached: its refresh is deferred to the next run', { job: job.name, deferred });
    return { summary: notReachedJobSummary(job, deferred), interrupted: false };
  } catch (err) {
    // The next run reports an unusable input; the refresh of this job is then the user's to ask again.
    ctx.logger.warn('job not reached, and its refresh could not be deferred', { job: job.name, error: err instanceof Error ? err.message : String(err) });
    return { summary: notReachedJobSummary(job), interrupted: false };
  }
}
