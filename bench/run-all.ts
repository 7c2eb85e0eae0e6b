/**
 * `npm run bench`: every benchmark of the project in one go, one table of figures, targets and ratios to
 * baselines measured in the same run. bench/README.md records the last results and the machine.
 */
import { cpus, totalmem } from 'node:os';
import { formatBenchTable, type BenchResult } from './bench-result.ts';

const suites: Array<[string, () => Promise<BenchResult[]>]> = [
  ['db upsert', async () => (await import('./db-upsert.bench.ts')).runDbUpsertBench()],
  ['pipeline', async () => (await import('./pipeline.bench.ts')).runPipelineBench()],
  ['rate limit', async () => (await import('./rate-limit.bench.ts')).runRateLimitBench()],
  ['ledger fill', async () => (await import('./ledger-fill.bench.ts')).runLedgerFillBench()],
  ['export', async () => (await import('./export.bench.ts')).runExportBench()],
  ['start time', async () => (await import('./start-time.bench.ts')).runStartTimeBench()],
  ['postgres', async () => (await import('./postgres.bench.ts')).runPostgresBench()],
  ['report', async () => (await import('./report.bench.ts')).runReportBench()],
];

const only = process.argv.slice(2);
const results: BenchResult[] = [];
for (const [name, run] of suites) {
  if (only.length > 0 && !only.some((o) => name.includes(o))) continue;
  process.stderr.write(`running ${name} ...\n`);
  try {
    results.push(...(await run()));
  } catch (err) {
    process.stderr.write(`${name} failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    results.push({ name: `${name} (failed)`, value: 0, unit: '-', target: '-', baseline: null, ratio: null, met: false });
  }
}
const cpu = cpus()[0]?.model ?? 'unknown cpu';
process.stdout.write(`\nnetingest benchmarks — node ${process.version}, ${cpus().length} x ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB\n\n`);
process.stdout.write(formatBenchTable(results));
const missed = results.filter((r) => !r.met);
process.stdout.write(missed.length === 0 ? '\nEvery target met.\n' : `\nTargets not met: ${missed.map((r) => r.name).join(', ')}\n`);
