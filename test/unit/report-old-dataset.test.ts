/**
 * `netingest report` on a dataset an earlier release made, whose runs did not record their jobs' rates: opened,
 * it is upgraded in place (`runs.job_rates` added, its rows kept), and each job's pace is drawn against the
 * report's `--rate`, marked as assumed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { buildPreviousReleaseDb, T0, T2 } from './db-previous-release.ts';
import { gatherFigures } from '../../src/report/write-report.ts';

const dir = mkdtempSync(join(tmpdir(), 'netingest-report-old-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it("an earlier release's dataset is upgraded as it is read, its runs' pace drawn against --rate", async () => {
  const file = join(dir, 'old.db');
  buildPreviousReleaseDb(file, dir, T2);
  const old = new BetterSqlite3(file);
  const columns = () => (old.prepare(`SELECT name FROM pragma_table_info('runs')`).pluck().all() as string[]);
  expect(columns()).not.toContain('job_rates');
  old.prepare(`INSERT INTO runs (id, jobs, started_at, ended_at, status, calls) VALUES (1, '["leads"]', ?, ?, 'completed', 2)`).run(T0, T2);
  old.close();

  const { figures } = await gatherFigures({ db: file, days: 3650, configuredPerMinute: 75, now: new Date(T2) });
  expect(figures.nights.map((n) => n.runId)).toEqual([1]);
  expect(figures.pace.map((p) => [p.job, p.calls, p.configuredPerMinute, p.configuredFrom])).toEqual([['leads', 2, 75, 'assumed']]);
  const upgraded = new BetterSqlite3(file, { readonly: true });
  try {
    expect(upgraded.prepare(`SELECT name FROM pragma_table_info('runs')`).pluck().all()).toContain('job_rates');
    expect(upgraded.prepare(`SELECT job_rates FROM runs`).pluck().get()).toBeNull();
  } finally {
    upgraded.close();
  }
});
