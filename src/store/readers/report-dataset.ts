/**
 * The report's two touches of a dataset, on either engine (the engine is chosen here, from `--db`): its figures
 * read in one snapshot, and the path of the page it wrote remembered in netingest_meta, where `status` finds it
 * whichever engine and host ask (a file beside the dataset would not exist for PostgreSQL).
 */
import { existsSync } from 'node:fs';
import { openDatabase } from '../open.ts';
import { withReadSnapshot } from '../read-snapshot.ts';
import { locateDataset } from '../locator.ts';
import { openPgForReading } from './open-for-reading.ts';
import { readPg, readSync } from '../read-steps.ts';
import { UsageError } from '../../errors.ts';
import { reportFiguresReads, type ReportData, type ReportWindow } from './report-figures.ts';
import { LAST_REPORT_KEY } from '../last-report.ts';

/** The report's figures of the dataset `db` (a SQLite file or a postgres:// URL), in one read snapshot. */
export async function readReportData(db: string, window: ReportWindow, recentRuns: number): Promise<ReportData & { shownDataset: string }> {
  const location = locateDataset({ db, env: {} });
  if (location.engine === 'postgres') {
    const store = await openPgForReading(location.url);
    try {
      const data = await withReadSnapshot(store, (snapshot) => readPg(snapshot, reportFiguresReads(window, recentRuns)));
      return { ...data, shownDataset: location.shownUrl };
    } finally {
      await store.close();
    }
  }
  if (!existsSync(location.file)) throw new UsageError(`no database at ${location.file}: nothing has run yet (see --db)`, 'DB_NOT_FOUND');
  const database = openDatabase(location.file, { readonly: true, upgradeOlderSchema: true });
  try {
    const data = await withReadSnapshot(database, () => readSync(database.sqlite, reportFiguresReads(window, recentRuns)));
    return { ...data, shownDataset: location.file };
  } finally {
    database.close();
  }
}

const UPSERT = {
  sqlite: `INSERT INTO netingest_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
  postgres: `INSERT INTO netingest_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
};

/**
 * Remembers `path` as the last report of `db`, for `status`. One row of netingest_meta: no schema change. A
 * role that may only read (PostgreSQL) or a read-only file makes it throw; the caller says so and goes on.
 */
export async function recordLastReport(db: string, path: string, writtenAt: string): Promise<void> {
  const text = JSON.stringify({ path, writtenAt });
  const location = locateDataset({ db, env: {} });
  if (location.engine === 'postgres') {
    const store = await openPgForReading(location.url);
    try {
      await store.pool.query(UPSERT.postgres, [LAST_REPORT_KEY, text]);
    } finally {
      await store.close();
    }
    return;
  }
  const database = openDatabase(location.file);
  try {
    database.sqlite.prepare(UPSERT.sqlite).run(LAST_REPORT_KEY, text);
  } finally {
    database.close();
  }
}
