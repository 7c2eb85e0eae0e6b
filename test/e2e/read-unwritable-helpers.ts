/**
 * Shared by the tests that run read commands as uid 65534 (through setpriv) on a database in a folder owned by
 * root: read-unwritable-folder.test.ts and read-unwritable-plan.test.ts. See src/store/read-without-shm.ts.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams, type SpawnSyncReturns } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll } from 'vitest';
import { openDatabase } from '../../src/store/open.ts';
import { otherUserCopy, type OtherUserCopy } from './other-user-copy.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const OTHER_USER = ['--reuid=65534', '--regid=65534', '--clear-groups'];

/**
 * Running as another user needs root and setpriv; the tests are skipped otherwise. That user runs a copy of the
 * built CLI (other-user-copy.ts), wherever the checkout lives.
 */
export const canRunAsOtherUser = process.getuid?.() === 0 && spawnSync('setpriv', ['--version']).status === 0;

/** A WAL database with `rows` companies, written and closed: no -wal, no -shm beside it. */
export function writePristine(path: string, rows: number): void {
  const database = openDatabase(path);
  const insert = database.sqlite.prepare(`INSERT INTO companies (url, name, description, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?)`);
  database.sqlite.transaction(() => {
    for (let i = 0; i < rows; i++) {
      insert.run(`https://network.com/company/c${i}`, `Company ${i}`, `a description, "quoted", of company ${i} `.repeat(3),
        '2026-11-01T00:00:00.000Z', '2026-11-02T00:00:00.000Z');
    }
  })();
  database.close();
}

/** A copy of `pristine`, named `name`, in `folder`, created now and writable by root only. */
export function copyIntoUnwritableFolder(pristine: string, folder: string, name: string): string {
  mkdirSync(folder, { mode: 0o755 });
  const db = join(folder, name);
  copyFileSync(pristine, db);
  chmodSync(db, 0o644);
  return db;
}

/** The child's environment, without SQLITE_USE_URI: netingest must turn URI filenames on by itself. */
export function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.SQLITE_USE_URI;
  return env;
}

/** What a run of netingest does to a database: a write, checkpointed into the file (the -wal is emptied and removed). */
export function writeAsARunWould(db: string): void {
  const database = openDatabase(db);
  database.sqlite.exec(`UPDATE companies SET name = name || ' (renamed)' WHERE rowid % 2 = 0`);
  database.sqlite.pragma('wal_checkpoint(TRUNCATE)');
  database.close();
}

/** What a test file of another user's reads works with, set in beforeAll by useUnwritableFolder. */
export interface UnwritableFolder {
  /** The other user's netingest: a copy it can read, wherever the checkout lives (only when it can run). */
  cli: OtherUserCopy;
  /** The test's own folder, which every user can enter. */
  dir: string;
  /** The pristine database, written and closed by root: no -wal, no -shm beside it. */
  pristine: string;
  /** A copy of the pristine database, named `name`, in a fresh folder of its own that only root can write. */
  unwritableCopy(name?: string): string;
  /** `args` of the other user's netingest, run to its end. */
  asOtherUser(args: string[]): SpawnSyncReturns<string>;
  /** `args` of node (a script and its arguments) as the other user, started; from the copy's root. */
  spawnAsOtherUser(args: string[]): ChildProcessWithoutNullStreams;
}

/**
 * The set-up of the tests that run read commands as another user: before them, the copy of the CLI (when this
 * host can run as another user), a folder `prefix`... every user can enter, and a pristine database of `rows`
 * companies in it; after them, both removed.
 */
export function useUnwritableFolder(prefix: string, rows: number): UnwritableFolder {
  let folders = 0;
  const fixture: UnwritableFolder = {
    cli: undefined as unknown as OtherUserCopy,
    dir: '',
    pristine: '',
    unwritableCopy: (name = 'data.db') => copyIntoUnwritableFolder(fixture.pristine, join(fixture.dir, `ro-${++folders}`), name),
    asOtherUser: (args) =>
      spawnSync('setpriv', [...OTHER_USER, process.execPath, fixture.cli.bin, ...args], { cwd: fixture.cli.root, env: childEnv(), encoding: 'utf8', maxBuffer: 1 << 28 }),
    spawnAsOtherUser: (args) => spawn('setpriv', [...OTHER_USER, process.execPath, ...args], { cwd: fixture.cli.root, env: childEnv() }),
  };
  beforeAll(() => {
    if (canRunAsOtherUser) fixture.cli = otherUserCopy();
    fixture.dir = mkdtempSync(join(tmpdir(), prefix));
    chmodSync(fixture.dir, 0o755);
    fixture.pristine = join(fixture.dir, 'pristine', 'data.db');
    writePristine(fixture.pristine, rows);
  });
  afterAll(() => {
    rmSync(fixture.dir, { recursive: true, force: true });
    fixture.cli?.remove();
  });
  return fixture;
}
