/**
 * Start-up time of the installed executable (dist/bin.js, built first): `netingest --help`, `--version`, and a
 * run's fixed cost from spawn to its first API call (on an existing database, as nightly; a new one too) and to its
 * exit, each the median of fresh processes, against `node -e 0` measured in the same rounds. The sources through
 * tsx (`node src/cli/bin.mjs --help`) are shown beside them for context.
 */
import { execFileSync, spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { formatBenchTable, type BenchResult } from './bench-result.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST_BIN = join(ROOT, 'dist/bin.js');
const SOURCE_BIN = join(ROOT, 'src/cli/bin.mjs');

/** Every setting of the bench in one place. */
export const START_TIME_BENCH = {
  /** Rounds; each round starts every kind of process once, so that a busy spell slows all of them alike. */
  rounds: Number(process.env.START_BENCH_ROUNDS ?? 15),
  helpTargetMs: 200,
  runStartTargetMs: 300,
} as const;

/** Milliseconds from spawn to exit of `node <args>`. */
function timeToExit(args: string[], cwd: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: 'ignore' });
    child.on('error', reject);
    child.on('exit', () => resolve(performance.now() - started));
  });
}

/**
 * A stand-in API that notes when the first request arrives and answers 401, which ends the run at once. The
 * next start gets a fresh slot in `arrivals`.
 */
function firstCallServer(): Promise<{ server: Server; url: string; nextArrival: () => Promise<number> }> {
  let waiting: ((at: number) => void) | null = null;
  const server = createServer((req, res) => {
    const at = performance.now();
    waiting?.(at);
    waiting = null;
    req.resume();
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({ server, url: `http://127.0.0.1:${port}`, nextArrival: () => new Promise((r) => (waiting = r)) });
    });
  });
}

/** Milliseconds from spawning `netingest run` on `db` to its first request reaching the server, and to its exit. */
async function runStartMs(dir: string, job: string, api: Awaited<ReturnType<typeof firstCallServer>>, db: string): Promise<{ firstCallMs: number; exitMs: number }> {
  const arrival = api.nextArrival();
  const started = performance.now();
  const child = spawn(process.execPath, [DIST_BIN, 'run', job, '--db', join(dir, db)], {
    cwd: dir,
    stdio: 'ignore',
    env: { ...process.env, NETINGEST_API_URL: api.url, NETINGEST_API_TOKEN: 'bench-token' },
  });
  const exited = new Promise<number>((r) => child.on('exit', () => r(performance.now())));
  const at = await arrival;
  return { firstCallMs: at - started, exitMs: (await exited) - started };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export async function runStartTimeBench(): Promise<BenchResult[]> {
  // The executable users run is the compiled one: measure what the sources build to now.
  execFileSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { stdio: 'inherit' });
  const dir = mkdtempSync(join(tmpdir(), 'netingest-start-'));
  const api = await firstCallServer();
  try {
    writeFileSync(join(dir, 'leads.csv'), 'company_url\nhttps://www.network.com/company/acme\n');
    const jsonJob = join(dir, 'leads.json');
    writeFileSync(jsonJob, JSON.stringify({ operation: 'similar-companies', input: { csv: 'leads.csv', column: 'company_url' } }));
    const tsJob = join(dir, 'leads-ts.ts');
    writeFileSync(tsJob, "export default { operation: 'similar-companies' as const, input: { csv: 'leads.csv', column: 'company_url' } };\n");
    const samples = { node: [] as number[], help: [] as number[], version: [] as number[], sourceHelp: [] as number[], run: [] as number[], runExit: [] as number[], runNewDb: [] as number[], runTs: [] as number[] };
    // The nightly case: the database exists (its task, refused with 401, stays due for the next start).
    await runStartMs(dir, jsonJob, api, 'nightly.db');
    for (let i = 0; i < START_TIME_BENCH.rounds; i++) {
      samples.node.push(await timeToExit(['-e', '0'], dir));
      samples.help.push(await timeToExit([DIST_BIN, '--help'], dir));
      samples.version.push(await timeToExit([DIST_BIN, '--version'], dir));
      samples.sourceHelp.push(await timeToExit([SOURCE_BIN, '--help'], dir));
      const nightly = await runStartMs(dir, jsonJob, api, 'nightly.db');
      samples.run.push(nightly.firstCallMs);
      samples.runExit.push(nightly.exitMs);
      samples.runNewDb.push((await runStartMs(dir, jsonJob, api, `new-${i}.db`)).firstCallMs);
      samples.runTs.push((await runStartMs(dir, tsJob, api, 'nightly.db')).firstCallMs);
    }
    const node = median(samples.node);
    const row = (name: string, values: number[], targetMs: number | null): BenchResult => {
      const value = median(values);
      return {
        name,
        value,
        unit: 'ms',
        target: targetMs === null ? '- (context)' : `< ${targetMs} ms`,
        baseline: node,
        ratio: value / node,
        met: targetMs === null ? true : value < targetMs,
      };
    };
    const n = START_TIME_BENCH.rounds;
    return [
      { name: `start: node -e 0 (median of ${n})`, value: node, unit: 'ms', target: '- (baseline)', baseline: null, ratio: null, met: true },
      row(`start: netingest --help (dist, median of ${n})`, samples.help, START_TIME_BENCH.helpTargetMs),
      row(`start: netingest --version (dist, median of ${n})`, samples.version, START_TIME_BENCH.helpTargetMs),
      row(`start: run, spawn to first API call, .json job, existing database (median of ${n})`, samples.run, START_TIME_BENCH.runStartTargetMs),
      row(`start: run, spawn to exit, the same run (its first call answered 401, which ends it; median of ${n})`, samples.runExit, null),
      row(`start: run, the same on a new database (migrations applied, median of ${n})`, samples.runNewDb, null),
      row(`start: run, the same with a .ts job (tsx loaded), existing database (median of ${n})`, samples.runTs, null),
      row(`start: node src/cli/bin.mjs --help (sources through tsx, median of ${n})`, samples.sourceHelp, null),
    ];
  } finally {
    api.server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(formatBenchTable(await runStartTimeBench()));
}
