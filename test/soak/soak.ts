/**
 * The soak test: a mixed job set (post-details, similar-companies over two pages, search-jobs over two pages)
 * against a sandbox in its own process with every fault on at once (500/503, dropped connections, truncated
 * JSON, 429 bursts, random latency), run by the CLI as a child process that is SIGKILLed at random moments and
 * resumed each time, then run to completion. The result must be as if nothing had happened: every task
 * settled, no row twice, nothing half-written, at most `concurrency` calls paid twice per kill, and the same
 * dataset as an uninterrupted run against a fault-free sandbox with the same seed.
 */
import { seededRandom as prng } from '../support/seeded-random.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_PREFIX } from '../../src/spec/types.ts';
import { startSandboxProcess, type SandboxProcess, type SandboxRequestLine } from './sandbox-process.ts';
import { startCli, type CliResult } from './cli-process.ts';
import { companyUrl, postUrl, writeJobFile, writeQueriesCsv, writeUrlCsv } from './inputs.ts';
import { checkConsistency, checkNoDuplicates, checkSameDataset, checkTasksSettled, type SoakCheck } from './soak-checks.ts';
import { openSoakReader } from './soak-reader.ts';
import { createTestDatabase } from '../pg/pg-cluster.ts';

/** Options of runSoak; every default in SOAK_DEFAULTS. */
export interface SoakOptions {
  /** About how many tasks the jobs plan in all (40% posts, 40% company pages, 20% search pages). */
  tasks?: number;
  /** SIGKILLs of the runner before the final run. */
  kills?: number;
  /** The jobs' concurrency. */
  concurrency?: number;
  /** Seeds the sandbox data and faults and the kill moments. */
  seed?: number;
  /** Sandbox requests per second per token before 429 (the jobs ask for more, so bursts are refused). */
  rateLimitPerSecond?: number;
  /** Most runs to finish after the kills (a run may end with retryable failures; the next picks them up). */
  maxFinalRuns?: number;
  /** Progress lines; silent when absent. */
  log?: (line: string) => void;
  /** Keep the working folder (databases, exports) for a look afterwards. */
  keepDir?: boolean;
  /**
   * A PostgreSQL cluster's URL (a superuser's): the soak's and the clean run's datasets are two new databases
   * there instead of SQLite files. @default null (SQLite)
   */
  pgClusterUrl?: string | null;
}

export const SOAK_DEFAULTS = {
  tasks: 3000,
  kills: 5,
  concurrency: 8,
  seed: 7,
  rateLimitPerSecond: 60,
  maxFinalRuns: 4,
  pgClusterUrl: null,
} as const;

/** What one soak did and found. */
export interface SoakReport {
  ok: boolean;
  checks: SoakCheck[];
  tasks: number;
  kills: Array<{ afterMs: number; killed: boolean; code: number | null }>;
  finalRuns: Array<{ code: number | null }>;
  billedCalls: number;
  cleanBilledCalls: number;
  /** Calls of the runs the faulty sandbox got (the harness's balance checks left out). */
  requests: number;
  faults: Record<string, number>;
  dir: string;
}

const TOKEN = 'soak-token';
const TOKEN_CREDITS = '100000000';


/** Writes the inputs and the three job files; returns the job file names (relative to dir). */
async function writeJobs(dir: string, tasks: number, concurrency: number): Promise<string[]> {
  const posts = Math.max(1, Math.round(tasks * 0.4));
  const companies = Math.max(1, Math.round(tasks * 0.2));
  const searches = Math.max(1, Math.round(tasks * 0.1));
  await writeUrlCsv(join(dir, 'posts.csv'), 'post_url', posts, (i) => postUrl('soak', i), 23);
  await writeUrlCsv(join(dir, 'companies.csv'), 'company_url', companies, (i) => companyUrl('soak', i), 19);
  writeQueriesCsv(join(dir, 'queries.csv'), searches);
  const common = {
    rate: { requestsPerMinute: 12_000, concurrency },
    retry: { retries: 10, minTimeoutMs: 20, maxTimeoutMs: 400 },
  };
  writeJobFile(dir, { name: 'soak-posts', operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, ...common });
  writeJobFile(dir, {
    name: 'soak-lookalikes',
    operation: 'similar-companies',
    input: { csv: 'companies.csv', column: 'company_url' },
    request: { account: { location: ['germany', 'france'] }, num: 10 },
    pages: 2,
    ...common,
  });
  writeJobFile(dir, { name: 'soak-searches', operation: 'search-jobs', input: { csv: 'queries.csv' }, pages: 2, ...common });
  return ['soak-posts.json', 'soak-lookalikes.json', 'soak-searches.json'];
}

function runArgs(jobs: string[], db: string): string[] {
  return ['run', ...jobs, '--db', db, '--log-format', 'json'];
}

/** Runs the soak and returns its checks; throws only when the harness itself cannot work. */
export async function runSoak(options: SoakOptions = {}): Promise<SoakReport> {
  const o = { ...SOAK_DEFAULTS, ...options };
  const log = options.log ?? (() => {});
  const random = prng(o.seed);
  const dir = mkdtempSync(join(tmpdir(), 'netingest-soak-'));
  const [soakDb, cleanDb] = o.pgClusterUrl
    ? [await createTestDatabase(o.pgClusterUrl, 'soak'), await createTestDatabase(o.pgClusterUrl, 'soak_clean')]
    : [join(dir, 'soak.db'), join(dir, 'clean.db')];
  let faulty: SandboxProcess | null = null;
  let clean: SandboxProcess | null = null;
  try {
    const jobs = await writeJobs(dir, o.tasks, o.concurrency);
    faulty = await startSandboxProcess([
      '--seed', String(o.seed), '--token', TOKEN, '--credits', TOKEN_CREDITS,
      '--fail-500', '0.05', '--fail-503', '0.05', '--drop', '0.05', '--truncate', '0.02',
      '--rate-limit', String(o.rateLimitPerSecond), '--retry-after', '1', '--latency-ms', '2-40',
    ]);
    const env = { NETINGEST_API_URL: faulty.url, NETINGEST_API_TOKEN: TOKEN };
    log(`soak in ${dir}${o.pgClusterUrl ? ' on PostgreSQL' : ''}: faulty sandbox ${faulty.url}, ${o.kills} kills, concurrency ${o.concurrency}`);

    const kills: SoakReport['kills'] = [];
    // A 429 of the run's own, or one the harness provokes from the second run on (see throttleRun).
    const throttleUnlessSeen = (run: Promise<CliResult>, label: string): Promise<void> => {
      if (faulty!.requests().some(isRunThrottled)) return Promise.resolve();
      log(`${label}: no call refused 429 yet, filling the token's rate window`);
      return throttleRun(faulty!, run, o.rateLimitPerSecond);
    };
    for (let k = 0; k < o.kills; k++) {
      const before = runCalls(faulty);
      const cli = startCli(runArgs(jobs, soakDb), { cwd: dir, env, timeoutMs: 600_000 });
      const throttling = k === 0 ? Promise.resolve() : throttleUnlessSeen(cli.result, `run ${k + 1}`);
      // One kill in four lands before the first call (start-up, planning into the ledger), the rest mid-run.
      const early = random() < 0.25;
      const started = Date.now();
      if (!early) {
        while (runCalls(faulty) === before && Date.now() - started < 30_000 && !(await settledWithin(cli.result, 20))) {
          // waiting for this run's first call
        }
      }
      const delayMs = Math.round((early ? 300 : 100) + random() * (early ? 1200 : 2500));
      const finished = await settledWithin(cli.result, delayMs);
      cli.kill('SIGKILL');
      const result = await cli.result;
      await throttling;
      const afterMs = Date.now() - started;
      kills.push({ afterMs, killed: !finished && result.signal === 'SIGKILL', code: result.code });
      log(`run ${k + 1}: ${result.signal === 'SIGKILL' ? `SIGKILL after ${afterMs} ms` : `finished (exit ${result.code}) before the kill`}`);
    }

    const finalRuns: SoakReport['finalRuns'] = [];
    for (let r = 0; r < o.maxFinalRuns; r++) {
      const cli = startCli(runArgs(jobs, soakDb), { cwd: dir, env, timeoutMs: 600_000 });
      await throttleUnlessSeen(cli.result, `final run ${r + 1}`);
      const result: CliResult = await cli.result;
      finalRuns.push({ code: result.code });
      log(`final run ${r + 1}: exit ${result.code}`);
      if (result.code === 0) break;
      if (result.code !== 5 && result.code !== 3) {
        log(`unexpected exit ${result.code}:\n${result.stderr.split('\n').slice(-8).join('\n')}`);
        break;
      }
    }
    await faulty.stop();

    clean = await startSandboxProcess(['--quiet', '--seed', String(o.seed), '--token', TOKEN, '--credits', TOKEN_CREDITS]);
    const cleanRun = await startCli(runArgs(jobs, cleanDb), { cwd: dir, env: { NETINGEST_API_URL: clean.url, NETINGEST_API_TOKEN: TOKEN } }).result;
    await clean.stop();
    log(`clean run: exit ${cleanRun.code}`);
    if (cleanRun.code !== 0) throw new Error(`the clean run exited ${cleanRun.code}: ${cleanRun.stderr.slice(-2000)}`);
    const cleanBilledCalls = await billedCalls(cleanDb);

    const requests = faulty.requests();
    const billed = requests.filter((r) => r.charged > 0).length;
    const faults: Record<string, number> = {};
    for (const r of requests) {
      const kind = r.fault ?? (isRunThrottled(r) ? '429' : null);
      if (kind) faults[kind] = (faults[kind] ?? 0) + 1;
    }
    const db = await openSoakReader(soakDb);
    let checks: SoakCheck[];
    let tasks: number;
    try {
      tasks = await db.count('SELECT count(*) FROM tasks');
      const allowed = tasks + o.concurrency * kills.filter((k) => k.killed).length;
      checks = [
        await checkTasksSettled(db),
        await checkNoDuplicates(db),
        await checkConsistency(db),
        {
          name: 'billed calls <= tasks + concurrency per kill',
          ok: billed <= allowed,
          detail: `${billed} billed (clean run: ${cleanBilledCalls}), limit ${allowed} = ${tasks} tasks + ${o.concurrency} x ${kills.filter((k) => k.killed).length} kills`,
        },
      ];
    } finally {
      await db.close();
    }
    checks.push(await checkSameDataset(soakDb, cleanDb, dir));
    log('datasets compared');
    const lastExit = finalRuns[finalRuns.length - 1]?.code;
    checks.unshift({ name: 'the final run completes (exit 0)', ok: lastExit === 0, detail: `exit codes ${finalRuns.map((r) => r.code).join(', ')}` });
    return {
      ok: checks.every((c) => c.ok),
      checks,
      tasks,
      kills,
      finalRuns,
      billedCalls: billed,
      cleanBilledCalls,
      requests: runCalls(faulty),
      faults,
      dir,
    };
  } finally {
    await faulty?.stop();
    await clean?.stop();
    if (!options.keepDir) rmSync(dir, { recursive: true, force: true });
  }
}

/** The sandbox's free balance route: rate-limited like every call, never charged, never faulted. */
const BALANCE_TARGET = `${API_PREFIX}/auth`;

/** A paid call of a run refused 429 (the harness's own balance checks left out). */
function isRunThrottled(r: SandboxRequestLine): boolean {
  return r.status === 429 && r.target !== BALANCE_TARGET;
}

/** Calls of the runs the sandbox has logged (the harness's balance checks left out). */
function runCalls(faulty: SandboxProcess): number {
  return faulty.requests().filter((r) => r.target !== BALANCE_TARGET).length;
}

/**
 * Keeps the token's per-second window full with free balance checks (until one is refused) while the run goes
 * on, until a call of the run is refused too or the run ends: a CLI starved of CPU by other work never sends
 * the limit's calls in a second by itself, and then the soak would not have seen a 429 (as another client of
 * the same token would make it see one).
 */
async function throttleRun(faulty: SandboxProcess, run: Promise<CliResult>, limitPerSecond: number): Promise<void> {
  const ask = async (): Promise<number> => {
    const res = await fetch(`${faulty.url}${BALANCE_TARGET}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    await res.arrayBuffer();
    return res.status;
  };
  let filledAt = -Infinity;
  while (!faulty.requests().some(isRunThrottled)) {
    // A full window stays full for a second from the first of the answers that filled it: refilled only then.
    if (Date.now() - filledAt >= 1000) {
      const started = Date.now();
      // All at once: asked one after the other, a slow harness would stay under the limit as the CLI did.
      const statuses = await Promise.all(Array.from({ length: limitPerSecond + 1 }, ask));
      if (!statuses.includes(429)) continue;
      filledAt = started;
    }
    if (await settledWithin(run, 20)) return;
  }
}

/** True when the promise settles within `ms`. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true, () => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Calls the clean run paid for: its 200s in api_calls. */
async function billedCalls(locator: string): Promise<number> {
  const db = await openSoakReader(locator);
  try {
    return await db.count('SELECT count(*) FROM api_calls WHERE status = 200');
  } finally {
    await db.close();
  }
}

/** The report as lines for a terminal. */
export function formatSoakReport(r: SoakReport): string {
  const lines = [
    `soak: ${r.tasks} tasks, ${r.kills.filter((k) => k.killed).length} SIGKILLs (${r.kills.map((k) => `${k.afterMs} ms`).join(', ')}), ${r.finalRuns.length} final run(s)`,
    `sandbox: ${r.requests} requests, ${r.billedCalls} billed; faults: ${Object.entries(r.faults).map(([k, v]) => `${k} ${v}`).join(', ')}`,
    ...r.checks.map((c) => `  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`),
    r.ok ? 'soak passed' : 'soak FAILED',
  ];
  return lines.join('\n') + '\n';
}
