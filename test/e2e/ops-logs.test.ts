import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';
import { runCli, startCli, type CliProcess, type CliResult } from '../soak/cli-process.ts';
import { apiEnv, opsWorkspace, STACK_LINE, type OpsWorkspace } from '../soak/ops-fixture.ts';

const TOKEN = 'ops-logs-token-0001';
/** A text log line: ISO time, a level padded to five characters, a message. */
const TEXT_LINE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z (DEBUG|INFO |WARN |ERROR) \S/;
const LEVELS = new Set(['debug', 'info', 'warn', 'error']);

let sandbox: Sandbox;
let ws: OpsWorkspace;

beforeAll(async () => {
  sandbox = await startSandbox({ tokens: { [TOKEN]: 1_000_000 }, logRequests: false });
  // 30 calls at 150/minute take 12 s: long enough for a progress line (every second here, 5 s by default).
  ws = await opsWorkspace({ posts: 30, requestsPerMinute: 150, concurrency: 2 });
});

afterAll(async () => {
  await sandbox?.stop();
  ws?.cleanup();
});

/** stderr split into lines; only the newline that ends the output is not a line. */
function lines(stderr: string): string[] {
  const all = stderr.split('\n');
  if (all[all.length - 1] === '') all.pop();
  return all;
}

/** Starts a run, waits for its first progress log line, then sends SIGTERM (cron's stop, systemd's too). */
async function runUntilProgressThenTerm(db: string, extra: string[]): Promise<CliResult> {
  const run: CliProcess = startCli(['run', ws.postsJob, '--db', db, ...extra], {
    cwd: ws.dir,
    env: { ...apiEnv(sandbox.url, TOKEN), NETINGEST_PROGRESS_SECONDS: '1' },
    timeoutMs: 60_000,
  });
  const until = Date.now() + 30_000;
  while (!/progress/.test(run.stderr()) && Date.now() < until) {
    const ended = await Promise.race([run.result.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 50))]);
    if (ended) break;
  }
  run.kill('SIGTERM');
  return run.result;
}

function parseJsonLines(stderr: string): { parsed: Array<Record<string, unknown>>; bad: string[] } {
  const parsed: Array<Record<string, unknown>> = [];
  const bad: string[] = [];
  for (const line of lines(stderr)) {
    try {
      const value = JSON.parse(line) as unknown;
      const o = value as Record<string, unknown>;
      const ok = typeof o === 'object' && o !== null && typeof o.msg === 'string' && LEVELS.has(o.level as string) &&
        typeof o.time === 'string' && !Number.isNaN(Date.parse(o.time));
      if (ok) parsed.push(o);
      else bad.push(line);
    } catch {
      bad.push(line);
    }
  }
  return { parsed, bad };
}

// Concurrent: each test waits for a progress line (every second here, without a terminal) on its own database.
describe.concurrent('logs without a terminal (cron)', () => {
  it('text: one line per event with a timestamp and level, a progress line every few seconds, the summary on stdout', async () => {
    const result = await runUntilProgressThenTerm('text.db', []);
    expect(result.code, result.stderr).toBe(130);
    const all = lines(result.stderr);
    expect(all.filter((l) => !TEXT_LINE.test(l))).toEqual([]);
    const messages = all.map((l) => l.replace(/^\S+ \S+\s+/, ''));
    expect(messages.some((m) => m.startsWith('run started'))).toBe(true);
    expect(messages.some((m) => m.startsWith('progress'))).toBe(true);
    expect(messages.some((m) => m.startsWith('run finished'))).toBe(true);
    // The summary goes to stdout, the logs to stderr: no log line on stdout.
    expect(result.stdout).toMatch(/^Run \d+: interrupted/);
    expect(lines(result.stdout).filter((l) => TEXT_LINE.test(l))).toEqual([]);
  }, 60_000);

  it('--log-format json: every stderr line is a JSON object with time, level and msg, also across SIGTERM', async () => {
    const result = await runUntilProgressThenTerm('json.db', ['--log-format', 'json']);
    expect(result.code, result.stderr).toBe(130);
    const { parsed, bad } = parseJsonLines(result.stderr);
    expect(bad).toEqual([]);
    expect(parsed.map((o) => o.msg)).toEqual(expect.arrayContaining(['run started', 'progress', 'run finished']));
    const progress = parsed.find((o) => o.msg === 'progress')!;
    expect(progress).toMatchObject({ job: 'posts', total: 30 });
  }, 60_000);

  it('--log-format json: a run that cannot start still writes JSON lines only, without a stack trace', async () => {
    const result = await runCli(['run', 'missing-job.json', '--log-format', 'json'], { cwd: ws.dir, env: apiEnv(sandbox.url, TOKEN) });
    expect(result.code).toBe(2);
    const { parsed, bad } = parseJsonLines(result.stderr);
    expect(bad).toEqual([]);
    expect(parsed.some((o) => o.level === 'error' && String(o.msg).includes('missing-job.json'))).toBe(true);
    // The last line says how the command ended, as a cron log is read from its end.
    expect(parsed.at(-1)).toMatchObject({ level: 'error', exit_code: 2 });
  });

  it('text: a run that cannot start says why in one line, without a stack trace', async () => {
    const result = await runCli(['run', 'missing-job.json'], { cwd: ws.dir, env: apiEnv(sandbox.url, TOKEN) });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/missing-job\.json/);
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(lines(result.stderr).length).toBeLessThanOrEqual(2);
  });
});
