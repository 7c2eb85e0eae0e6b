/**
 * Export throughput and memory: `netingest export companies` (exportTable: iterate() in raw mode, csv-stringify
 * in batches, temp file + rename) over 1,000,000 rows, against a plain better-sqlite3 iterate() loop that writes
 * the same CSV by hand. Each runs in its own child process so its peak RSS (process.resourceUsage().maxRSS) is
 * its own; both outputs are compared byte for byte (sha256) so the baseline really does the same work.
 * Run: `npx tsx bench/export.bench.ts` (or `npm run bench export`).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { openDatabase } from '../src/store/open.ts';
import { exportTable } from '../src/export/export-table.ts';
import { formatBenchTable, type BenchResult } from './bench-result.ts';

/** Bench parameters, every default here. */
export const EXPORT_BENCH = {
  rows: 1_000_000,
  /** Export runs per side; the best throughput and the highest peak RSS are kept. */
  rounds: 2,
  minRowsPerSecond: 150_000,
  maxPeakRssMb: 200,
} as const;

const SELF = fileURLToPath(import.meta.url);
/** The repository root: children resolve `--import tsx` from here whatever the caller's working directory. */
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** What a child reports. */
interface ChildReport {
  rows: number;
  ms: number;
  maxRssMb: number;
}

/** Fills `companies` with `rows` realistic rows (some with commas, quotes, line breaks, non-ASCII, NULLs). */
export function fillDatabase(file: string, rows: number): void {
  const database = openDatabase(file);
  database.sqlite.exec(`
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows})
    INSERT INTO companies (url, name, universal_name, type, object_urn, description, phone, followers, website, logo, cover,
      tagline, founded_year, staff_total, staff_range_start, staff_range_end, funding_data, first_seen_at, updated_at)
    SELECT
      'https://network.com/company/acme-' || i,
      CASE WHEN i % 7 = 0 THEN 'Acme ' || i || ', "Holding" Société' ELSE 'Acme ' || i || ' GmbH' END,
      'acme-' || i,
      CASE WHEN i % 3 = 0 THEN 'PUBLIC_COMPANY' ELSE 'PRIVATELY_HELD' END,
      1000000 + i,
      'Acme ' || i || ' builds industrial robots for logistics and manufacturing.' ||
        CASE WHEN i % 10 = 0 THEN char(10) || 'Offices in München, Paris and 東京 🚀' ELSE '' END,
      '+49301234' || (i % 1000),
      i * 3 % 100000,
      'https://acme-' || i || '.example',
      'https://img.example/logo-' || i || '.png',
      NULL,
      CASE WHEN i % 4 = 0 THEN 'We make things' ELSE NULL END,
      1950 + i % 70,
      i % 5000,
      CASE WHEN i % 2 = 0 THEN 11 ELSE 201 END,
      CASE WHEN i % 2 = 0 THEN 50 ELSE 500 END,
      CASE WHEN i % 20 = 0 THEN '{"rounds":2,"lastRound":{"type":"Series B"}}' ELSE NULL END,
      '2026-11-01T00:00:00.000Z',
      '2026-11-' || printf('%02d', 1 + i % 28) || 'T00:00:00.000Z'
    FROM n`);
  database.close();
}

// ---------------------------------------------------------------------------------------------------------
// The two measured programs (run in child processes)
// ---------------------------------------------------------------------------------------------------------

async function childExport(db: string, out: string): Promise<ChildReport> {
  const started = performance.now();
  const result = await exportTable({ db, table: 'companies', out });
  return { rows: result.rows, ms: performance.now() - started, maxRssMb: process.resourceUsage().maxRSS / 1024 };
}

/** The baseline: the same rows, the same CSV, no library, no temp file. */
async function childBaseline(db: string, out: string): Promise<ChildReport> {
  const started = performance.now();
  const sqlite = new BetterSqlite3(db, { readonly: true });
  const stmt = sqlite.prepare('SELECT * FROM companies ORDER BY rowid').raw(true);
  const stream = createWriteStream(out);
  const field = (v: unknown): string => {
    if (v === null) return '';
    const s = String(v);
    if (s === '') return '""';
    return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
  };
  let buffer = stmt.columns().map((c) => field(c.name)).join(',') + '\n';
  let rows = 0;
  for (const row of stmt.iterate() as Iterable<unknown[]>) {
    rows++;
    buffer += row.map(field).join(',') + '\n';
    if (buffer.length > 1 << 16) {
      if (!stream.write(buffer)) await once(stream, 'drain');
      buffer = '';
    }
  }
  stream.end(buffer);
  await once(stream, 'finish');
  sqlite.close();
  return { rows, ms: performance.now() - started, maxRssMb: process.resourceUsage().maxRSS / 1024 };
}

function runChild(kind: 'export' | 'baseline', db: string, out: string): ChildReport {
  const child = spawnSync(process.execPath, ['--import', 'tsx', SELF, '--child', kind, db, out], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  if (child.status !== 0) throw new Error(`${kind} child failed (${child.status}): ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').pop()!) as ChildReport;
}

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Runs the bench and returns its figures. */
export async function runExportBench(): Promise<BenchResult[]> {
  const { rows, rounds, minRowsPerSecond, maxPeakRssMb } = EXPORT_BENCH;
  const dir = mkdtempSync(join(tmpdir(), 'netingest-bench-export-'));
  try {
    const db = join(dir, 'bench.db');
    fillDatabase(db, rows);
    const exportOut = join(dir, 'export.csv');
    const baselineOut = join(dir, 'baseline.csv');
    const exports: ChildReport[] = [];
    const baselines: ChildReport[] = [];
    for (let round = 0; round < rounds; round++) {
      baselines.push(runChild('baseline', db, baselineOut));
      exports.push(runChild('export', db, exportOut));
    }
    for (const r of [...exports, ...baselines]) if (r.rows !== rows) throw new Error(`exported ${r.rows} rows, expected ${rows}`);
    if ((await sha256(exportOut)) !== (await sha256(baselineOut))) {
      throw new Error('the export and the baseline wrote different CSV: the comparison would be unfair');
    }
    const rate = (r: ChildReport) => (r.rows / r.ms) * 1000;
    const exportRate = Math.max(...exports.map(rate));
    const baselineRate = Math.max(...baselines.map(rate));
    const exportRss = Math.max(...exports.map((r) => r.maxRssMb));
    const baselineRss = Math.max(...baselines.map((r) => r.maxRssMb));
    return [
      {
        name: `export ${rows.toLocaleString('en-US')} companies rows to CSV`,
        value: exportRate,
        unit: 'rows/s',
        target: `>= ${minRowsPerSecond.toLocaleString('en-US')} rows/s`,
        baseline: baselineRate,
        ratio: exportRate / baselineRate,
        met: exportRate >= minRowsPerSecond,
      },
      {
        name: 'export peak RSS (child process)',
        value: exportRss,
        unit: 'MB',
        target: `< ${maxPeakRssMb} MB`,
        baseline: baselineRss,
        ratio: exportRss / baselineRss,
        met: exportRss < maxPeakRssMb,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function childMain(kind: string, db: string, out: string): Promise<void> {
  const report = kind === 'export' ? await childExport(db, out) : await childBaseline(db, out);
  process.stdout.write(JSON.stringify(report) + '\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [flag, kind, db, out] = process.argv.slice(2);
  if (flag === '--child' && kind && db && out) await childMain(kind, db, out);
  else process.stdout.write(formatBenchTable(await runExportBench()));
}
