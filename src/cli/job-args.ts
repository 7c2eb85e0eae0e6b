/** The job files of `run` and `plan` (named, or --all) and their `--invalid-out`. */
import { plural } from '../plural.ts';
import { UsageError } from '../errors.ts';
import { listJobFiles, loadJobFiles } from '../jobs/load.ts';
import { combineErrors } from '../jobs/job-error.ts';
import type { Job } from '../jobs/schema.ts';
import { invalidOutPath, writeInvalidRows } from '../export/invalid-rows-out.ts';
import { assertOutputIsNotInput, jobInputs } from '../export/output-is-not-input.ts';
import { assertOutputFolderWritable } from '../export/output-sink.ts';
import { openStore } from '../store/open-store.ts';
import { stderrNotice, withStopSignals } from './signals.ts';
import { outputFileOption } from './common-options.ts';

/** The jobs named, or all with --all (broken files in `broken`); throws if none loads or two share a name (their ledger rows would mix). */
export async function loadJobs(paths: string[], all: boolean, jobsDir: string) {
  if (all && paths.length > 0) throw new UsageError('name job files or use --all, not both');
  if (!all && paths.length === 0) throw new UsageError('name at least one job file, or use --all');
  const files = all ? await listJobFiles(jobsDir) : paths;
  if (files.length === 0) throw new UsageError(`no job files (.json, .ts) in ${jobsDir}`);
  const { jobs, broken, duplicates } = await loadJobFiles(files);
  if (duplicates.length > 0) throw combineErrors(duplicates);
  if (jobs.length === 0) throw combineErrors(broken);
  return { jobs, broken };
}

/** `--invalid-out <file>` of `plan` and `run`. */
export const INVALID_OUT_OPTION = outputFileOption(
  '--invalid-out',
  "write every invalid input row (the input's columns, netingest_line, netingest_reason) to this CSV; with several jobs, <name>.<job>.csv each",
);

/** Refuses up front an `--invalid-out` the jobs read or that cannot be written: `run` writes it only after its last call, too late to refuse. */
export async function checkInvalidOut(jobs: readonly Job[], out: string | undefined, db: string): Promise<void> {
  if (out === undefined) return;
  const { files } = await openStore(db);
  for (const job of jobs) {
    const path = invalidOutPath(out, job.name, jobs.length);
    assertOutputIsNotInput(path, jobInputs(job, files), '--invalid-out');
    assertOutputFolderWritable(path);
  }
}

/** Writes each job's invalid rows and says where on `stderr`; `db` only so a dataset file is never the output. */
export async function writeInvalidOut(jobs: readonly Job[], out: string, db: string, stderr: NodeJS.WritableStream): Promise<void> {
  const { files } = await openStore(db);
  for (const job of jobs) {
    const path = invalidOutPath(out, job.name, jobs.length);
    const result = await withStopSignals(stderrNotice(stderr), (signal) => writeInvalidRows(job, path, { databaseFiles: files, signal }));
    stderr.write(`netingest: wrote ${plural(result.rows, 'invalid row')} of ${job.name} to ${path}\n`);
  }
}
