/**
 * `netingest changes` on a dataset an earlier release made: opened by this release, it is upgraded in place and
 * its history starts empty. One that cannot be upgraded (a file it may not write, a PostgreSQL role that may only
 * read: opened for reading, nothing is migrated) gets a message that says what to do, exit 2, no SQL error.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { buildPreviousReleaseDb, T2 } from '../unit/db-previous-release.ts';
import { inProcess, runCli } from '../support/run-helpers.ts';

const dir = mkdtempSync(join(tmpdir(), 'netingest-changes-old-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const HEADER = 'run_id,at,job,entity,key,change,field,old,new';

it('an earlier release\'s dataset is upgraded as it is read, its history empty', async () => {
  const file = join(dir, 'old.db');
  buildPreviousReleaseDb(file, dir, T2);
  // The CLI's code in this process; the refusal below is a real process's exit and stderr. A date, not a run id: the
  // earlier release recorded no run, and a run id that names none is refused.
  const listed = await inProcess(['changes', '--db', file, '--since', '2020-01-01'], {}, { cwd: dir });
  expect(listed.code, listed.stderr).toBe(0);
  expect(listed.stdout.trim()).toBe(HEADER);
});

it('a dataset without the history that was not upgraded says what to do, not an SQL error', async () => {
  const file = join(dir, 'not-upgraded.db');
  buildPreviousReleaseDb(file, dir, T2);
  await inProcess(['changes', '--db', file], {}, { cwd: dir });
  // As if its upgrade had not been possible: the history's table, what later migrations added, and their records
  // taken out again.
  const db = new BetterSqlite3(file);
  db.exec('DROP TABLE changes');
  db.exec('ALTER TABLE runs DROP COLUMN job_rates');
  db.exec('ALTER TABLE job_search_results DROP COLUMN page');
  db.exec('ALTER TABLE runs DROP COLUMN refresh');
  db.exec('DELETE FROM __drizzle_migrations WHERE id > (SELECT max(id) - 4 FROM __drizzle_migrations)');
  db.close();
  const refused = await runCli(['changes', '--db', file], { cwd: dir });
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain(`${file} has no history yet: it was made by an earlier release; the next \`netingest run\` upgrades it`);
  expect(refused.stderr).not.toMatch(/SQL error|no such table/);
});
