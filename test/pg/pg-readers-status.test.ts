/**
 * `status` on PostgreSQL: the same report as on SQLite for the same data (a sandbox run, then `netingest copy`),
 * text and --json, including a run left marked running by a dead process, whose figures are measured from its
 * calls and tasks on both engines.
 */
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inProcess } from '../support/run-helpers.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { makeReadDataset, type ReadDataset } from './read-dataset.ts';
import { DATABASE_URL_ENV } from '../../src/store/locator.ts';

/**
 * Two runs: the sandbox run's row copied as a finished run 2, and run 1 left as a killed process leaves it
 * (marked running, no end written), so status measures it from its calls and tasks. On both engines, after
 * `copy` (which closes a SQLite file's unfinished runs as abandoned, as a run would).
 */
const TWO_RUNS = [
  `INSERT INTO runs (id, jobs, started_at, ended_at, status, credits_at_start, credits_at_end, credits_spent, tasks_total, tasks_done,
     tasks_not_found, tasks_failed, tasks_deferred, invalid_rows, calls, exit_code, error, pid, host)
   SELECT 2, jobs, ended_at, ended_at, 'completed', credits_at_start, credits_at_end, credits_spent, tasks_total, tasks_done,
     tasks_not_found, tasks_failed, tasks_deferred, invalid_rows, calls, 0, NULL, pid, host FROM runs WHERE id = 1`,
  `UPDATE runs SET status = 'running', ended_at = NULL, credits_spent = NULL, credits_at_end = NULL, exit_code = NULL, error = NULL,
     pid = 999999, host = 'gone-host' WHERE id = 1`,
];

describe.skipIf(!pgClusterUrl)(`status on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let data: ReadDataset;
  beforeAll(async () => {
    data = await makeReadDataset('status');
    const lite = new BetterSqlite3(data.file);
    const client = new pg.Client({ connectionString: data.url });
    await client.connect();
    try {
      for (const sql of TWO_RUNS) {
        lite.prepare(sql).run();
        await client.query(sql);
      }
    } finally {
      lite.close();
      await client.end();
    }
  }, 60_000);
  afterAll(async () => {
    await data?.cleanup();
  });

  it('prints the same report, naming the same runs, tasks and credits', async () => {
    const lite = await inProcess(['status', '--db', data.file]);
    const onPg = await inProcess(['status', '--db', data.url]);
    expect(onPg.stderr).toBe('');
    expect(onPg.code).toBe(0);
    expect(lite.stdout).toMatch(/stopped without finishing/);
    expect(lite.stdout).toMatch(/Recent runs:\n  #2 .*\n  #1 \S+ unfinished/);
    expect(lite.stdout).toMatch(/Tasks by status:\n  job-search: done \d+.*\n  lookalikes: done \d+/);
    expect(onPg.stdout).toBe(lite.stdout);
  });

  it('--json holds the same values, the unfinished run measured from its calls on both', async () => {
    const lite = await inProcess(['status', '--json', '--db', data.file]);
    const onPg = await inProcess(['status', '--json'], { [DATABASE_URL_ENV]: data.url });
    expect(onPg.code).toBe(0);
    const report = JSON.parse(onPg.stdout) as { unfinishedRuns: Array<{ id: number }>; runs: Array<{ unfinished: boolean; calls: number }>; creditsSpentAllRuns: number };
    expect(report.unfinishedRuns.map((r) => r.id)).toEqual([1]);
    expect(report.runs.map((r) => r.unfinished)).toEqual([false, true]);
    expect(report.runs[1]!.calls).toBeGreaterThan(0);
    expect(report.creditsSpentAllRuns).toBeGreaterThan(0);
    expect(JSON.parse(onPg.stdout)).toEqual(JSON.parse(lite.stdout));
  });
});
