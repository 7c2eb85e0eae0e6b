import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, copyFileSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { loadJob } from '../../src/jobs/load.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { runCli, type CliOptions, type CliResult } from '../soak/cli-process.ts';
import { apiEnv, bytesOf, opsWorkspace, STACK_LINE, type OpsWorkspace } from '../soak/ops-fixture.ts';
import { checkConsistency } from '../soak/soak-checks.ts';
import { openSoakReader } from '../soak/soak-reader.ts';
import { ROOT } from '../soak/sandbox-process.ts';
import { otherUserCopy } from './other-user-copy.ts';
import { inProcess } from '../support/run-helpers.ts';

const TOKEN = 'ops-db-token-0001';
let sandbox: Sandbox;
let ws: OpsWorkspace;
/** A dataset filled by one clean run: every case starts from a copy of it. */
let baseDb: string;

beforeAll(async () => {
  sandbox = await startSandbox({ tokens: { [TOKEN]: 1_000_000 }, logRequests: false });
  ws = await opsWorkspace({ posts: 40, companies: 6 });
  baseDb = join(ws.dir, 'base.db');
  const jobs = await Promise.all([ws.postsJob, ws.lookalikesJob].map((j) => loadJob(j, { cwd: ws.dir })));
  const summary = await runJobs({ dbPath: baseDb, jobs, api: { baseUrl: sandbox.url, token: TOKEN } });
  expect(summary.status).toBe('completed');
});

afterAll(async () => {
  await sandbox?.stop();
  ws?.cleanup();
});

function copyOfBase(name: string): string {
  const file = join(ws.dir, name);
  copyFileSync(baseDb, file);
  return file;
}

function run(db: string, extra: string[] = [], options: CliOptions = {}): Promise<CliResult> {
  return runCli(['run', ws.postsJob, ws.lookalikesJob, '--db', db, '--refresh', ...extra], {
    cwd: ws.dir,
    env: apiEnv(sandbox.url, TOKEN),
    timeoutMs: 60_000,
    ...options,
  });
}

const sha = (file: string) => createHash('sha256').update(bytesOf(file)).digest('hex');

/**
 * The error a user sees: the last line on stderr, or the `error:` line of the run summary on stdout (cron logs
 * both), says what is wrong and names the file; no stack trace anywhere.
 */
function expectClearError(result: CliResult, db: string, pattern: RegExp): void {
  const output = `stdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
  expect(result.stderr + result.stdout).not.toMatch(STACK_LINE);
  const last = result.stderr.trimEnd().split('\n').pop() ?? '';
  const summaryError = result.stdout.split('\n').find((l) => /^\s+error: /.test(l));
  const shown = [last, summaryError ?? ''].find((l) => pattern.test(l) && l.includes(db));
  expect(shown, output).toBeDefined();
}

/** What the dataset holds, to show a failed run changed nothing. */
function contents(db: string): Record<string, number> {
  const sqlite = new BetterSqlite3(db, { readonly: true });
  try {
    const out: Record<string, number> = {};
    for (const table of ['tasks', 'posts', 'companies', 'similar_companies', 'raw_responses', 'api_calls']) {
      out[table] = sqlite.prepare(`SELECT count(*) FROM "${table}"`).pluck().get() as number;
    }
    out.done = sqlite.prepare(`SELECT count(*) FROM tasks WHERE status = 'done'`).pluck().get() as number;
    // --refresh sets done tasks back to pending before its first call: done, or due again, but never failed.
    out.doneOrDue = sqlite.prepare(`SELECT count(*) FROM tasks WHERE status IN ('done', 'pending', 'deferred')`).pluck().get() as number;
    return out;
  } finally {
    sqlite.close();
  }
}

describe('a database that cannot be used gives a clear error and a documented exit code', () => {
  it('locked by another process (an exclusive transaction held open): exit 4, reads still work, nothing written', async () => {
    const db = copyOfBase('locked.db');
    const before = contents(db);
    // The other process: a plain better-sqlite3 connection holding the write lock with a pending change.
    const holder: ChildProcess = spawn(
      process.execPath,
      ['-e', `const D = require('better-sqlite3'); const d = new D(process.argv[1]); d.exec('BEGIN EXCLUSIVE');
        d.prepare("UPDATE runs SET error = 'held' WHERE id = 1").run(); console.log('locked'); setInterval(() => {}, 1000);`, db],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve) => holder.stdout!.once('data', () => resolve()));
      // status beside it is the CLI's code in this process: the spawned run is the process under test.
      // The run waits 1 s for the lock, not 5 (NETINGEST_SQLITE_BUSY_SECONDS).
      const busy = { env: { ...apiEnv(sandbox.url, TOKEN), NETINGEST_SQLITE_BUSY_SECONDS: '1' } };
      const [result, status] = await Promise.all([run(db, [], busy), inProcess(['status', '--db', db], {}, { cwd: ws.dir })]);
      expect(result.code, result.stderr).toBe(EXIT.locked);
      expectClearError(result, db, /locked/i);
      expect(status.code, status.stderr).toBe(0);
    } finally {
      holder.kill('SIGKILL');
    }
    expect(contents(db)).toEqual(before);
  }, 60_000);

  it('read-only file: exit 1 naming the file, the file untouched', async () => {
    const dir = join(ws.dir, 'ro');
    mkdirSync(dir);
    const db = join(dir, 'readonly.db');
    copyFileSync(baseDb, db);
    chmodSync(db, 0o444);
    // As root, permissions do not stop writes: run the CLI as nobody, for whom they do.
    const asRoot = process.getuid?.() === 0;
    if (asRoot) {
      chmodSync(ws.dir, 0o755);
      chmodSync(dir, 0o777);
    }
    const hash = sha(db);
    // That user runs a copy of the CLI it can read: the checkout may be in a folder out of its reach.
    const cli = asRoot ? otherUserCopy() : null;
    try {
      const result = await run(db, [], cli ? { uid: 65534, gid: 65534, bin: cli.bin } : {});
      expect(result.code, result.stderr).toBe(EXIT.fatal);
      expectClearError(result, db, /cannot be written|read-?only/i);
    } finally {
      cli?.remove();
    }
    expect(sha(db)).toBe(hash);
  }, 60_000);

  it('full disk (files cannot grow): exit 1 naming the file, no half-written answer', async () => {
    const db = copyOfBase('full.db');
    const before = contents(db);
    // The database is larger than the limit already: reads work, the write-ahead log fills up after some commits.
    const result = await run(db, [], { fileSizeLimitKb: 256 });
    expect(result.code, result.stderr).toBe(EXIT.fatal);
    expectClearError(result, db, /full|disk|I\/O|cannot grow|write/i);
    const reader = await openSoakReader(db);
    try {
      const check = await checkConsistency(reader);
      expect(check.ok, check.detail).toBe(true);
    } finally {
      await reader.close();
    }
    // Whatever was committed before the disk filled up is whole; nothing that was there is lost.
    const after = contents(db);
    expect(after.doneOrDue ?? 0).toBeGreaterThanOrEqual(before.done ?? 0);
    expect(after.posts).toBe(before.posts);
    expect(after.raw_responses ?? 0).toBeGreaterThanOrEqual(before.raw_responses ?? 0);
  }, 60_000);

  it('not a database (garbage bytes): exit 1 naming the file, the file untouched', async () => {
    const db = join(ws.dir, 'garbage.db');
    writeFileSync(db, randomBytes(64 * 1024));
    const hash = sha(db);
    const result = await run(db);
    expect(result.code, result.stderr).toBe(EXIT.fatal);
    expectClearError(result, db, /not a usable SQLite database/);
    expect(sha(db)).toBe(hash);
    // status's refusal through the CLI's code in this process (a throw past it would fail the test as well).
    const status = await inProcess(['status', '--db', db], {}, { cwd: ws.dir });
    expect(status.code).toBe(EXIT.fatal);
    expectClearError({ ...status, signal: null }, db, /not a usable SQLite database/);
  }, 60_000);

  it('damaged pages inside a real dataset: exit 1 naming the file, never a stack trace', async () => {
    const db = copyOfBase('damaged.db');
    const fd = openSync(db, 'r+');
    try {
      // Pages 3..10 (the first tables' b-trees) overwritten with garbage; the header and schema page stay valid.
      writeSync(fd, randomBytes(8 * 4096), 0, 8 * 4096, 2 * 4096);
    } finally {
      closeSync(fd);
    }
    const result = await run(db);
    expect(result.code, result.stderr).toBe(EXIT.fatal);
    expectClearError(result, db, /malformed|corrupt|not a usable/i);
  }, 60_000);
});
