/**
 * `netingest run` flags checked like job files are (--rate, --concurrency, --max-credits, --reserve), and the
 * summary on stdout: redacted of a real token, never corrupted by a short one. Output as a user or cron sees it.
 */
import { existsSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/open.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { FAST_RATE, FAST_RETRY, cliEnv, csv, makeWorkspace, inProcess, postUrls, runCli, type Workspace } from '../support/run-helpers.ts';

const TOKEN = 'flags-token-6b0e2d';
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function setUp(tokens: Record<string, number> = { [TOKEN]: 10_000 }): Promise<{ sandbox: Sandbox; ws: Workspace }> {
  const sandbox = await startSandbox({ port: 0, tokens, notFoundRate: 0 });
  const ws = await makeWorkspace();
  cleanups.push(() => sandbox.stop(), () => ws.cleanup());
  return { sandbox, ws };
}

async function postsJob(ws: Workspace, n: number, name = 'posts'): Promise<string> {
  // An absolute path: the in-process runs do not run in the workspace.
  const input = await ws.write('posts.csv', csv(['post_url'], postUrls(n).map((u) => [u])));
  return ws.job(name, { operation: 'post-details', input: { csv: input, column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
}

describe('run override flags are checked like the job file fields they override', () => {
  // Each value is one the job schema refuses for the field; before the check, most of them ran with a limit
  // silently switched off (NaN, 0 or a negative rate) or crashed with [INTERNAL] after the run had started.
  const bad: Array<[flag: string, value: string]> = [
    ['--max-credits', 'abc'],
    ['--max-credits', '0'],
    ['--max-credits', '-3'],
    ['--reserve', 'abc'],
    ['--reserve', '-1'],
    ['--rate', '0'],
    ['--rate', '-5'],
    ['--rate', 'abc'],
    ['--rate', 'Infinity'],
    ['--concurrency', '0'],
    ['--concurrency', 'abc'],
    ['--concurrency', '1.5'],
    ['--rate', '1e-300'],
    ['--concurrency', '1e9'],
    ['--max-credits', '1e308'],
  ];

  it.each(bad)('%s %s: exit 2 naming the flag and the value, before the database or the API is touched', async (flag, value) => {
    const { sandbox, ws } = await setUp();
    const file = await postsJob(ws, 3);
    const cli = await inProcess(['run', file, '--db', ws.db, flag, value], cliEnv(sandbox, TOKEN));
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stderr).toContain(`${flag} ${value}`);
    expect(cli.stderr).not.toContain('INTERNAL');
    expect(sandbox.requests).toHaveLength(0);
    expect(existsSync(ws.db)).toBe(false);
  });

  it('a flag given twice or without a value is refused too', async () => {
    const { sandbox, ws } = await setUp();
    const file = await postsJob(ws, 3);
    const twice = await inProcess(['run', file, '--db', ws.db, '--rate', '10', '--rate', '20'], cliEnv(sandbox, TOKEN));
    expect(twice.code, twice.stderr).toBe(2);
    expect(twice.stderr).toMatch(/--rate.*more than once/);
    const empty = await inProcess(['run', file, '--db', ws.db, '--reserve'], cliEnv(sandbox, TOKEN));
    expect(empty.code, empty.stderr).toBe(2);
    expect(empty.stderr).toMatch(/--reserve.*needs a number/);
    expect(sandbox.requests).toHaveLength(0);
    expect(existsSync(ws.db)).toBe(false);
  });

  it('good values are accepted, decimals and whole numbers alike', async () => {
    const { sandbox, ws } = await setUp();
    const file = await postsJob(ws, 3);
    const args = ['run', file, '--db', ws.db, '--rate', '5e5', '--concurrency', '2', '--max-credits', '100.5', '--reserve', '0', '--json'];
    const cli = await inProcess(args, cliEnv(sandbox, TOKEN));
    expect(cli.code, cli.stderr).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ status: 'completed', calls: 3 });
    // The run records the rate it worked the job at (the report draws the pace against it): --rate over the job file's.
    const again = await inProcess(['run', file, '--db', ws.db, '--refresh'], cliEnv(sandbox, TOKEN));
    expect(again.code, again.stderr).toBe(0);
    const database = openDatabase(ws.db);
    try {
      const rates = database.sqlite.prepare('SELECT job_rates FROM runs ORDER BY id').pluck().all() as string[];
      expect(rates.map((r) => JSON.parse(r))).toEqual([{ posts: 5e5 }, { posts: FAST_RATE.requestsPerMinute }]);
    } finally {
      database.close();
    }
  });

  it('as a real process: --max-credits abc exits 2 with the flag in the message, no call made', async () => {
    const { sandbox, ws } = await setUp();
    const file = await postsJob(ws, 3);
    const cli = await runCli(['run', file, '--db', ws.db, '--max-credits', 'abc'], { cwd: ws.dir, env: cliEnv(sandbox, TOKEN) });
    expect(cli.code, cli.stderr).toBe(2);
    expect(cli.stderr).toContain('--max-credits abc');
    expect(sandbox.requests).toHaveLength(0);
  });
});

describe('other commands refuse numbers they would misuse', () => {
  it('status --runs needs a whole number >= 0, query --max-width a number', async () => {
    const { ws } = await setUp();
    openDatabase(ws.db).close();
    for (const args of [
      ['status', '--runs', 'abc'],
      ['status', '--runs', '-1'],
      ['status', '--runs', '1.5'],
      ['query', 'SELECT 1', '--max-width', 'abc'],
      ['status', '--runs', '1e308'],
      ['query', 'SELECT 1', '--max-width', '0'],
      ['query', 'SELECT 1', '--timeout', '1e308'],
      ['prune', '--keep-days', '1e308'],
    ]) {
      const cli = await inProcess([...args, '--db', ws.db], {});
      expect(cli.code, `${args.join(' ')}: ${cli.stderr}`).toBe(2);
      expect(cli.stderr).toContain(`${args.at(-2)} ${args.at(-1)}`);
    }
    // A flag with a default typed without its value (an unset variable, unquoted) is refused, not taken as the default.
    for (const [args, flag] of [
      [['status', '--runs', '--json'], '--runs'],
      [['prune', '--keep-days', '--dry-run'], '--keep-days'],
      [['report', '--json', '--days'], '--days'],
      [['changes', '--max-width'], '--max-width'],
    ] as const) {
      const cli = await inProcess([...args, '--db', ws.db], {});
      expect(cli.code, `${args.join(' ')}: ${cli.stderr}`).toBe(2);
      expect(cli.stderr).toContain(`${flag} needs a number`);
    }
  });
});

describe('status --runs 0', () => {
  it('says the runs are not listed, not that there are none', async () => {
    const { sandbox, ws } = await setUp();
    const file = await postsJob(ws, 2);
    expect((await inProcess(['run', file, '--db', ws.db], cliEnv(sandbox, TOKEN), { cwd: ws.dir })).code).toBe(0);
    const none = await inProcess(['status', '--db', ws.db, '--runs', '0']);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toMatch(/^Recent runs:\n {2}not listed \(--runs 0\)\n/);
    expect((await inProcess(['status', '--db', ws.db])).stdout).toMatch(/^Recent runs:\n {2}#1 /);
  });
});

describe('the summary on stdout', () => {
  // What the summaries say is the CLI's code, run here; a spawned CLI is kept for the token's echo below.
  it('a short token (the sandbox takes any) leaves the text and --json summaries intact', async () => {
    const { sandbox, ws } = await setUp({ t: 10_000 });
    const file = await postsJob(ws, 3);
    const text = await inProcess(['run', file, '--db', ws.db], cliEnv(sandbox, 't'), { cwd: ws.dir });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/^Run 1: completed/m);
    expect(text.stdout).not.toMatch(/redacted/i);
    const json = await inProcess(['run', file, '--db', ws.db, '--refresh', '--json'], cliEnv(sandbox, 't'), { cwd: ws.dir });
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).not.toMatch(/redacted/i);
    expect(JSON.parse(json.stdout)).toMatchObject({ runId: 2, status: 'completed', jobs: [{ name: 'posts', done: 3 }] });
  });

  it('a real token never reaches stdout, and --json stays valid JSON', async () => {
    // A job named like the token puts the token in the summary, as an echo of it would.
    const token = 'ntk.Q7vR2x-9LmP4sT8w';
    const { sandbox, ws } = await setUp({ [token]: 10_000 });
    const file = await postsJob(ws, 3, token);
    // The text summary in this process; the --json run spawned, so that all a process prints is searched.
    const text = await inProcess(['run', file, '--db', ws.db], cliEnv(sandbox, token), { cwd: ws.dir });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).not.toContain(token);
    expect(text.stdout).toMatch(/\[redacted\]/i);
    const json = await runCli(['run', file, '--db', ws.db, '--refresh', '--json'], { cwd: ws.dir, env: cliEnv(sandbox, token) });
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).not.toContain(token);
    const summary = JSON.parse(json.stdout) as { status: string; jobs: Array<{ name: string }> };
    expect(summary.status).toBe('completed');
    expect(summary.jobs[0]!.name).toMatch(/^\[redacted\]$/i);
  });
});
