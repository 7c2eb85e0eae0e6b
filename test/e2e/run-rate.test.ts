/**
 * The rate limit as the service sees it: arrival times from the sandbox's request log, never the client's own
 * clock. requestsPerMinute 600 means no sliding 60-second window over 600 calls; the gate spaces starts
 * evenly (~100 ms apart: unit-rate-gate.test.ts checks the spacing itself), and the run still reaches the rate
 * it was given.
 *
 * The spacing test runs the CLI in its own process, as in production: with the runner and the sandbox in one
 * event loop, a stall delays the server's reading of one request but not the next, which measures the test
 * harness rather than the gate.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.ts';
import { FAST_RETRY, cliEnv, csv, makeWorkspace, postUrls, run, runCli, taskStatuses, operationRequests } from '../support/run-helpers.ts';

const TOKEN = 'rate-token-0d4e';
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const PER_MINUTE = 600;

/** Arrival times of a run of `tasks` post lookups at 600/minute, concurrency 4; in-process or via the CLI. */
async function measuredRun(latencyMs: number | [number, number], tasks: number, via: 'cli' | 'in-process'): Promise<number[]> {
  const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 100_000 }, notFoundRate: 0, latencyMs });
  const ws = await makeWorkspace();
  cleanups.push(() => sandbox.stop(), () => ws.cleanup());
  await ws.write('posts.csv', csv(['post_url'], postUrls(tasks).map((u) => [u])));
  const file = await ws.job('paced', {
    operation: 'post-details',
    input: { csv: 'posts.csv', column: 'post_url' },
    rate: { requestsPerMinute: PER_MINUTE, concurrency: 4 },
    retry: FAST_RETRY,
  });
  if (via === 'cli') {
    const cli = await runCli(['run', file, '--db', ws.db], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    expect(cli.code, cli.stderr).toBe(0);
  } else {
    const summary = await run(ws, sandbox, TOKEN, await ws.load(file));
    expect(summary.status).toBe('completed');
  }
  expect(taskStatuses(ws, 'paced')).toEqual({ done: tasks });
  const at = operationRequests(sandbox).map((r) => r.at);
  expect(at).toHaveLength(tasks);
  return at;
}

function maxInSlidingMinute(at: number[]): number {
  return maxInWindow(at, 60_000);
}

/** The most arrivals in any window of `ms` starting at an arrival. */
function maxInWindow(at: number[], ms: number): number {
  let max = 0;
  for (let i = 0; i < at.length; i++) {
    const inWindow = at.filter((t) => t >= at[i]! && t < at[i]! + ms).length;
    max = Math.max(max, inWindow);
  }
  return max;
}

/** The median gap between consecutive arrivals, in ms. */
function medianGap(at: number[]): number {
  const gaps = at.slice(1).map((t, i) => t - at[i]!).sort((a, b) => a - b);
  return gaps[Math.floor(gaps.length / 2)]!;
}

/** The interval the limit allows between two starts, in ms (the gate adds its 2% margin to it). */
const INTERVAL_MS = 60_000 / PER_MINUTE;

describe('requestsPerMinute', () => {
  // Arrival times are read in another process than the one that sends: when either is descheduled (two cores,
  // a busy suite), one call is read late while the next keeps its own turn, so single gaps say more about the
  // scheduler than the gate (seen: 33 ms after a 237 ms stall at a 100 ms interval). The gate's own spacing is
  // tested on fake timers (unit-rate-gate.test.ts); here, what the service would see: no sliding minute over
  // the limit, no burst (no second holding half again the calls a second allows), and the pace. The pace is
  // the median gap, not the mean rate: the gate spaces each start from the previous one as it happened, so a
  // process starved of CPU (load 10 on two cores) loses every late wake-up for good, and the mean rate fell
  // under 90% with the gate right. At load 19 the median itself reached 1.25-1.5 intervals (a starved CLI
  // wakes 20-50 ms late), so it may be up to 1.5 intervals: a gate that spaces nothing, or twice the
  // interval (a per-second/per-minute slip, the margin counted twice), or that waits for each answer
  // (150-250 ms in the second test) is still outside.
  it('spaces call starts evenly: no window over the limit, no burst, the median gap the interval', { retry: 1 }, async () => {
    const at = await measuredRun(0, 25, 'cli');
    expect(maxInSlidingMinute(at)).toBeLessThanOrEqual(PER_MINUTE);
    const gaps = at.slice(1).map((t, i) => Math.round((t - at[i]!) * 10) / 10);
    expect(maxInWindow(at, 1_000), `gaps: ${gaps.join(' ')}`).toBeLessThanOrEqual((PER_MINUTE / 60) * 1.5);
    expect(medianGap(at), `gaps: ${gaps.join(' ')}`).toBeGreaterThanOrEqual(INTERVAL_MS * 0.98);
    expect(medianGap(at), `gaps: ${gaps.join(' ')}`).toBeLessThanOrEqual(INTERVAL_MS * 1.5);
  });

  // One retry, as above: a stall of the shared event loop longer than a few intervals costs the pace, not the gate.
  it('keeps the pace when answers take longer than the interval (concurrency fills the gaps)', { retry: 1 }, async () => {
    const at = await measuredRun([150, 250], 20, 'in-process');
    expect(maxInSlidingMinute(at)).toBeLessThanOrEqual(PER_MINUTE);
    // The first answers go one at a time (the credit guard learns the balance and the cost from them), so the
    // pace is measured from the third call on. Calls that waited for answers would be 150-250 ms apart, and
    // more than 150 ms (1.5 intervals) in the median.
    const steady = at.slice(2);
    const gaps = steady.slice(1).map((t, i) => Math.round(t - steady[i]!));
    expect(medianGap(steady), `gaps: ${gaps.join(' ')}`).toBeGreaterThanOrEqual(INTERVAL_MS * 0.95);
    expect(medianGap(steady), `gaps: ${gaps.join(' ')}`).toBeLessThanOrEqual(INTERVAL_MS * 1.5);
  });

  it('keeps the spacing from one job to the next in a run of several jobs', async () => {
    // A 500 ms interval: far more than the few ms between one job's last call and the next job's first when
    // each job has its own gate (measured: 12.6 ms).
    const SLOW_PER_MINUTE = 120;
    const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 100_000 }, notFoundRate: 0 });
    const ws = await makeWorkspace();
    cleanups.push(() => sandbox.stop(), () => ws.cleanup());
    const files: string[] = [];
    for (const [name, first] of [['first', 0], ['second', 100]] as const) {
      await ws.write(`${name}.csv`, csv(['post_url'], postUrls(3, first).map((u) => [u])));
      files.push(await ws.job(name, {
        operation: 'post-details',
        input: { csv: `${name}.csv`, column: 'post_url' },
        rate: { requestsPerMinute: SLOW_PER_MINUTE, concurrency: 2 },
        retry: FAST_RETRY,
      }));
    }
    const summary = await run(ws, sandbox, TOKEN, await ws.load(...files));
    expect(summary.status).toBe('completed');
    const at = operationRequests(sandbox).map((r) => r.at);
    expect(at).toHaveLength(6);
    // A gate per job let the second job's first call out as soon as its input was planned (a few ms after the
    // first job's last call): at a limit of 10 per minute, 11 calls in one window.
    const boundaryGap = at[3]! - at[2]!;
    expect(boundaryGap).toBeGreaterThanOrEqual((60_000 / SLOW_PER_MINUTE) * 0.85);
  });
});
