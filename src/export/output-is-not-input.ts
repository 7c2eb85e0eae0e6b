import type { Stats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { UsageError } from '../errors.ts';
import { realPathOr, statIfExists } from './output-sink.ts';
import type { Job } from '../jobs/schema.ts';

/** Files SQLite keeps next to a database; replacing one of them corrupts or loses the database too. */
const DATABASE_SIDE_FILES = ['', '-wal', '-shm', '-journal'];

/**
 * Refuses an --out the final rename would destroy a read file with (database, WAL files, input CSV). Paths compare
 * after resolving symlinks, an existing --out also by device and inode (hard links).
 */
export function assertOutputIsNotInput(out: string | undefined, inputs: ReadonlyArray<{ path: string; what: string }>, flag = '--out'): void {
  if (out === undefined) return;
  const target = renamedPath(out);
  const targetStats = statIfExists(out);
  for (const { path, what } of inputs) {
    // Both spellings of the input: SQLite may place the WAL next to the link or next to the file it points to.
    const names = new Set([realPathOr(resolve(path)), renamedPath(path)]);
    for (const suffix of DATABASE_SIDE_FILES) {
      const isInput =
        [...names].some((name) => target === `${name}${suffix}`) ||
        (targetStats !== undefined && sameFile(targetStats, statIfExists(`${path}${suffix}`)));
      if (isInput) {
        throw new UsageError(`${flag} ${out} is the ${what}: writing there would destroy it; choose another file`, 'OUT_IS_INPUT');
      }
    }
  }
}

/** The files a job's output may not replace: the dataset's (`databaseFiles`), its input CSV and its job file. */
export function jobInputs(job: Pick<Job, 'input' | 'file'>, databaseFiles: readonly string[]): Array<{ path: string; what: string }> {
  return [
    ...databaseFiles.map((path) => ({ path, what: 'database' })),
    { path: job.input.csvPath, what: "job's input CSV" },
    ...(job.file ? [{ path: job.file, what: 'job file' }] : []),
  ];
}

/** The directory entry a rename onto `path` replaces: the real path of its folder, then its own name. */
function renamedPath(path: string): string {
  const absolute = resolve(path);
  return join(realPathOr(dirname(absolute)), basename(absolute));
}

function sameFile(a: Stats, b: Stats | undefined): boolean {
  return b !== undefined && a.dev === b.dev && a.ino === b.ino;
}
