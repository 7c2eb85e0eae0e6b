/**
 * `query` and `export --sql` can be stopped while SQLite runs a statement without end: SIGINT and SIGTERM end
 * them with exit 130 at once (no file at --out, no process left reading), `--timeout` ends them with exit 124
 * and says so, and a value too big for SQLite gets a plain message.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/open.ts';
import { inProcess, processAlive, spawnCli, waitFor, waitWhileRunning, type CliProcess } from '../support/run-helpers.ts';

const ENDLESS = 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT count(*) FROM r';
/** Generous, so that it holds with the CPU busy; the aim is well under a second. */
const STOP_WITHIN_MS = 5000;
let dir: string;
let db: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-sql-stop-'));
  db = join(dir, 'data.db');
  openDatabase(db).close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Pids of the processes whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The field after the command (in parentheses, which may hold spaces) and the state is the parent pid.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) found.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}


/** The processes `cli` started to read a statement (not, say, tsx's esbuild service). */
function readersOf(cli: CliProcess): number[] {
  return childrenOf(cli.child.pid!).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('statement-child');
    } catch {
      return false;
    }
  });
}

/**
 * Resolves once the statement is running: its reading process started. No time budget of its own: at load 16 a
 * CLI took over 10 s to get there, and a signal sent earlier (the old bound) found it without its handlers
 * (killed by SIGTERM, exit null). A CLI that ends first, or never starts a reader, fails the test.
 */
async function statementRunning(cli: CliProcess): Promise<number[]> {
  await waitWhileRunning(cli, () => readersOf(cli).length > 0, 'the statement started its reading process');
  return readersOf(cli);
}

/** The exit of `cli` after `signal`, with the time it took; a process still running after the bound is killed. */
async function stopWith(cli: CliProcess, signal: NodeJS.Signals) {
  const readers = await statementRunning(cli);
  const sentAt = performance.now();
  cli.child.kill(signal);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), STOP_WITHIN_MS * 2)));
  const ended = await Promise.race([cli.done, late]);
  clearTimeout(timer);
  const tookMs = performance.now() - sentAt;
  if (ended === null) {
    cli.child.kill('SIGKILL');
    for (const pid of readersOf(cli)) process.kill(pid, 'SIGKILL');
  }
  return { ended, tookMs, readers };
}

describe('a statement without end', () => {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`query: ${signal} ends it with exit 130 at once, and no process is left reading`, async () => {
      const cli = spawnCli(['query', ENDLESS, '--db', db], { cwd: dir });
      const { ended, tookMs, readers } = await stopWith(cli, signal);
      expect(ended, `still running ${STOP_WITHIN_MS * 2} ms after ${signal}`).not.toBeNull();
      expect(tookMs).toBeLessThan(STOP_WITHIN_MS);
      expect(ended!.code).toBe(130);
      expect(ended!.stderr).toMatch(/interrupted/);
      expect(ended!.stdout).toBe('');
      for (const pid of readers) await waitFor(() => !processAlive(pid), 5000, `reader ${pid} to end`);
    }, 60_000);
  }

  it('query killed with SIGKILL: its reading process ends too, not left running the statement', async () => {
    const cli = spawnCli(['query', ENDLESS, '--db', db], { cwd: dir });
    const readers = await statementRunning(cli);
    expect(readers.length).toBeGreaterThan(0);
    cli.child.kill('SIGKILL');
    await cli.done;
    try {
      for (const pid of readers) await waitFor(() => !processAlive(pid), STOP_WITHIN_MS, `reader ${pid} to end`);
    } finally {
      for (const pid of readers.filter(processAlive)) process.kill(pid, 'SIGKILL');
    }
  }, 60_000);

  it('export --sql --out: SIGTERM ends it with exit 130 and leaves no file at --out, nor a temporary one', async () => {
    const folder = mkdtempSync(join(dir, 'out-'));
    const out = join(folder, 'endless.csv');
    const cli = spawnCli(['export', '--sql', ENDLESS, '--db', db, '--out', out], { cwd: dir });
    const { ended, tookMs } = await stopWith(cli, 'SIGTERM');
    expect(ended, 'still running after SIGTERM').not.toBeNull();
    expect(tookMs).toBeLessThan(STOP_WITHIN_MS);
    expect(ended!.code).toBe(130);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(folder)).toEqual([]);
  }, 60_000);

  it('--timeout ends query and export --sql with exit 124 and a plain message, nothing at --out', async () => {
    const folder = mkdtempSync(join(dir, 'timeout-'));
    const out = join(folder, 'endless.csv');
    // 0.3 s, not 1: the statement keeps a core busy until it is stopped.
    for (const args of [['query', ENDLESS], ['export', '--sql', ENDLESS, '--out', out]]) {
      const cli = spawnCli([...args, '--db', db, '--timeout', '0.3'], { cwd: dir });
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), 20_000)));
      const ended = await Promise.race([cli.done, late]);
      clearTimeout(timer);
      if (ended === null) cli.child.kill('SIGKILL');
      expect(ended, `${args[0]}: still running 20 s after a --timeout of 0.3 s`).not.toBeNull();
      expect(ended!.code).toBe(124);
      expect(ended!.stderr).toMatch(/ran for more than 0\.3 s \(--timeout\) and was stopped/);
      // Without --out there was no file to leave out: it says what stdout got.
      expect(ended!.stderr).toContain(args[0] === 'query' ? 'stopped; nothing was written.' : 'stopped; no output file was written.');
      expect(ended!.stdout).toBe('');
    }
    expect(readdirSync(folder)).toEqual([]);
  }, 60_000);

  it('--timeout after rows went to stdout says they did and that the output is incomplete, not that no file was written', async () => {
    // A row in a hundred of the count: the statement's batches still come out within milliseconds, but the CLI and this
    // test are not kept busy writing and reading some 600,000 rows a run for nothing.
    const rowsWithoutEnd = 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r) SELECT n FROM r WHERE n % 100 = 0';
    // Both at once: each statement keeps a core busy till its timeout, whichever runs.
    const runs = [['query', rowsWithoutEnd], ['export', '--sql', rowsWithoutEnd]].map(async (args) => {
      // Long enough for the first rows to come out on a busy machine.
      const cli = spawnCli([...args, '--db', db, '--timeout', '3'], { cwd: dir });
      const ended = await Promise.race([cli.done, new Promise<null>((resolve) => setTimeout(() => resolve(null), 20_000).unref())]);
      if (ended === null) cli.child.kill('SIGKILL');
      return { args, ended };
    });
    for (const { args, ended } of await Promise.all(runs)) {
      expect(ended?.code, args[0]).toBe(124);
      const sent = Number(/stopped; (\d+) rows had been written to the output: what it holds is incomplete\./.exec(ended!.stderr)?.[1]);
      expect(sent, ended!.stderr).toBeGreaterThan(0);
      // The header, then the rows it counted.
      expect(ended!.stdout.trimEnd().split('\n')).toHaveLength(sent + 1);
      expect(ended!.stderr).not.toMatch(/no output file/);
    }
  }, 60_000);

  it('a value too big for SQLite: a plain message and exit 2, not an unexpected error', async () => {
    // The CLI's code in this process: the message and the exit code, no signal or process to watch.
    const ended = await inProcess(['query', 'SELECT zeroblob(2000000000) AS b', '--db', db], {}, { cwd: dir });
    expect(ended.stderr).toMatch(/larger than SQLite allows \(string or blob too big\)/);
    expect(ended.stderr).not.toMatch(/unexpected/i);
    expect(ended.code).toBe(2);
  }, 30_000);
});
