/**
 * A dataset an older release made is upgraded in place as a reading command opens it, after which that release
 * refuses the file: the command says so in one stderr line, once; a new dataset or one already upgraded, not at all.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { buildPreviousReleaseDb, T2 } from './db-previous-release.ts';
import { inProcess } from '../support/run-helpers.ts';
import { openDatabase } from '../../src/store/open.ts';
import { withSchemaUpgradeNotice } from '../../src/schema-upgrade-notice.ts';

const dir = mkdtempSync(join(tmpdir(), 'netingest-upgrade-notice-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const NOTICE = "to this release's schema: older releases of netingest can no longer open it";

it('a reader on an earlier release\'s dataset says once that it upgraded it; the next reader says nothing', async () => {
  const file = join(dir, 'old.db');
  buildPreviousReleaseDb(file, dir, T2);
  const status = await inProcess(['status', '--db', file], {}, { cwd: dir });
  expect(status.code, status.stderr).toBe(0);
  expect(status.stderr).toBe(`netingest: upgraded ${file} ${NOTICE}\n`);
  const query = await inProcess(['query', '--db', file, 'SELECT count(*) FROM tasks'], {}, { cwd: dir });
  expect(query.code, query.stderr).toBe(0);
  expect(query.stderr).toBe('');
});

it('a database just created is not told as upgraded', () => {
  const told: string[] = [];
  withSchemaUpgradeNotice((db) => told.push(db), () => openDatabase(join(dir, 'new.db')).close());
  expect(told).toEqual([]);
  const old = join(dir, 'old-direct.db');
  buildPreviousReleaseDb(old, dir, T2);
  withSchemaUpgradeNotice((db) => told.push(db), () => openDatabase(old).close());
  expect(told).toEqual([old]);
});
