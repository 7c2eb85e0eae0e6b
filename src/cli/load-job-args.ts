import { UsageError } from '../errors.ts';
import { assertUniqueNames, loadAllJobs, loadJob } from '../jobs/load.ts';
import type { Job } from '../jobs/schema.ts';

/** The jobs named on the command line, or every job of the folder with --all; names must not clash. */
export async function loadJobs(paths: string[], all: boolean, jobsDir: string): Promise<Job[]> {
  if (all && paths.length > 0) throw new UsageError('name job files or use --all, not both');
  if (!all && paths.length === 0) throw new UsageError('name at least one job file, or use --all');
  const jobs = all ? await loadAllJobs(jobsDir) : await Promise.all(paths.map((p) => loadJob(p)));
  if (jobs.length === 0) throw new UsageError(`no job files (.json, .ts) in ${jobsDir}`);
  assertUniqueNames(jobs);
  return jobs;
}
