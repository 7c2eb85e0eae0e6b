/**
 * `netingest report` over a generated year of nightly runs (SQLite): the time to read, draw and write the page
 * (median of warm rounds in one process, the charting library loaded once) against reading `status` alone on
 * the same dataset, and the page's size. Targets: under 2 s and under 2 MB (issue #29); the size itself is
 * asserted by test/e2e/report-size.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatBenchTable, type BenchResult } from './bench-result.ts';
import { writeNightlyDataset } from '../test/report/nightly-dataset.ts';
import { yearOfNights, YEAR_NOW } from '../test/report/year.ts';
import { writeReport } from '../src/report/write-report.ts';
import { statusReport } from '../src/runner/status-report.ts';

/** Every setting of the bench in one place. */
export const REPORT_BENCH = {
  rounds: Number(process.env.REPORT_BENCH_ROUNDS ?? 5),
  targetMs: 2000,
  targetBytes: 2 * 1024 * 1024,
} as const;

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function runReportBench(): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'netingest-report-bench-'));
  try {
    const db = join(dir, 'year.db');
    await writeNightlyDataset(db, yearOfNights());
    const reportMs: number[] = [];
    // CPU time too: on a shared machine the wall time measures the neighbours, the CPU time this work.
    const reportCpuMs: number[] = [];
    const statusMs: number[] = [];
    let bytes = 0;
    // The first round loads the charting library: a nightly report pays it once, shown apart.
    let started = performance.now();
    await writeReport({ db, outFile: join(dir, 'year.html'), days: 365, now: YEAR_NOW });
    const coldMs = performance.now() - started;
    for (let round = 0; round < REPORT_BENCH.rounds; round++) {
      started = performance.now();
      const cpu = process.cpuUsage();
      bytes = (await writeReport({ db, outFile: join(dir, 'year.html'), days: 365, now: YEAR_NOW })).bytes;
      reportMs.push(performance.now() - started);
      const used = process.cpuUsage(cpu);
      reportCpuMs.push((used.user + used.system) / 1000);
      started = performance.now();
      await statusReport({ db, runs: 10 });
      statusMs.push(performance.now() - started);
    }
    const report = median(reportMs);
    const status = median(statusMs);
    return [
      { name: 'report: a year of nights, first in the process', value: Math.round(coldMs), unit: 'ms', target: `< ${REPORT_BENCH.targetMs} ms`, baseline: null, ratio: null, met: coldMs < REPORT_BENCH.targetMs },
      { name: 'report: a year of nights, warm', value: Math.round(report), unit: 'ms', target: `< ${REPORT_BENCH.targetMs} ms`, baseline: Math.round(status), ratio: report / status, met: report < REPORT_BENCH.targetMs },
      { name: 'report: CPU per page, a year of nights, warm', value: Math.round(median(reportCpuMs)), unit: 'ms', target: `< ${REPORT_BENCH.targetMs} ms`, baseline: null, ratio: null, met: median(reportCpuMs) < REPORT_BENCH.targetMs },
      { name: 'report: page size, a year of nights', value: bytes, unit: 'bytes', target: `< ${REPORT_BENCH.targetBytes}`, baseline: null, ratio: null, met: bytes < REPORT_BENCH.targetBytes },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.stdout.write(formatBenchTable(await runReportBench()));
