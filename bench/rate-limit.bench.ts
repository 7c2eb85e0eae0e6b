/**
 * Rate gate accuracy, measured where it matters: at the server. A post-details job runs with
 * `requestsPerMinute` R for a little over a minute against the sandbox in its own process, which logs the
 * arrival time of every request. Two figures: the achieved rate as a fraction of R (the gate should not waste
 * the user's plan), and the most calls in any sliding 60-second window (must never exceed R: that is the
 * promise to the provider). The only long benchmark (about 65 s). Run: `npx tsx bench/rate-limit.bench.ts`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { runJobs } from '../src/runner/run-jobs.ts';
import { startSandboxProcess } from '../test/soak/sandbox-process.ts';
import { makeJob, postUrl, writeUrlCsv } from '../test/soak/inputs.ts';
import { formatBenchTable, type BenchResult } from './bench-result.ts';

/** Bench parameters, every default here. */
export const RATE_LIMIT_BENCH = {
  requestsPerMinute: 1200,
  concurrency: 4,
  /** How long calls are sent; more than a minute so that full sliding windows are measured. */
  durationMs: 65_000,
  /** Sandbox latency range (ms), so that calls overlap as they do against a real service. */
  latencyMs: '5-40',
  minAchievedRatio: 0.97,
  windowMs: 60_000,
} as const;

const TOKEN = 'bench-rate-token';

/** The most arrivals within any window of `windowMs` (half-open: [t, t + windowMs)). */
export function maxInSlidingWindow(sortedTimesMs: number[], windowMs: number): number {
  let max = 0;
  let start = 0;
  for (let end = 0; end < sortedTimesMs.length; end++) {
    while (sortedTimesMs[end]! - sortedTimesMs[start]! >= windowMs) start++;
    max = Math.max(max, end - start + 1);
  }
  return max;
}

/** Runs the bench and returns its figures (achieved rate vs the limit, busiest sliding window). */
export async function runRateLimitBench(): Promise<BenchResult[]> {
  const { requestsPerMinute: limit, concurrency, durationMs, windowMs } = RATE_LIMIT_BENCH;
  const dir = mkdtempSync(join(tmpdir(), 'netingest-bench-rate-'));
  // More inputs than the run can get through, so the gate, not the input, ends the minute.
  const inputs = Math.ceil((limit * durationMs) / 60_000 * 1.5);
  await writeUrlCsv(join(dir, 'posts.csv'), 'post_url', inputs, (i) => postUrl('rate', i));
  const sandbox = await startSandboxProcess(['--token', TOKEN, '--credits', '100000000', '--latency-ms', RATE_LIMIT_BENCH.latencyMs]);
  try {
    const job = makeJob(
      { name: 'rate-bench', operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: { requestsPerMinute: limit, concurrency } },
      dir,
    );
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), durationMs);
    const summary = await runJobs({ dbPath: join(dir, 'bench.db'), jobs: [job], api: { baseUrl: sandbox.url, token: TOKEN }, signal: controller.signal });
    clearTimeout(timer);
    if (summary.status !== 'interrupted') throw new Error(`the run should have been stopped by the bench, it ended ${summary.status}`);
    await sandbox.stop();
    const times = sandbox
      .requests()
      .filter((r) => r.target.startsWith('/v1/api/post-details'))
      .map((r) => r.atMs)
      .sort((a, b) => a - b);
    if (times.length < 2) throw new Error('the sandbox logged fewer than two calls');
    const spanMs = times[times.length - 1]! - times[0]!;
    const achievedPerMinute = ((times.length - 1) / spanMs) * 60_000;
    const busiest = maxInSlidingWindow(times, windowMs);
    const achievedRatio = achievedPerMinute / limit;
    return [
      {
        name: `rate limit: achieved rate at ${limit}/min, concurrency ${concurrency} (${times.length} calls in ${(spanMs / 1000).toFixed(1)} s)`,
        value: achievedPerMinute,
        unit: 'calls/min',
        target: `>= ${RATE_LIMIT_BENCH.minAchievedRatio} of the limit`,
        baseline: limit,
        ratio: achievedRatio,
        met: achievedRatio >= RATE_LIMIT_BENCH.minAchievedRatio,
      },
      {
        name: 'rate limit: most calls in any sliding 60 s window (server arrival times)',
        value: busiest,
        unit: 'calls',
        target: '<= the limit, never over',
        baseline: limit,
        ratio: busiest / limit,
        met: busiest <= limit,
      },
    ];
  } finally {
    await sandbox.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.stdout.write(formatBenchTable(await runRateLimitBench()));
}
