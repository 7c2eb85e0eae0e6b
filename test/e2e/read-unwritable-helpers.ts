/**
 * Shared by the tests that run read commands as uid 65534 (through setpriv) on a database in a folder owned by
 * root: read-unwritable-folder.test.ts and read-unwritable-plan.test.ts. See src/store/read-without-shm.ts.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/store/open.ts';

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
