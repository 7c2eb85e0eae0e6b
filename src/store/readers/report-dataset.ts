/**
 * The report's two touches of a dataset, through the store (open-store.ts chooses the engine): its figures read
 * in one snapshot, and the path of the page it wrote remembered in netingest_meta, where `status` finds it
 * whichever engine and host ask (a file beside the dataset would not exist for PostgreSQL).
 */
import { openStore } from '../open-store.ts';
import { reportFiguresReads, type ReportData, type ReportWindow } from './report-figures.ts';
import { LAST_REPORT_KEY } from '../last-report.ts';

/** The report's figures of the dataset `db` (a SQLite file or a postgres:// URL), in one read snapshot. */
export async function readReportData(db: string, window: ReportWindow, recentRuns: number): Promise<ReportData & { shownDataset: string }> {
  const store = await openStore(db);
  const data = await store.read((snapshot) => snapshot.read(reportFiguresReads(window, recentRuns)));
  return { ...data, shownDataset: store.shown };
}

/**
 * Remembers `path` as the last report of `db`, for `status`. One row of netingest_meta: no schema change. A
 * role that may only read (PostgreSQL) or a read-only file makes it throw; the caller says so and goes on.
 */
export async function recordLastReport(db: string, path: string, writtenAt: string): Promise<void> {
  await (await openStore(db)).writeMeta(LAST_REPORT_KEY, JSON.stringify({ path, writtenAt }));
}
