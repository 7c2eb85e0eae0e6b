/**
 * End-to-end throughput of the run engine with no latency and no rate limit: `runJobs` on a post-details job
 * (plan into the ledger, queue, client, validation, normalizers, raw archive, group commit) against a bare loop
 * of undici `request` at the same concurrency that reads and discards each body. Both run in this process,
 * alternately (best of each kept), against the same sandbox in its own process (so each side has a core),
 * each over its own fresh set of URLs so that neither is served from the other's cache.
 * Run: `npx tsx bench/pipeline.bench.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Agent, request } from 'undici';
import { runJobs } from '../src/runner/run-jobs.ts';
import { canonicalPostUrl } from '../src/urls/canonical.ts';
import { postDetailsPath } from '../src/api/requests.ts';
import { startSandboxProcess } from '../test/soak/sandbox-process.ts';
import { makeJob, postUrl, writeUrlCsv } from '../test/soak/inputs.ts';
import { formatBenchTable, type BenchResult } from './bench-result.ts';

/** Bench parameters, every default here. */
export const PIPELINE_BENCH = {
  inputs: 20_000,
  concurrency: 16,
  /** Inputs of the untimed warm-up of each side (JIT, sandbox, connections). */
  warmupInputs: 2_000,
  /** Alternating rounds of each side; the best of each is kept (the machine is shared, so noise only slows). */
  rounds: 2,
  minRatio: 0.5,
} as const;

const TOKEN = 'bench-pipeline-token';

/** Responses per second of a bare undici loop over `paths` at `concurrency`, bodies read and discarded. */
async function bareLoop(origin: string, paths: string[], concurrency: number): Promise<number> {
  const dispatcher = new Agent({ connections: concurrency });
  const headers = { Authorization: `Bearer ${TOKEN}`, Accept: 'application/json', 'Content-Type': 'application/json' };
  let next = 0;
  let ok = 0;
  const worker = async () => {
    while (next < paths.length) {
      const path = paths[next++]!;
      const res = await request(origin + path, { dispatcher, headers });
      await res.body.text();
      if (res.statusCode === 200 || res.statusCode === 404) ok++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (performance.now() - start) / 1000;
  await dispatcher.close();
  if (ok !== paths.length) throw new Error(`bare loop: ${paths.length - ok} answers other than 200/404`);
  return paths.length / seconds;
}

/** Responses per second of runJobs over a job of `count` fresh post URLs (validated, stored, committed). */
async function pipeline(dir: string, url: string, tag: string, count: number, concurrency: number): Promise<number> {
  await writeUrlCsv(join(dir, `${tag}.csv`), 'post_url', count, (i) => postUrl(tag, i));
  const job = makeJob(
    { name: tag, operation: 'post-details', input: { csv: `${tag}.csv`, column: 'post_url' }, rate: { requestsPerMinute: 1e9, concurrency } },
    dir,
  );
  const start = performance.now();
  const summary = await runJobs({ dbPath: join(dir, `${tag}.db`), jobs: [job], api: { baseUrl: url, token: TOKEN } });
  const seconds = (performance.now() - start) / 1000;
  const settled = summary.jobs[0]!.done + summary.jobs[0]!.notFound;
  if (summary.status !== 'completed' || settled !== count) {
    throw new Error(`pipeline run ended ${summary.status} with ${settled} of ${count} tasks settled`);
  }
  return count / seconds;
}

function pathsFor(tag: string, count: number): string[] {
  return Array.from({ length: count }, (_, i) => {
    const c = canonicalPostUrl(postUrl(tag, i));
    if (!c.ok) throw new Error(c.reason);
    return postDetailsPath(c.url);
  });
}

/** Runs the bench and returns its figure (pipeline responses/s as a fraction of the bare loop's). */
export async function runPipelineBench(): Promise<BenchResult[]> {
  const { inputs, concurrency, warmupInputs } = PIPELINE_BENCH;
  const dir = mkdtempSync(join(tmpdir(), 'netingest-bench-pipeline-'));
  const sandbox = await startSandboxProcess(['--quiet', '--token', TOKEN, '--credits', '1000000000']);
  try {
    await bareLoop(sandbox.url, pathsFor('warm-bare', warmupInputs), concurrency);
    await pipeline(dir, sandbox.url, 'warm-pipe', warmupInputs, concurrency);
    let bare = 0;
    let piped = 0;
    for (let r = 0; r < PIPELINE_BENCH.rounds; r++) {
      bare = Math.max(bare, await bareLoop(sandbox.url, pathsFor(`bare${r}`, inputs), concurrency));
      piped = Math.max(piped, await pipeline(dir, sandbox.url, `pipe${r}`, inputs, concurrency));
    }
    const ratio = piped / bare;
    return [
      {
        name: `pipeline: post-details responses stored, ${inputs.toLocaleString('en-US')} inputs, concurrency ${concurrency}`,
        value: piped,
        unit: 'responses/s',
        target: `>= ${PIPELINE_BENCH.minRatio} of a bare undici loop`,
        baseline: bare,
        ratio,
        met: ratio >= PIPELINE_BENCH.minRatio,
      },
    ];
  } finally {
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(formatBenchTable(await runPipelineBench()));
}
