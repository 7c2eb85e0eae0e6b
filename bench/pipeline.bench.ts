/**
 * End-to-end throughput of the run engine with no latency and no rate limit: `runJobs` on a post-details job
 * (plan into the ledger, queue, client, validation, normalizers, raw archive, group commit) against a bare loop
 * of undici `request` at the same concurrency that reads and discards each body. Beside them, the storing floor
 * (storing-floor.ts): a hand-written loop that keeps each answer as the issue asks and does nothing else.
 * All three run in this process, alternately (best of each kept), against the same sandbox in its own process,
 * each over its own fresh set of URLs so that none is served from another's cache. Each side's CPU per answer
 * (this process and the sandbox's, over its timed window) is reported too: on two cores a side can never go
 * faster than two cores' worth of time over its CPU per answer, so those figures say what ratio is reachable.
 * Run: `npx tsx bench/pipeline.bench.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Agent, request } from 'undici';
import { postDetails } from '../src/operations/post-details.ts';
import { runJobs } from '../src/runner/run-jobs.ts';
import { canonicalPostUrl, networkHost } from '../src/urls/canonical.ts';
import { startSandboxProcess } from '../test/soak/sandbox-process.ts';
import { makeJob, postUrl, writeUrlCsv } from '../test/soak/inputs.ts';
import { formatBenchTable, type BenchResult } from './bench-result.ts';
import { cpuMicros } from './cpu-meter.ts';
import { storingFloor } from './storing-floor.ts';

/** Bench parameters, every default here. */
export const PIPELINE_BENCH = {
  inputs: 20_000,
  concurrency: 16,
  /** Inputs of the untimed warm-up of each side (JIT, sandbox, connections). */
  warmupInputs: 2_000,
  /** Alternating rounds of each side; the best of each is kept (the machine is shared, so noise only slows). */
  rounds: 2,
  /**
   * Stored answers a second the pipeline must reach: 12x the provider's top plan (10,000 calls a minute, 167/s),
   * so storing never binds a user. The old target, 0.5 of the bare loop, was retired by issue #19: it measured
   * the machine, not the users' limit. The ratio stays in the table for context.
   */
  minPerSecond: 2_000,
} as const;

export const PIPELINE_TOKEN = 'bench-pipeline-token';
const TOKEN = PIPELINE_TOKEN;
const HEADERS = { Authorization: `Bearer ${TOKEN}`, Accept: 'application/json', 'Content-Type': 'application/json' };

/** One timed run of a side: answers per second, and CPU microseconds per answer (this process + the sandbox). */
export interface SideRun {
  perSecond: number;
  cpuMicrosPerAnswer: number;
}

/** Times `work` over `count` answers, with the CPU this process and the sandbox (`sandboxPid`) spent meanwhile. */
export async function timed(count: number, sandboxPid: number, work: () => Promise<void>): Promise<SideRun> {
  const cpuBefore = cpuMicros(sandboxPid);
  const start = performance.now();
  await work();
  const seconds = (performance.now() - start) / 1000;
  return { perSecond: count / seconds, cpuMicrosPerAnswer: (cpuMicros(sandboxPid) - cpuBefore) / count };
}

/** A bare loop of undici `request` over `paths` at `concurrency`, bodies read and discarded. */
export async function bareLoop(origin: string, paths: string[], concurrency: number): Promise<void> {
  const dispatcher = new Agent({ connections: concurrency });
  let next = 0;
  let ok = 0;
  const worker = async () => {
    while (next < paths.length) {
      const path = paths[next++]!;
      const res = await request(origin + path, { dispatcher, headers: HEADERS });
      await res.body.text();
      if (res.statusCode === 200 || res.statusCode === 404) ok++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  await dispatcher.close();
  if (ok !== paths.length) throw new Error(`bare loop: ${paths.length - ok} answers other than 200/404`);
}

/** runJobs over a job of `count` fresh post URLs (validated, stored, committed); the CSV is written untimed. */
async function pipeline(dir: string, url: string, tag: string, count: number, concurrency: number, sandboxPid: number): Promise<SideRun> {
  await writeUrlCsv(join(dir, `${tag}.csv`), 'post_url', count, (i) => postUrl(tag, i));
  const job = makeJob(
    { name: tag, operation: 'post-details', input: { csv: `${tag}.csv`, column: 'post_url' }, rate: { requestsPerMinute: 1e9, concurrency } },
    dir,
  );
  return timed(count, sandboxPid, async () => {
    const summary = await runJobs({ dbPath: join(dir, `${tag}.db`), jobs: [job], api: { baseUrl: url, token: TOKEN } });
    const settled = summary.jobs[0]!.done + summary.jobs[0]!.notFound;
    if (summary.status !== 'completed' || settled !== count) {
      throw new Error(`pipeline run ended ${summary.status} with ${settled} of ${count} tasks settled`);
    }
  });
}

export function pathsFor(tag: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const c = canonicalPostUrl(postUrl(tag, i), networkHost());
    if (!c.ok) throw new Error(c.reason);
    return postDetails.send({ url: c.url }).path;
  });
}

/** Keeps the best of each figure across rounds: noise on a shared machine only slows a run and adds CPU. */
export function best(a: SideRun | null, b: SideRun): SideRun {
  if (a === null) return b;
  return { perSecond: Math.max(a.perSecond, b.perSecond), cpuMicrosPerAnswer: Math.min(a.cpuMicrosPerAnswer, b.cpuMicrosPerAnswer) };
}

/** Runs the bench and returns its figures (pipeline responses/s as a fraction of the bare loop's, and context). */
export async function runPipelineBench(): Promise<BenchResult[]> {
  const { inputs, concurrency, warmupInputs } = PIPELINE_BENCH;
  const dir = mkdtempSync(join(tmpdir(), 'netingest-bench-pipeline-'));
  const sandbox = await startSandboxProcess(['--quiet', '--token', TOKEN, '--credits', '1000000000']);
  const floorRun = (tag: string, n: number) => {
    const paths = pathsFor(tag, n);
    return timed(n, sandbox.pid, () => storingFloor(sandbox.url, paths, concurrency, HEADERS, join(dir, `${tag}.db`)));
  };
  const bareRun = (tag: string, n: number) => {
    const paths = pathsFor(tag, n);
    return timed(n, sandbox.pid, () => bareLoop(sandbox.url, paths, concurrency));
  };
  try {
    await bareRun('warm-bare', warmupInputs);
    await pipeline(dir, sandbox.url, 'warm-pipe', warmupInputs, concurrency, sandbox.pid);
    await floorRun('warm-floor', warmupInputs);
    let bare: SideRun | null = null;
    let piped: SideRun | null = null;
    let floor: SideRun | null = null;
    for (let r = 0; r < PIPELINE_BENCH.rounds; r++) {
      bare = best(bare, await bareRun(`bare${r}`, inputs));
      piped = best(piped, await pipeline(dir, sandbox.url, `pipe${r}`, inputs, concurrency, sandbox.pid));
      floor = best(floor, await floorRun(`floor${r}`, inputs));
    }
    const b = bare!;
    const p = piped!;
    const f = floor!;
    const ratio = p.perSecond / b.perSecond;
    const cpuRow = (side: string, run: SideRun): BenchResult => ({
      name: `pipeline: CPU per answer of the ${side} (this process + sandbox; baseline: the bare loop's)`,
      value: run.cpuMicrosPerAnswer,
      unit: 'us',
      target: '- (context)',
      baseline: b.cpuMicrosPerAnswer,
      ratio: run.cpuMicrosPerAnswer / b.cpuMicrosPerAnswer,
      met: true,
    });
    return [
      {
        name: `pipeline: post-details responses stored, ${inputs.toLocaleString('en-US')} inputs, concurrency ${concurrency}`,
        value: p.perSecond,
        unit: 'responses/s',
        target: `>= ${PIPELINE_BENCH.minPerSecond.toLocaleString('en-US')}/s (12x the top plan's 167 calls/s); ratio to a bare undici loop for context`,
        baseline: b.perSecond,
        ratio,
        met: p.perSecond >= PIPELINE_BENCH.minPerSecond,
      },
      {
        // No target of its own: what storing alone costs here, beside the pipeline.
        name: 'pipeline: storing floor (the issue\'s writes per answer, hand-written, one thread)',
        value: f.perSecond,
        unit: 'responses/s',
        target: '- (context)',
        baseline: b.perSecond,
        ratio: f.perSecond / b.perSecond,
        met: true,
      },
      cpuRow('pipeline', p),
      cpuRow('storing floor', f),
    ];
  } finally {
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(formatBenchTable(await runPipelineBench()));
}
