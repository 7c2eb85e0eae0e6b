/**
 * Filling the task ledger from a large input: a similar-companies job over a generated CSV of unique company
 * URLs (mixed spellings) streamed through the planner into `tasks` with `planIntoLedger`, the path every run
 * takes before its first call. Figures: the fill rate at 1,000,000 rows against a plain better-sqlite3 loop
 * inserting the same rows in batched transactions, and the peak RSS at 100,000 and at 1,000,000 rows side by
 * side. Each measurement runs in a fresh child process that reports its own `resourceUsage().maxRSS`, so the
 * growth with the input is visible. Run: `npx tsx bench/ledger-fill.bench.ts`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { openDatabase } from '../src/store/open.ts';
import { createLedger } from '../src/store/ledger.ts';
import { createRunLog } from '../src/store/runs.ts';
import { planIntoLedger, PLAN_DEFAULTS } from '../src/runner/plan-into-ledger.ts';
import { companyUrl, makeJob, writeUrlCsv } from '../test/soak/inputs.ts';
import { ROOT } from '../test/soak/sandbox-process.ts';
import { formatBenchTable, type BenchResult } from './bench-result.ts';

/** Bench parameters, every default here. */
export const LEDGER_FILL_BENCH = {
  smallRows: 100_000,
  largeRows: 1_000_000,
  minRowsPerSecond: 100_000,
  maxRssMb: 250,
} as const;

const TAG = 'fill';

/** What a child measured. */
interface ChildReport {
  rows: number;
  seconds: number;
  maxRssMb: number;
}

type ChildMode = 'fill' | 'plain';

/** Runs one measurement in a fresh process (this file with `--child`) and returns its report. */
function inChild(mode: ChildMode, csv: string, rows: number, db: string): Promise<ChildReport> {
  const self = fileURLToPath(import.meta.url);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', self, '--child', mode, csv, String(rows), db], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) return reject(new Error(`ledger-fill child (${mode}, ${rows} rows) exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').pop()!) as ChildReport);
    });
  });
}

/** The child's work: plan the CSV into a fresh ledger, or insert the same rows with a plain loop. */
async function childMain(mode: ChildMode, csv: string, rows: number, dbPath: string): Promise<void> {
  const database = openDatabase(dbPath);
  let seconds: number;
  let written: number;
  if (mode === 'fill') {
    const runId = createRunLog(database).start({ jobs: [TAG], startedAt: new Date().toISOString(), pid: process.pid, host: 'bench' });
    const job = makeJob({ name: TAG, operation: 'similar-companies', input: { csv, column: 'company_url' } }, ROOT);
    const start = performance.now();
    const counts = await planIntoLedger(job, createLedger(database), runId);
    seconds = (performance.now() - start) / 1000;
    written = counts.tasks;
  } else {
    written = rows;
    seconds = plainInsert(database.sqlite, rows);
  }
  const check = database.sqlite.prepare('SELECT count(*) FROM tasks').pluck().get() as number;
  database.close();
  if (check !== rows || written !== rows) throw new Error(`expected ${rows} tasks, planned ${written}, table holds ${check}`);
  const report: ChildReport = { rows, seconds, maxRssMb: process.resourceUsage().maxRSS / 1024 };
  process.stdout.write(JSON.stringify(report) + '\n');
}

/**
 * The same task rows as the planner writes (canonical URL, page 1, the request JSON), inserted with one
 * prepared statement in transactions of the planner's batch size. Rows are built before each batch's timer.
 */
function plainInsert(sqlite: ReturnType<typeof openDatabase>['sqlite'], rows: number): number {
  const insert = sqlite.prepare(`INSERT INTO tasks (job, operation, input_key, page, request_json, input_line, status, attempts, created_at, updated_at, run_id)
    VALUES (?, 'similar-companies', ?, 1, ?, ?, 'pending', 0, ?, ?, 1)`);
  const batch = sqlite.transaction((params: Array<[string, string, number]>, at: string) => {
    for (const [url, request, line] of params) insert.run(TAG, url, request, line, at, at);
  });
  let seconds = 0;
  for (let from = 0; from < rows; from += PLAN_DEFAULTS.batchRows) {
    const params: Array<[string, string, number]> = [];
    for (let i = from; i < Math.min(rows, from + PLAN_DEFAULTS.batchRows); i++) {
      const url = `https://network.com/company/${TAG}-co-${i}`;
      params.push([url, JSON.stringify({ url, account: {}, page: 1, num: 10 }), i + 2]);
    }
    const at = new Date().toISOString();
    const start = performance.now();
    batch(params, at);
    seconds += (performance.now() - start) / 1000;
  }
  return seconds;
}

/** Runs the bench and returns its figures (fill rate vs plain loop, peak RSS at 100k and 1M rows). */
export async function runLedgerFillBench(): Promise<BenchResult[]> {
  const { smallRows, largeRows } = LEDGER_FILL_BENCH;
  const dir = mkdtempSync(join(tmpdir(), 'netingest-bench-fill-'));
  try {
    const smallCsv = join(dir, 'small.csv');
    const largeCsv = join(dir, 'large.csv');
    await writeUrlCsv(smallCsv, 'company_url', smallRows, (i) => companyUrl(TAG, i));
    await writeUrlCsv(largeCsv, 'company_url', largeRows, (i) => companyUrl(TAG, i));
    const small = await inChild('fill', smallCsv, smallRows, join(dir, 'small.db'));
    const large = await inChild('fill', largeCsv, largeRows, join(dir, 'large.db'));
    const plain = await inChild('plain', largeCsv, largeRows, join(dir, 'plain.db'));
    const rate = large.rows / large.seconds;
    const plainRate = plain.rows / plain.seconds;
    return [
      {
        name: `ledger fill: planIntoLedger, ${largeRows.toLocaleString('en-US')}-row CSV (similar-companies)`,
        value: rate,
        unit: 'rows/s',
        target: `>= ${LEDGER_FILL_BENCH.minRowsPerSecond.toLocaleString('en-US')} rows/s`,
        baseline: plainRate,
        ratio: rate / plainRate,
        met: rate >= LEDGER_FILL_BENCH.minRowsPerSecond,
      },
      {
        name: `ledger fill: peak RSS of a fresh process, ${smallRows.toLocaleString('en-US')} rows`,
        value: small.maxRssMb,
        unit: 'MB',
        target: '- (for the growth)',
        baseline: null,
        ratio: null,
        met: true,
      },
      {
        name: `ledger fill: peak RSS of a fresh process, ${largeRows.toLocaleString('en-US')} rows (baseline: ${smallRows.toLocaleString('en-US')})`,
        value: large.maxRssMb,
        unit: 'MB',
        target: `< ${LEDGER_FILL_BENCH.maxRssMb} MB`,
        baseline: small.maxRssMb,
        ratio: large.maxRssMb / small.maxRssMb,
        met: large.maxRssMb < LEDGER_FILL_BENCH.maxRssMb,
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  if (process.argv[2] === '--child') {
    const [mode, csv, rows, db] = process.argv.slice(3);
    await childMain(mode as ChildMode, csv!, Number(rows), db!);
  } else {
    process.stdout.write(formatBenchTable(await runLedgerFillBench()));
  }
}
