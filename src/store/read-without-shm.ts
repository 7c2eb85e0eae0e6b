/**
 * Reading a WAL database from a folder this user cannot write: SQLite needs a -shm file it cannot create. With the
 * -wal absent or empty the file alone holds every commit, so it is read immutable (no -shm, no locks); a writer that
 * checkpoints meanwhile goes unnoticed, so the file's identity, size and times are compared after each batch and
 * before anything is kept (DB_CHANGED). A non-empty -wal holds writes the file lacks: DB_READONLY, saying why.
 */
import { openSync, closeSync, readSync, statSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { DatabaseChangedError, DatabaseWalUnreadableError, type DatabaseError } from './errors.ts';

/** Notices a change of a database file read without locks. */
export interface ChangeWatch {
  /** Throws DatabaseChangedError (cause: `failure`) if the file changed since the watch began; rethrows one as is. */
  assertUnchanged(failure?: unknown): void;
}

/**
 * Whether a read-only open failed with `err` may retry without -shm: SQLite refused to create it (READONLY_DIRECTORY,
 * READONLY_CANTINIT) or to open the files beside the database (CANTOPEN: a -wal but no -shm).
 */
export function failedForWantOfShm(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_READONLY') || code === 'SQLITE_CANTOPEN');
}

/**
 * Opens `path` immutable through `open` when that is safe, with the watch that detects a writer; else throws
 * `failure` (the first open's error, mapped), or DatabaseWalUnreadableError when the -wal holds writes.
 */
export function openWithoutShm<T>(
  path: string,
  failure: DatabaseError,
  open: (uri: string) => T,
): { opened: T; watch: ChangeWatch } {
  // A rollback-journal database needs no -shm: its failure is something else (a hot journal to roll back, which
  // an immutable read would ignore).
  if (!isWalMode(path)) throw failure;
  // Taken before the -wal is looked at: a checkpoint that empties it afterwards has changed the file since.
  const baseline = fileState(path);
  if (walBytes(path) > 0) {
    const sqliteMessage = failure.cause instanceof Error ? failure.cause.message : failure.message;
    throw new DatabaseWalUnreadableError(path, sqliteMessage, { cause: failure.cause });
  }
  let opened: T;
  try {
    // Read-only and immutable; pathToFileURL escapes `?`, `#` and `%`, which SQLite decodes.
    opened = open(`${pathToFileURL(path).href}?mode=ro&immutable=1`);
  } catch (err) {
    // SQLITE_CANTOPEN: the `file:` name was taken literally, URI filenames being off (SQLITE_USE_URI=0 set by the
    // user, or better-sqlite3 loaded before connection.ts set it); the first failure is the one that explains.
    if ((err as { code?: unknown } | null)?.code === 'SQLITE_CANTOPEN') throw failure;
    throw err;
  }
  return {
    opened,
    watch: {
      assertUnchanged(cause?: unknown) {
        if (cause instanceof DatabaseChangedError) throw cause;
        // A non-empty -wal at the end means a writer came: its checkpoints would have changed the file, and the
        // file's times alone may miss one that fell within their granularity.
        if (fileState(path) !== baseline || walBytes(path) > 0) {
          throw new DatabaseChangedError(path, cause === undefined ? undefined : { cause });
        }
      },
    },
  };
}

/** Device, inode, size and nanosecond times of the file, as one comparable string; '' once it is gone. */
function fileState(path: string): string {
  try {
    const s = statSync(path, { bigint: true });
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch {
    return '';
  }
}

function walBytes(path: string): number {
  try {
    return statSync(`${path}-wal`).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    // A -wal this user cannot even look at may hold anything.
    return Number.POSITIVE_INFINITY;
  }
}

/** Whether the header marks a WAL-mode database (file format versions 2 at offsets 18 and 19). */
function isWalMode(path: string): boolean {
  const header = Buffer.alloc(20);
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return false;
  }
  try {
    return readSync(fd, header, 0, 20, 0) === 20 && header[18] === 2 && header[19] === 2;
  } finally {
    closeSync(fd);
  }
}
