import { RunNotRecordedError } from '../errors.ts';
import { closeRun } from './close-run.ts';
import { openRun } from './open-run.ts';
import { brokenJobFile, runOneJob, type JobResult } from './run-one-job.ts';
import type { RunOptions } from './run-options.ts';
import type { RunSummary } from './run-summary.ts';

export type { RunSummary } from './run-summary.ts';
export { RUN_DEFAULTS, type RunOptions } from './run-options.ts';

/**
 * Runs jobs one after another under the database's run lock, stopping early (the rest deferred) on credits, a throttle
 * past its cap, a signal or a refused token. Unusable jobs are skipped; if none could run, their errors are thrown.
 */
export async function runJobs(options: RunOptions): Promise<RunSummary> {
  const run = await openRun(options);
  try {
    const results: JobResult[] = (options.brokenJobFiles ?? []).map((err) => brokenJobFile(run.logger, err));
    for (const job of options.jobs) {
      const result = await runOneJob(run, job);
      results.push(result);
      // Its error stopped the run: the jobs after it are not listed.
      if (result.summary === null) break;
    }
    return await closeRun(run, results);
  } catch (err) {
    // Already the database's error, in the words describeError gave it, with the summary the command prints.
    if (err instanceof RunNotRecordedError) throw err;
    throw run.store.describeError(err);
  } finally {
    await run.close();
  }
}
