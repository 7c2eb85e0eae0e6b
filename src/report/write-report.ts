/** `netingest report`: one snapshot's figures and the live balance, written atomically, its path kept for `status`. */
import { resolve } from 'node:path';
import { writeOutput } from '../export/write-output.ts';
import { assertOutputIsAFile } from '../export/output-sink.ts';
import { assertOutputIsNotInput } from '../export/output-is-not-input.ts';
import { openStore } from '../store/open-store.ts';
import { reportFiguresReads } from '../store/readers/report-figures.ts';
import { LAST_REPORT_KEY } from '../store/status.ts';
import { withLiveBalance, type StatusOptions } from '../runner/status-report.ts';
import { JOB_DEFAULTS } from '../jobs/defaults.ts';
import { buildFigures, MS_PER_DAY, type ReportFigures } from './figures.ts';

export const REPORT_DEFAULTS = {
  outFile: 'report.html',
  /** Runs of the last this many days are drawn. @default 30 */
  days: 30,
  /** Days the forecast of tasks coming due covers, today first. @default 7 */
  forecastDays: 7,
  /** Recent runs in the status part (as `status`'s --runs). @default 10 */
  statusRuns: 10,
  /** Invalid rows and anomalies listed one by one; the rest is counted. @default 50 */
  listedRows: 50,
  /** The rate assumed for a run that did not record its jobs' rates (`runs.job_rates`, made by an earlier release). @default 60 */
  configuredPerMinute: JOB_DEFAULTS.rate.requestsPerMinute,
} as const;

/** The dataset and live balance as `status`'s, REPORT_DEFAULTS' figures to change, the clock (tests pin it). */
type ReportOptions = Pick<StatusOptions, 'db' | 'apiUrl' | 'tokenFile'> & Partial<Record<'days' | 'forecastDays' | 'configuredPerMinute' | 'statusRuns', number>> & {
  now?: Date;
};

/** The figures of the dataset, and how the page names it (a URL's password hidden). */
export async function gatherFigures(options: ReportOptions): Promise<{ figures: ReportFigures; shownDataset: string }> {
  const opts = { ...REPORT_DEFAULTS, ...options };
  const now = options.now ?? new Date();
  const since = new Date(now.getTime() - opts.days * MS_PER_DAY).toISOString();
  const store = await openStore(opts.db);
  const data = await store.read((snapshot) => snapshot.read(reportFiguresReads({ sinceIso: since, listedRows: opts.listedRows }, opts.statusRuns)));
  const status = await withLiveBalance(data.status, { apiUrl: opts.apiUrl, tokenFile: opts.tokenFile });
  const figures = buildFigures(data, status, { days: opts.days, forecastDays: opts.forecastDays, configuredPerMinute: opts.configuredPerMinute, now });
  return { figures, shownDataset: store.shown };
}

export type WrittenReport = Awaited<ReturnType<typeof writeReport>>;

/** Writes the page to `outFile` (a temporary file beside it, renamed, as an export's) and remembers its path. */
export async function writeReport(options: ReportOptions & { outFile: string }) {
  // Refused before anything is read: the page renamed onto the database (or its -wal) would destroy the dataset.
  assertOutputIsAFile(options.outFile);
  assertOutputIsNotInput(options.outFile, (await openStore(options.db)).files.map((path) => ({ path, what: 'database' })));
  const { figures, shownDataset } = await gatherFigures(options);
  // Loaded here: `--json` draws nothing and need not load the charting library.
  const { renderPage } = await import('./page.ts');
  const html = renderPage(figures, shownDataset);
  const path = resolve(options.outFile);
  await writeOutput({ out: path }, [{ data: html, rows: 1 }]);
  let notRecorded: string | null = null;
  try {
    // In netingest_meta, where `status` finds it whichever engine and host ask; a read-only role or file throws,
    // and notRecorded says why.
    await (await openStore(options.db)).writeMeta(LAST_REPORT_KEY, JSON.stringify({ path, writtenAt: figures.generatedAt }));
  } catch (err) {
    notRecorded = err instanceof Error ? err.message : String(err);
  }
  return { path, bytes: Buffer.byteLength(html), figures, notRecorded };
}
