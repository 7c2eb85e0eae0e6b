/**
 * `netingest run` where the command line matters: a refused token (401/403), the run lock, bad job files and
 * malformed input rows; exit codes and messages as a user or cron sees them.
 */
import { hostname } from 'node:os';
import BetterSqlite3 from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/open.ts';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import {
  FAST_RATE, FAST_RETRY, cliEnv, count, csv, exitedPid, inProcess, makeWorkspace, postUrls, query, run, runCli, taskStatuses, waitFor, type Workspace, operationRequests } from '../support/run-helpers.ts';

const GOOD_TOKEN = 'good-token-1c5e';
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

async function setUp(options: Parameters<typeof startSandbox>[0] = {}): Promise<{ sandbox: Sandbox; ws: Workspace }> {
  const sandbox = await startSandbox({ port: 0, tokens: { [GOOD_TOKEN]: 10_000 }, notFoundRate: 0, ...options });
  const ws = await makeWorkspace();
  cleanups.push(() => sandbox.stop(), () => ws.cleanup());
  return { sandbox, ws };
}

async function postsJob(ws: Workspace, n: number, extra: Record<string, unknown> = {}): Promise<string> {
  await ws.write('posts.csv', csv(['post_url'], postUrls(n).map((u) => [u])));
  return ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY, ...extra });
}

describe('a token the API refuses', () => {
  it('401 and 403 stop the run at the first call: exit 1, "check the token", the token never printed', async () => {
    const UNKNOWN = 'unknown-secret-token-9f3a11';
    const SUSPENDED = 'suspended-secret-token-77aa02';
    const cases = await Promise.all(
      [
        { token: UNKNOWN, status: 401 },
        { token: SUSPENDED, status: 403 },
      ].map(async (c) => {
        const { sandbox, ws } = await setUp({ suspendedTokens: [SUSPENDED] });
        const file = await postsJob(ws, 12);
        // 401 from a spawned CLI (all a real process prints is searched for the token), 403 through the CLI's
        // code in this process: the same stop, one Node start fewer.
        const args = ['run', file, '--db', ws.db];
        const env = cliEnv(sandbox, c.token);
        const cli = c.status === 401 ? await runCli(args, { cwd: ws.dir, env }) : await inProcess(args, env, { cwd: ws.dir });
        return { ...c, sandbox, ws, cli };
      }),
    );
    for (const { token, status, sandbox, ws, cli } of cases) {
      expect(cli.code, `${status}: ${cli.stderr}`).toBe(1);
      expect(operationRequests(sandbox).map((r) => r.status), String(status)).toEqual([status]);
      expect(cli.stdout + cli.stderr).toMatch(/check the (API )?token|NETINGEST_API_TOKEN/i);
      // Said once: the error's own message carries the hint, the summary adds none.
      const errorLine = cli.stdout.split('\n').find((l) => l.startsWith('  error: '))!;
      expect(errorLine.match(/check/g), errorLine).toHaveLength(1);
      // The job was cut short by the stop: not a plain "finished".
      expect(cli.stderr).not.toMatch(/INFO  job finished/);
      expect(cli.stderr).toMatch(/WARN  job stopped before its end job=posts .*deferred=\d+ reason=auth/);
      expect(cli.stdout).not.toContain(token);
      expect(cli.stderr).not.toContain(token);
      const [runRow] = query<{ status: string; error: string }>(ws, 'SELECT status, error FROM runs');
      expect(runRow!.status).toBe('failed');
      expect(runRow!.error).toMatch(/^AUTH/);
      expect(runRow!.error).not.toContain(token);
      // Nothing failed for good: the tasks wait for a run with a working token.
      expect(taskStatuses(ws, 'posts')).toEqual({ deferred: 12 });
      const stored = query<Record<string, unknown>>(ws, 'SELECT * FROM api_calls').map((r) => JSON.stringify(r)).join('\n');
      expect(stored).not.toContain(token);
    }
  });
});

describe('the run lock', () => {
  it('a second run on the same database exits 4 naming the pid that holds it', async () => {
    const { sandbox, ws } = await setUp({ latencyMs: 200 });
    const file = await postsJob(ws, 40, { rate: { requestsPerMinute: 600_000, concurrency: 1 } });
    // The first run holds the lock from this process while the second starts as its own process.
    const stop = new AbortController();
    const first = run(ws, sandbox, GOOD_TOKEN, await ws.load(file), { signal: stop.signal });
    await waitFor(() => operationRequests(sandbox).length > 0, 10_000, 'the first run to start calling');
    const second = await runCli(['run', file, '--db', ws.db], { cwd: ws.dir, env: cliEnv(sandbox, GOOD_TOKEN) });
    const callsWhileLocked = operationRequests(sandbox).length;
    stop.abort();
    const summary = await first;
    expect(second.code, second.stderr).toBe(4);
    expect(second.stderr).toContain(`pid ${process.pid}`);
    expect(second.stderr).not.toContain(GOOD_TOKEN);
    expect(summary.status).toBe('interrupted');
    expect(callsWhileLocked).toBeGreaterThan(0);
    // The refused run wrote no run of its own (it is refused before it starts one, so before any call).
    expect(count(ws, 'SELECT count(*) FROM runs')).toBe(1);
    expect(count(ws, 'SELECT count(*) FROM api_calls WHERE run_id <> ?', summary.runId)).toBe(0);
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
  });

  it('a lock left by a dead process is taken over; one held by a live process is refused', async () => {
    const { sandbox, ws } = await setUp();
    const jobs = await ws.load(await postsJob(ws, 5));
    openDatabase(ws.db).close();
    const deadPid = await exitedPid();
    const setLock = (pid: number, host: string, heartbeatAgoMs = 0) => {
      const db = new BetterSqlite3(ws.db);
      const at = new Date(Date.now() - heartbeatAgoMs).toISOString();
      db.prepare('INSERT OR REPLACE INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at) VALUES (1, ?, ?, 7, ?, ?)').run(pid, host, at, at);
      db.close();
    };

    // Live process on this host (the test runner's parent): refused, with who holds it.
    setLock(process.ppid, hostname());
    await expect(run(ws, sandbox, GOOD_TOKEN, jobs)).rejects.toThrow(new RegExp(`pid ${process.ppid}`));
    expect(sandbox.requests).toHaveLength(0);
    // Another host with a fresh heartbeat: its pid cannot be checked, so it is refused too.
    setLock(deadPid, 'other-host.example', 1_000);
    await expect(run(ws, sandbox, GOOD_TOKEN, jobs)).rejects.toMatchObject({ code: 'LOCKED' });

    // Dead pid on this host: taken over.
    setLock(deadPid, hostname());
    const summary = await run(ws, sandbox, GOOD_TOKEN, jobs);
    expect(summary.status).toBe('completed');
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 5 });
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
    // Another host whose heartbeat stopped long ago: taken over as well.
    setLock(deadPid, 'other-host.example', 60 * 60_000);
    expect((await run(ws, sandbox, GOOD_TOKEN, jobs, { refresh: true })).status).toBe('completed');
  });
});

describe('bad job files and input files: exit 2, naming file, line and field', () => {
  it('reports each problem and makes no call', async () => {
    const { sandbox, ws } = await setUp();
    await ws.write('posts.csv', csv(['post_url', 'campaign'], postUrls(3).map((u) => [u, 'a'])));
    const tokenFile = await ws.write('token', GOOD_TOKEN + '\n', 0o600);
    const base = { operation: 'post-details', input: { csv: `${ws.dir}/posts.csv`, column: 'post_url' } };
    const similar = { operation: 'similar-companies', input: { csv: `${ws.dir}/posts.csv`, column: 'post_url' } };
    const files = {
      wrongType: await ws.job('wrong-type', { ...similar, pages: 'two' }),
      unknownField: await ws.job('unknown-field', { ...base, retries: 3 }),
      syntax: await ws.write('syntax.json', '{\n  "operation": "post-details",\n  "input": { "csv": "posts.csv" "column": "post_url" }\n}\n'),
      missingInput: await ws.job('missing-input', { ...base, input: { csv: `${ws.dir}/nowhere.csv`, column: 'post_url' } }),
      unknownColumn: await ws.job('unknown-column', { ...base, input: { csv: `${ws.dir}/posts.csv`, column: 'url' } }),
    };
    const api = ['--api-url', sandbox.url, '--token-file', tokenFile];
    const results: Record<string, { code: number; stdout: string; stderr: string }> = {};
    for (const [name, file] of Object.entries(files)) results[name] = await inProcess(['run', file, '--db', ws.db, ...api]);

    for (const [name, r] of Object.entries(results)) {
      expect(r.code, `${name}: ${r.stderr}`).toBe(2);
      expect(r.stderr, name).not.toMatch(/\n\s+at /); // no stack trace
      expect(r.stderr + r.stdout, name).not.toContain(GOOD_TOKEN);
    }
    expect(results['wrongType']!.stderr).toMatch(/wrong-type\.json: pages: must be a number \(got "two"\)/);
    expect(results['unknownField']!.stderr).toMatch(/unknown-field\.json: retries: unknown field/);
    expect(results['syntax']!.stderr).toMatch(/syntax\.json:3:\d+: invalid JSON: /);
    expect(results['missingInput']!.stderr).toMatch(/nowhere\.csv: .*file not found/);
    // The message names the missing column and lists the ones the file has.
    expect(results['unknownColumn']!.stderr).toMatch(/posts\.csv: .*"url".*line 1.*"post_url", "campaign"/);
    expect(sandbox.requests).toHaveLength(0);
  });

  it('as a process: a bad job file exits 2; malformed rows are reported with file and line, recorded, and the rest runs', async () => {
    const { sandbox, ws } = await setUp();
    const good = postUrls(4);
    await ws.write(
      'posts.csv',
      [
        'post_url,campaign',
        `${good[0]},a`,
        'htp://bad url,b',
        `${good[1]},c`,
        `"${good[2]},never closed`,
        `${good[3]},d`,
        ',e',
      ].join('\n') + '\n',
    );
    await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
    await ws.job('bad', { operation: 'similar-companies', input: { csv: 'posts.csv', column: 'post_url' }, pages: 'two' });
    const env = cliEnv(sandbox, GOOD_TOKEN);
    const [bad, ok] = await Promise.all([
      runCli(['run', 'bad.json', '--db', 'other.db'], { cwd: ws.dir, env }),
      runCli(['run', 'posts.json', '--db', 'data.db'], { cwd: ws.dir, env }),
    ]);
    expect(bad.code, bad.stderr).toBe(2);
    expect(bad.stderr).toMatch(/bad\.json.*pages/);

    expect(ok.code, ok.stderr).toBe(0);
    const invalid = query<{ file: string; line: number; field: string | null; reason: string }>(
      ws,
      'SELECT file, line, field, reason FROM invalid_inputs ORDER BY line',
    );
    expect(invalid.map((r) => [r.file, r.line])).toEqual([
      ['posts.csv', 3],
      ['posts.csv', 5],
      ['posts.csv', 7],
    ]);
    expect(invalid[0]!.field).toBe('post_url');
    expect(invalid[1]!.reason).toMatch(/quote|"/i);
    for (const r of invalid) expect(ok.stdout).toContain(`posts.csv:${r.line}`);
    // The rows after the unclosed quote still ran.
    expect(taskStatuses(ws, 'posts')).toEqual({ done: 3 });
    // `plan` names the same rows by file and line, as the run did (the CLI's code in this process).
    const plan = await inProcess(['plan', 'posts.json', '--db', 'data.db'], env, { cwd: ws.dir });
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('input: 3 tasks, 3 invalid rows, 0 duplicates');
    for (const r of invalid) expect(plan.stdout).toContain(`invalid: posts.csv:${r.line}`);
    expect(operationRequests(sandbox).map((r) => r.query['url']).sort()).toEqual(
      [good[0]!, good[1]!, good[3]!].sort(),
    );
  });
});

