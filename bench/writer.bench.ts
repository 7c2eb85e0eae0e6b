/**
 * Where answers are committed: group commits on the run's own thread (this tree) against the writer thread
 * that did it before (the sources of a baseline revision, by default 445179b, the last with the thread,
 * extracted with `git archive` and imported beside this tree's). Both run `runJobs` on post-details jobs of
 * fresh URLs against the same sandbox (its own process), alternately, in two settings:
 *
 * - the provider's top plan: 10,000 calls a minute, 100-300 ms of latency per answer, concurrency 64;
 * - flat out: no rate limit, no latency, concurrency 16 (as bench/pipeline.bench.ts).
 *
 * Per side: calls a minute as the api_calls rows were written ((n - 1) / (last - first)), answers stored per
 * second of the whole run, and this process's CPU per answer (every thread of it; the sandbox is left out, the
 * same for both). The rule: keep the simpler unless the other is more than 20% faster at 10,000 a minute.
 * Run: `npx tsx bench/writer.bench.ts [baseline-revision]`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { runJobs as runHere, type RunOptions, type RunSummary } from '../src/runner/run-jobs.ts';
import { startSandboxProcess, ROOT } from '../test/soak/sandbox-process.ts';
import { makeJob, postUrl, writeUrlCsv } from '../test/soak/inputs.ts';
import { formatBenchTable, type BenchResult } from './bench-result.ts';

/** Bench parameters, every default here. */
export const WRITER_BENCH = {
  baselineRevision: '445179b',
  paced: { inputs: 5_000, concurrency: 64, requestsPerMinute: 10_000, latencyMs: '100-300' },
  flatOut: { inputs: 20_000, concurrency: 16, requestsPerMinute: 1e9, latencyMs: '0' },
  warmupInputs: 1_000,
  /** Alternating rounds of each side per setting; the best of each is kept. */
  rounds: 2,
  /** The other side must be more than this much faster to be kept over the simpler one. */
  keepSimplerWithin: 0.2,
} as const;

const TOKEN = 'bench-writer-token';

type RunJobs = (options: RunOptions) => Promise<RunSummary>;
type Setting = (typeof WRITER_BENCH)['paced'] | (typeof WRITER_BENCH)['flatOut'];

/** One timed run of a side. */
interface SideRun {
  callsPerMinute: number;
  storedPerSecond: number;
  cpuMicrosPerAnswer: number;
}

/** The baseline's sources in a temporary folder (with this checkout's node_modules), and its runJobs. */
async function baselineRunJobs(revision: string, dir: string): Promise<RunJobs> {
  const root = join(dir, 'baseline');
  execFileSync('mkdir', ['-p', root]);
  execFileSync('sh', ['-c', `git -C "${ROOT}" archive "${revision}" src migrations package.json | tar -x -C "${root}"`]);
  symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  const module = (await import(pathToFileURL(join(root, 'src/runner/run-jobs.ts')).href)) as { runJobs: RunJobs };
  return module.runJobs;
}

/** The api_calls rows' pace: (n - 1) calls over the time from the first to the last. */
function callsPerMinute(dbPath: string): number {
  const sqlite = new BetterSqlite3(dbPath, { readonly: true });
  try {
    const row = sqlite.prepare(`SELECT count(*) AS n, min(at) AS first, max(at) AS last FROM api_calls`).get() as { n: number; first: string; last: string };
    return ((row.n - 1) * 60_000) / (Date.parse(row.last) - Date.parse(row.first));
  } finally {
    sqlite.close();
  }
}

/** `runJobs` over a job of `count` fresh post URLs; the CSV is written untimed. */
async function side(runJobs: RunJobs, dir: string, url: string, tag: string, count: number, setting: Setting): Promise<SideRun> {
  await writeUrlCsv(join(dir, `${tag}.csv`), 'post_url', count, (i) => postUrl(tag, i));
  const job = makeJob(
    {
      name: tag, operation: 'post-details', input: { csv: `${tag}.csv`, column: 'post_url' },
      rate: { requestsPerMinute: setting.requestsPerMinute, concurrency: setting.concurrency },
    },
    dir,
  );
  const dbPath = join(dir, `${tag}.db`);
  const cpuBefore = process.cpuUsage();
  const start = performance.now();
  const summary = await runJobs({ dbPath, jobs: [job], api: { baseUrl: url, token: TOKEN } });
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  const settled = summary.jobs[0]!.done + summary.jobs[0]!.notFound;
  if (summary.status !== 'completed' || settled !== count) throw new Error(`${tag} ended ${summary.status} with ${settled} of ${count} tasks settled`);
  return { callsPerMinute: callsPerMinute(dbPath), storedPerSecond: count / seconds, cpuMicrosPerAnswer: (cpu.user + cpu.system) / count };
}

function best(a: SideRun | null, b: SideRun): SideRun {
  if (a === null) return b;
  return {
    callsPerMinute: Math.max(a.callsPerMinute, b.callsPerMinute),
    storedPerSecond: Math.max(a.storedPerSecond, b.storedPerSecond),
    cpuMicrosPerAnswer: Math.min(a.cpuMicrosPerAnswer, b.cpuMicrosPerAnswer),
  };
}

/** Both sides in one setting, alternately, against a sandbox of that setting's latency. */
async function compare(name: string, setting: Setting, sides: { group: RunJobs; thread: RunJobs }, dir: string): Promise<{ group: SideRun; thread: SideRun }> {
  const sandbox = await startSandboxProcess(['--quiet', '--token', TOKEN, '--credits', '1000000000', '--latency-ms', setting.latencyMs]);
  try {
    await side(sides.thread, dir, sandbox.url, `${name}-warm-thread`, WRITER_BENCH.warmupInputs, setting);
    await side(sides.group, dir, sandbox.url, `${name}-warm-group`, WRITER_BENCH.warmupInputs, setting);
    let group: SideRun | null = null;
    let thread: SideRun | null = null;
    for (let r = 0; r < WRITER_BENCH.rounds; r++) {
      thread = best(thread, await side(sides.thread, dir, sandbox.url, `${name}-thread${r}`, setting.inputs, setting));
      group = best(group, await side(sides.group, dir, sandbox.url, `${name}-group${r}`, setting.inputs, setting));
    }
    return { group: group!, thread: thread! };
  } finally {
    await sandbox.stop();
  }
}

/** The rows of one setting: each figure of the group commit against the writer thread's. */
function rows(label: string, { group, thread }: { group: SideRun; thread: SideRun }, decides: boolean): BenchResult[] {
  const row = (what: string, unit: string, pick: (s: SideRun) => number, target: string, met: boolean): BenchResult => ({
    name: `writer: ${label}, ${what} (run-thread group commit; baseline: writer thread)`,
    value: pick(group),
    unit,
    target,
    baseline: pick(thread),
    ratio: pick(group) / pick(thread),
    met,
  });
  const within = 1 / (1 + WRITER_BENCH.keepSimplerWithin);
  const keepsUp = group.storedPerSecond / thread.storedPerSecond >= within;
  return [
    row('calls a minute', 'calls/min', (s) => s.callsPerMinute, '-', true),
    row('answers stored', 'answers/s', (s) => s.storedPerSecond, decides ? '>= 1/1.2 of the thread (the decision)' : '-', !decides || keepsUp),
    row('CPU per answer (this process)', 'us', (s) => s.cpuMicrosPerAnswer, '-', true),
  ];
}

/** Runs the bench and returns its figures. */
export async function runWriterBench(revision: string = WRITER_BENCH.baselineRevision): Promise<BenchResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'netingest-bench-writer-'));
  try {
    const sides = { group: runHere, thread: await baselineRunJobs(revision, dir) };
    const paced = await compare('paced', WRITER_BENCH.paced, sides, dir);
    const flat = await compare('flat', WRITER_BENCH.flatOut, sides, dir);
    return [
      ...rows('10,000 calls/min, 100-300 ms latency, concurrency 64', paced, true),
      ...rows('flat out, no latency, concurrency 16', flat, false),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(formatBenchTable(await runWriterBench(process.argv[2])));
}
