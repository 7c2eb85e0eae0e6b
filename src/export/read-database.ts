import { existsSync, realpathSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { openDatabase, type Database } from '../store/open.ts';
import type { ReadSnapshot } from '../store/read-snapshot.ts';
import { UsageError } from '../errors.ts';
import { lockConnectionReadOnly } from './read-only-sql.ts';
import type { PumpOptions } from './pump-rows.ts';

/** Files SQLite keeps next to a database; replacing one of them corrupts or loses the database too. */
const DATABASE_SIDE_FILES = ['', '-wal', '-shm', '-journal'];

/**
 * Opens the dataset for reading only: a read-only connection with `query_only` on. A file an older netingest
 * wrote is upgraded first (openDatabase's upgradeOlderSchema); nothing else is ever written.
 */
export function openForReading(file: string): Database {
  if (!existsSync(file)) throw new UsageError(`no database at ${file}: nothing has run yet (see --db)`, 'DB_NOT_FOUND');
  const database = openDatabase(file, { readonly: true, upgradeOlderSchema: true });
  try {
    lockConnectionReadOnly(database.sqlite);
  } catch (err) {
    database.close();
    throw err;
  }
  return database;
}

/**
 * `options` with the snapshot's change check (ReadSnapshot.assertUnchanged) added to its verify step: a database
 * read without locks that changes stops the export after the batch, before anything is committed at --out.
 */
export function verifiedBy<T extends PumpOptions>(snapshot: ReadSnapshot, options: T): T {
  return {
    ...options,
    verify: () => {
      snapshot.assertUnchanged();
      options.verify?.();
    },
  };
}

/**
 * Refuses an --out that would replace a file the command reads (the database, its WAL files, the job's input
 * CSV): the rename at the end would destroy it. Paths are compared after resolving symbolic links, and an
 * existing --out is also compared by device and inode, so neither a linked folder nor a hard link gets past.
 */
export function assertOutputIsNotInput(out: string | undefined, inputs: ReadonlyArray<{ path: string; what: string }>): void {
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
        throw new UsageError(`--out ${out} is the ${what}: writing there would destroy it; choose another file`, 'OUT_IS_INPUT');
      }
    }
  }
}

/** The directory entry a rename onto `path` replaces: the real path of its folder, then its own name. */
function renamedPath(path: string): string {
  const absolute = resolve(path);
  return join(realPathOr(dirname(absolute)), basename(absolute));
}

/** `path` with every symbolic link resolved, or `path` itself when it does not exist (yet). */
function realPathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/** The file's identity, or undefined when there is none to compare (missing, or a path that cannot be read). */
function statIfExists(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

function sameFile(a: Stats, b: Stats | undefined): boolean {
  return b !== undefined && a.dev === b.dev && a.ino === b.ino;
}
