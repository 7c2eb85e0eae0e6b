/**
 * `netingest report` on a dataset whose runs have no `job_rates` (the #29 leftover): opened for reading it is not
 * upgraded where it cannot be (a read-only role or file), and its runs are drawn as those of an earlier release,
 * against `--rate`, marked as assumed, instead of failing with the server's "column does not exist". A PostgreSQL
 * dataset whose migration records are an earlier release's is refused with what to do, as `changes` and `status` are.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, expect, it } from 'vitest';
import { gatherFigures } from '../../src/report/write-report.ts';
import { inProcess } from '../support/run-helpers.ts';
import { openDatabase } from '../../src/store/open.ts';
import { buildPreviousReleaseDb, T0, T2 } from '../unit/db-previous-release.ts';
import { forEachEngine, type TestDb, type TestEngine } from './engines.ts';

const dir = mkdtempSync(join(tmpdir(), 'netingest-report-rates-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An earlier release's dataset (its run 1 made two calls for `leads`) brought up to this build's schema, built once. */
let fixture: string | undefined;
function previousRelease(): string {
  if (fixture) return fixture;
  const file = join(dir, 'previous-release-fixture.db');
  buildPreviousReleaseDb(file, dir, T2);
  const old = new BetterSqlite3(file);
  old.prepare(`INSERT INTO runs (id, jobs, started_at, ended_at, status, calls) VALUES (1, '["leads"]', ?, ?, 'completed', 2)`).run(T0, T2);
  old.close();
  openDatabase(file).close();
  return (fixture = file);
}

/** A copy of the previous release's dataset on `engine`, whose `runs` then lost job_rates. */
async function withoutRates(engine: TestEngine): Promise<TestDb> {
  const db = await engine.load(dir, previousRelease());
  await db.run('ALTER TABLE runs DROP COLUMN job_rates');
  return db;
}

forEachEngine('report on a dataset whose runs have no job_rates', (engine) => {
  it('draws the runs against --rate, marked as assumed, and the CLI writes the page', async () => {
    const db = await withoutRates(engine);
    const { figures } = await gatherFigures({ db: db.locator, days: 3650, configuredPerMinute: 75, now: new Date(T2) });
    expect(figures.nights.map((n) => n.runId)).toEqual([1]);
    expect(figures.pace.map((p) => [p.job, p.calls, p.configuredPerMinute, p.configuredFrom])).toEqual([['leads', 2, 75, 'assumed']]);
    const out = await inProcess(['report', '--db', db.locator, '--days', '3650', '--rate', '75', '--out', join(dir, `${engine.name}.html`)]);
    expect(out.stderr).not.toMatch(/job_rates|column|unexpected error/);
    expect(out.code, out.stderr).toBe(0);
    // Read only: the column was not put back.
    expect(await db.count(engine.name === 'sqlite'
      ? `SELECT count(*) FROM pragma_table_info('runs') WHERE name = 'job_rates'`
      : `SELECT count(*) FROM information_schema.columns WHERE table_name = 'runs' AND column_name = 'job_rates'`)).toBe(0);
  });

  // PostgreSQL-specific: a reader never upgrades a PostgreSQL dataset (a SQLite file is upgraded as it is read).
  it.runIf(engine.name === 'postgres')('(PostgreSQL) refuses a dataset an earlier release migrated, saying what upgrades it, with no SQL error', async () => {
    const db = await withoutRates(engine);
    // The records of the migrations after job_rates' own go with it: what an earlier release left.
    const lastTwo = await db.rows<{ id: number }>('SELECT id FROM __drizzle_migrations ORDER BY id DESC LIMIT 2');
    for (const { id } of lastTwo) await db.run('DELETE FROM __drizzle_migrations WHERE id = ?', id);
    const out = await inProcess(['report', '--db', db.locator, '--json']);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain("holds a dataset of an older netingest: the next 'netingest run' on it upgrades it in place [DB_NEEDS_MIGRATION]");
    expect(out.stderr).not.toMatch(/job_rates|unexpected error/);
  });
});
