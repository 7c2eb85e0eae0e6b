/**
 * A job's `keepRawDays`: after the job has run to its end, the raw bodies of its tasks that a newer answer
 * superseded more than that many days ago are dropped (see store/raw-prune.ts for what is always kept). A failure
 * here costs disk, never data: it is logged and the run goes on.
 */
import type { RunStore } from '../store/run-store.ts';
import type { Logger } from './logger.ts';

export async function pruneJobBodies(store: Pick<RunStore, 'pruneJobBodies'>, job: string, keepDays: number, logger: Logger): Promise<void> {
  try {
    const report = await store.pruneJobBodies(job, keepDays);
    if (report.dropped > 0) logger.info('dropped superseded raw bodies', { job, bodies: report.dropped, bytes: report.droppedBytes, keep_days: keepDays });
  } catch (err) {
    logger.warn('could not drop superseded raw bodies', { job, error: err instanceof Error ? err.message : String(err) });
  }
}
