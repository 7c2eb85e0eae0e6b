/**
 * Shared set-up of the run-engine tests: a temp workspace with job files and CSVs, runs through runJobs or the
 * real CLI in a child process, and read-only looks at the SQLite file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { registerRawBodyFunction } from '../../src/store/raw-body.ts';
import { loadJob } from '../../src/jobs/load.ts';
import type { Job } from '../../src/jobs/schema.ts';
import { runJobs, type RunOptions, type RunSummary } from '../../src/runner/run-jobs.ts';
import type { LoggedRequest, Sandbox } from '../../src/sandbox/server.ts';
import { BALANCE_PATH } from '../../src/spec/types.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The built CLI, as installed (test/global-setup.ts builds it when a source is newer); cli-help and a few others run the sources. */
export const BIN = join(ROOT, 'dist/bin.js');

/** Retry settings that keep fault tests fast. */
export const FAST_RETRY = { retries: 5, minTimeoutMs: 10, maxTimeoutMs: 50 } as const;
/** A rate far above what the tests need, so that the gate never slows them (except the rate tests). */
export const FAST_RATE = { requestsPerMinute: 600_000, concurrency: 4 } as const;

/** A temp directory holding job files, CSVs and the database. */
export interface Workspace {
  dir: string;
  /** The database file (not created until a run opens it). */
  db: string;
  /** Writes a file relative to the workspace (with `mode` if given: 0o600 for a token file) and returns its absolute path. */
  write(name: string, text: string, mode?: number): Promise<string>;
  /** Writes a job as JSON (`name`.json) and returns its absolute path. */
  job(name: string, definition: Record<string, unknown>): Promise<string>;
  /** Loads job files as the CLI would, relative paths resolved against the workspace. */
  load(...files: string[]): Promise<Job[]>;
  cleanup(): Promise<void>;
}

/** A factory of workspaces, each removed after the test that made it. Call it at the top level of a test file. */
export function useWorkspaces(): () => Promise<Workspace> {
  const made: Workspace[] = [];
  afterEach(async () => {
    await Promise.all(made.splice(0).map((ws) => ws.cleanup()));
  });
  return async () => {
    const ws = await makeWorkspace();
    made.push(ws);
    return ws;
  };
}

export async function makeWorkspace(): Promise<Workspace> {
  const dir = await mkdtemp(join(tmpdir(), 'netingest-run-'));
  const write = async (name: string, text: string, mode?: number) => {
    const path = join(dir, name);
    await writeFile(path, text, { mode });
    return path;
  };
  return {
    dir,
    db: join(dir, 'data.db'),
    write,
    job: (name, definition) => write(`${name}.json`, JSON.stringify(definition, null, 2)),
    load: (...files) => Promise.all(files.map((f) => loadJob(f, { cwd: dir }))),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A CSV text from a header and rows; cells are written as given (quote them yourself where needed). */
export function csv(header: string[], rows: string[][]): string {
  return [header.join(','), ...rows.map((r) => r.join(','))].join('\n') + '\n';
}

/**
 * A large leads CSV (`company_url`) whose every `validEvery`-th row (the first included) is a company page and
 * the others profile pages: long to read into the ledger, few tasks to call once read.
 */
export function mostlyInvalidLeads(rows: number, validEvery: number): string {
  const lines = Array.from({ length: rows }, (_, i) =>
    i % validEvery === 0 ? [`https://www.network.com/company/co-${i}`] : [`https://www.network.com/in/person-${i}`],
  );
  return csv(['company_url'], lines);
}

/**
 * A sandbox's log of operation calls, without the free balance checks (GET /v1/api/auth) that a run makes before
 * its first call and `plan` and `status` make when an API is set: what tests count as the calls of a run.
 */
export function operationRequests(sandbox: { readonly requests: readonly LoggedRequest[] }): LoggedRequest[] {
  return sandbox.requests.filter((r) => r.path !== BALANCE_PATH);
}

/** Runs jobs in-process against a sandbox with one token (into ws.db unless `extra.dbPath` says another dataset). */
export function run(
  ws: Workspace,
  sandbox: Sandbox,
  token: string,
  jobs: Job[],
  extra: Partial<Omit<RunOptions, 'jobs' | 'api'>> = {},
): Promise<RunSummary> {
  return runJobs({ dbPath: ws.db, jobs, api: { baseUrl: sandbox.url, token }, requestTimeoutMs: 5000, ...extra });
}

/** The database opened read-only (close it when done), with `raw_body()` to read a kept body as text. */
export function readDb(ws: Workspace): BetterSqlite3.Database {
  const db = new BetterSqlite3(ws.db, { readonly: true, fileMustExist: true });
  registerRawBodyFunction(db);
  return db;
}

/** One query's rows from a read-only connection opened for it. */
export function query<T = Record<string, unknown>>(ws: Workspace, sql: string, ...params: unknown[]): T[] {
  const db = readDb(ws);
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/** count(*) of a query. */
export function count(ws: Workspace, sql: string, ...params: unknown[]): number {
  const db = readDb(ws);
  try {
    return db.prepare(sql).pluck().get(...params) as number;
  } finally {
    db.close();
  }
}

/** Task counts by status for a job. */
export function taskStatuses(ws: Workspace, job: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of query<{ status: string; n: number }>(ws, 'SELECT status, count(*) AS n FROM tasks WHERE job = ? GROUP BY status', job)) {
    out[r.status] = r.n;
  }
  return out;
}

/** The input URL (post-details `url` query, similar-companies body `url`) a logged request asked about. */
export function requestedUrl(r: LoggedRequest): string {
  if (r.path.endsWith('/post-details')) return r.query['url'] ?? '';
  if (r.path.endsWith('/similar-companies')) return String((r.body as { url?: unknown } | null)?.url ?? '');
  return r.rawQuery;
}

/** A key for a logged request that is the same for the same lookup (input and page). */
export function lookupKey(r: LoggedRequest): string {
  if (r.path.endsWith('/similar-companies')) {
    const b = r.body as { url?: unknown; page?: unknown };
    return `${String(b.url)}#${String(b.page)}`;
  }
  return `${r.path}?${r.rawQuery}`;
}

/** Resolves when `check` holds, polling every 10 ms; rejects after `ms`. */
export async function waitFor(check: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Resolves when `check` holds, looked at every 10 ms, for as long as `child` runs: no time budget of its own (a
 * loaded machine makes everything slower; the test's timeout catches a hang). Rejects, with the child's stderr,
 * when the child ends first.
 */
export async function waitWhileRunning(cli: CliProcess, check: () => boolean, what: string): Promise<void> {
  while (!check()) {
    if (cli.child.exitCode !== null || cli.child.signalCode !== null) {
      throw new Error(`the process ended (${cli.child.exitCode ?? cli.child.signalCode}) before ${what}:\n${cli.stderr()}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A CLI child process with its output collected and its end awaitable. */
export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Exit code (or 128 + signal number for a signal), with the output. */
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

/** Starts `netingest <args>` as a child process (node directly, so its pid is the run's pid). */
export function spawnCli(args: string[], options: { cwd: string; env?: Record<string, string | undefined> }): CliProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, NETINGEST_API_URL: undefined, NETINGEST_API_TOKEN: undefined, ...options.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const child = spawn(process.execPath, [BIN, ...args], { cwd: options.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => resolve({ code, signal, stdout: out, stderr: err }));
  });
  return { child, stdout: () => out, stderr: () => err, done };
}

/** Runs `netingest <args>` to its end. */
export function runCli(args: string[], options: { cwd: string; env?: Record<string, string | undefined> }) {
  return spawnCli(args, options).done;
}

/** The environment pointing the CLI at a sandbox with a token. */
export function cliEnv(sandbox: Sandbox, token: string): Record<string, string> {
  return { NETINGEST_API_URL: sandbox.url, NETINGEST_API_TOKEN: token };
}

/** `n` post URLs with distinct activity ids from `first` on, as they would appear in a CSV. */
export function postUrls(n: number, first = 0): string[] {
  return Array.from({ length: n }, (_, i) => {
    const k = first + i;
    return `https://www.network.com/posts/author-${k}_topic-activity-${7100000000000000000n + BigInt(k)}-x${k}`;
  });
}

/** `n` company page URLs. */
export function companyUrls(n: number, prefix = 'co'): string[] {
  return Array.from({ length: n }, (_, i) => `https://www.network.com/company/${prefix}-${i}`);
}

/**
 * `netingest <args>` in this process (the CLI's own main) with `env` set meanwhile, output captured; in `cwd`
 * when given (job files name their CSVs relative to it). A spawned CLI costs a Node start and its module load.
 * Runs that set variables or the folder go one at a time: the process has one of each, and two concurrent cases
 * (files share a fork) restoring them out of order left a deleted temp folder as the cwd (esbuild's spawn: ENOENT).
 */
export async function inProcess(
  args: string[],
  env: Record<string, string> = {},
  options: { cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  if (Object.keys(env).length === 0 && !options.cwd) return runMain(args);
  const turn = processStateTurn.then(async () => {
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
    const cwd = process.cwd();
    Object.assign(process.env, env);
    if (options.cwd) process.chdir(options.cwd);
    try {
      return await runMain(args);
    } finally {
      process.chdir(cwd);
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
  processStateTurn = turn.catch(() => undefined);
  return turn;
}

let processStateTurn: Promise<unknown> = Promise.resolve();

async function runMain(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk, _enc, done) {
        append(String(chunk));
        done();
      },
    });
  const code = await main(args, { stdout: sink((s) => (stdout += s)), stderr: sink((s) => (stderr += s)) });
  return { code, stdout, stderr };
}

/** Whether a process of this host is still there: the store's own check. */
export { processExists as processAlive } from '../../src/store/run-lock.ts';

/** The pid of a process that has exited: a lock holder that is certainly dead (its pid not reused this soon). */
export async function exitedPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0']);
  return new Promise<number>((resolve) => child.once('exit', () => resolve(child.pid!)));
}
