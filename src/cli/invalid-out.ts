import { plural } from '../plural.ts';
import type { Job } from '../jobs/schema.ts';
import { assertInvalidOutIsNotInput, invalidOutPath, writeInvalidRows } from '../export/invalid-rows-out.ts';
import { openStore } from '../store/open-store.ts';
import { stderrNotice, withStopSignals } from './signals.ts';

/** `--invalid-out <file>` of `plan` and `run`. */
export const INVALID_OUT_OPTION = {
  type: 'string',
  normalize: true,
  describe: "write every invalid input row (the input's columns, netingest_line, netingest_reason) to this CSV; with several jobs, <name>.<job>.csv each",
} as const;

/**
 * Refuses, before anything runs, an `--invalid-out` that is a file the jobs read: `run` writes it only after its
 * last call, too late to say that the paid run's rows cannot go there.
 */
export async function checkInvalidOut(jobs: readonly Job[], out: string | undefined, db: string): Promise<void> {
  if (out === undefined) return;
  const [dbFile] = (await openStore(db)).files;
  for (const job of jobs) assertInvalidOutIsNotInput(job, invalidOutPath(out, job.name, jobs.length), dbFile);
}

/**
 * Writes each job's invalid rows and says where on `stderr`. They come from the input, not the dataset; `db` is
 * named only so that a file the dataset is kept in is never the output.
 */
export async function writeInvalidOut(jobs: readonly Job[], out: string, db: string, stderr: NodeJS.WritableStream): Promise<void> {
  const [dbFile] = (await openStore(db)).files;
  for (const job of jobs) {
    const path = invalidOutPath(out, job.name, jobs.length);
    const result = await withStopSignals(stderrNotice(stderr), (signal) => writeInvalidRows(job, path, { db: dbFile, signal }));
    stderr.write(`netingest: wrote ${plural(result.rows, 'invalid row')} of ${job.name} to ${path}\n`);
  }
}
