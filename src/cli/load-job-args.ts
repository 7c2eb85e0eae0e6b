import { UsageError } from '../errors.ts';
import { listJobFiles, loadJobFiles } from '../jobs/load.ts';
import { combineErrors, type JobFileError } from '../jobs/job-error.ts';
import type { Job } from '../jobs/schema.ts';

/** The jobs of a command line: those that loaded, and the error of each job file that did not. */
export interface JobArgs {
  jobs: Job[];
  /** Job files that cannot be used: the command reports them and goes on with `jobs`. */
  broken: JobFileError[];
}

/**
 * The jobs named on the command line, or every job of the folder with --all. A broken job file does not stop
 * the others; it is returned in `broken`. Throws when no job loads at all (nothing to do) and when two jobs
 * share a name (their ledger rows would mix).
 */
export async function loadJobs(paths: string[], all: boolean, jobsDir: string): Promise<JobArgs> {
  if (all && paths.length > 0) throw new UsageError('name job files or use --all, not both');
  if (!all && paths.length === 0) throw new UsageError('name at least one job file, or use --all');
  const files = all ? await listJobFiles(jobsDir) : paths;
  if (files.length === 0) throw new UsageError(`no job files (.json, .ts) in ${jobsDir}`);
  const { jobs, broken, duplicates } = await loadJobFiles(files);
  if (duplicates.length > 0) throw combineErrors(duplicates);
  if (jobs.length === 0) throw combineErrors(broken);
  return { jobs, broken };
}
