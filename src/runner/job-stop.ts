import type { CreditGuard } from './credit-guard.ts';
import { RunStop } from './run-stop.ts';

/** The stop switch of one job of a run, and how to unhook it from the run's once the job is over. */
export interface JobStop {
  stop: RunStop;
  release(): void;
}

/**
 * A stop switch for one job that the run's stop also throws (a signal, an outage, a failed write). The job's
 * executor stops it; `settleJobStop` then decides whether that stop is the run's too.
 */
export function jobStopOf(run: RunStop): JobStop {
  const stop = new RunStop();
  const follow = () => stop.stop(run.reason!, run.error);
  if (run.reason) follow();
  else run.signal.addEventListener('abort', follow, { once: true });
  return { stop, release: () => run.signal.removeEventListener('abort', follow) };
}

/**
 * After a job: a stop on the job's own `credits.maxPerRun` ends that job only (its rest is deferred), so the jobs
 * after it, whose own caps may leave room, still run instead of waiting behind it night after night. Any other
 * stop (reserve, 402, throttle, auth...) concerns the whole account or service and stops the run. Returns
 * whether the job stopped on its cap.
 */
export function settleJobStop(job: RunStop, run: RunStop, guard: CreditGuard): boolean {
  if (!job.reason || run.reason) return false;
  if (job.reason === 'credits' && guard.stopped === 'max-per-run') return true;
  run.stop(job.reason, job.error);
  return false;
}
