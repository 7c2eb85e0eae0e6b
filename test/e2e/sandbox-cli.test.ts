import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import yargs from 'yargs';
import { describe, expect, it } from 'vitest';
import { sandboxCommand, sandboxOptionsFromArgs, serveSandbox, type SandboxArgs } from '../../src/cli/commands/sandbox.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { UsageError } from '../../src/errors.ts';
import type { CommandIO } from '../../src/cli/common-options.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));

/** Parses command-line words with the command's own yargs builder. */
async function parse(words: string[]): Promise<SandboxArgs> {
  return (await sandboxCommand.builder(yargs(words).strict()).parseAsync()) as unknown as SandboxArgs;
}

/** The same, synchronously (for checks inside expect(() => ...)). */
function parseSync(words: string[]): SandboxArgs {
  return sandboxCommand.builder(yargs(words).strict()).parseSync() as unknown as SandboxArgs;
}

function capture(): CommandIO & { out: () => string } {
  let text = '';
  const sink = new Writable({
    write(chunk, _enc, done) {
      text += String(chunk);
      done();
    },
  });
  return { stdout: sink, stderr: sink, out: () => text };
}

async function waitFor(check: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('netingest sandbox flags', () => {
  it('maps every flag to its option', async () => {
    const options = sandboxOptionsFromArgs(
      await parse([
        '--port', '0', '--seed', '7', '--token', 'a', '--token', 'b', '--credits', '50', '--suspended-token', 'x',
        '--cost', 'search-jobs=0.5', '--latency-ms', '2-20', '--rate-limit', '5', '--retry-after', '3',
        '--rate-limit-per-minute', '120', '--past-last-page', 'empty',
        '--fail-500', '0.1', '--fail-503', '0.2', '--drop', '0.03', '--truncate', '0.04', '--slow', '0.05',
        '--slow-ms', '100', '--html', '0.06', '--wrong-shape', '0.07', '--huge', '0.08', '--huge-bytes', '1000',
        '--not-found-rate', '0.3',
      ]),
    );
    expect(options).toMatchObject({
      host: '127.0.0.1', port: 0, seed: 7, tokens: { a: 50, b: 50 }, suspendedTokens: ['x'], costs: { 'search-jobs': 0.5 },
      latencyMs: [2, 20], rateLimitPerSecond: 5, rateLimitPerMinute: 120, pastLastPage: 'empty', retryAfterSeconds: 3, serverErrorRate: 0.1, unavailableRate: 0.2,
      dropRate: 0.03, truncateRate: 0.04, slowRate: 0.05, slowMs: 100, htmlRate: 0.06, wrongShapeRate: 0.07,
      hugeRate: 0.08, hugeBytes: 1000, notFoundRate: 0.3,
    });
  });

  it('maps the live-service flags, --live-shape turning on only the shapes it names', async () => {
    const tuning = [
      '--missing-rate', '0.2', '--null-rate', '0.1', '--brand', 'zetanet', '--network-host', 'zetanet.io', '--max-num', '30',
      '--bare-url-rate', '0.4', '--country-url-rate', '0.3', '--no-balance-route',
    ];
    expect(sandboxOptionsFromArgs(await parse(['--live', ...tuning]))).toMatchObject({
      liveShapes: true, memberMissingRate: 0.2, memberNullRate: 0.1, brand: 'zetanet', networkHost: 'zetanet.io', maxNum: 30,
      bareUrlRate: 0.4, countryUrlRate: 0.3, balanceRoute: false,
    });
    expect(sandboxOptionsFromArgs(await parse(['--live-shape', 'page-cap', '--live-shape', 'brand-url']))).toMatchObject({
      liveShapes: ['page-cap', 'brand-url'],
    });
    expect(sandboxOptionsFromArgs(await parse([]))).toMatchObject({ liveShapes: false, balanceRoute: true, brand: 'acmenet', maxNum: 25 });
    for (const words of [['--missing-rate', '0.7', '--null-rate', '0.6'], ['--brand', 'Acme Net'], ['--network-host', 'www.acmenet.com'], ['--max-num', '0']]) {
      expect(() => sandboxOptionsFromArgs(parseSync(words)), words.join(' ')).toThrow(UsageError);
    }
    const choice = sandboxCommand.builder(yargs(['--live-shape', 'everything']).strict().fail(false).exitProcess(false));
    expect(() => choice.parse()).toThrow(/live-shape/);
  });

  it('takes --past-last-page 404 as the mode, not a number', async () => {
    expect(sandboxOptionsFromArgs(await parse(['--past-last-page', '404']))).toMatchObject({ pastLastPage: '404' });
  });

  it('defaults to port 8787, the sandbox token, no faults and no rate limit', async () => {
    const options = sandboxOptionsFromArgs(await parse([]));
    expect(options).toMatchObject({
      port: 8787, seed: 42, tokens: { 'sandbox-token': 1_000_000 }, latencyMs: 0, rateLimitPerSecond: null, rateLimitPerMinute: null,
      pastLastPage: '404', dropRate: 0,
    });
  });

  it('turns bad values into usage errors naming the flag', async () => {
    for (const words of [['--fail-500', '2'], ['--latency-ms', 'soon'], ['--cost', 'lookup=1'], ['--port', '70000'], ['--seed', 'abc'], ['--seed', '1.5'], ['--rate-limit-per-minute', '0']]) {
      let error: unknown;
      try {
        sandboxOptionsFromArgs(await parse(words));
      } catch (err) {
        error = err;
      }
      expect(error, words.join(' ')).toBeInstanceOf(UsageError);
    }
    // The message names the flag typed, never the library's option behind it (serverErrorRate), nor NaN.
    for (const [words, flags] of [
      [['--fail-500', '2'], ['--fail-500']],
      [['--fail-503', 'abc'], ['--fail-503']],
      [['--credits', 'lots'], ['--credits']],
      [['--rate-limit', '0'], ['--rate-limit']],
      [['--port', 'abc'], ['--port is not a number: expected a whole number from 0 to 65535']],
      [['--port', '1.5'], ['--port 1.5: expected a whole number from 0 to 65535']],
      [['--missing-rate', '0.6', '--null-rate', '0.6'], ['--missing-rate', '--null-rate']],
    ] as const) {
      let message = '';
      try {
        sandboxOptionsFromArgs(await parse([...words]));
      } catch (err) {
        message = (err as Error).message;
      }
      for (const flag of flags) expect(message, words.join(' ')).toContain(flag);
      expect(message, words.join(' ')).not.toMatch(/[a-z][A-Z]|NaN|or null/);
    }
    const choice = sandboxCommand.builder(yargs(['--past-last-page', 'maybe']).strict().fail(false).exitProcess(false));
    expect(() => choice.parse()).toThrow(/past-last-page/);
  });
});

describe('netingest sandbox serving', () => {
  it('prints the URL and token, one line per request without the token, and stops with exit code 0', async () => {
    const io = capture();
    const stop = new AbortController();
    const done = serveSandbox(await parse(['--port', '0', '--token', 'cli-token', '--credits', '3']), io, stop.signal);
    await waitFor(() => io.out().includes('Token:'));
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(io.out())?.[1];
    expect(url).toBeDefined();
    expect(io.out()).toMatch(/^Token: cli-token/m);
    const res = await fetch(`${url}/v1/api/search-jobs?keywords=cli`, { headers: { authorization: 'Bearer cli-token' } });
    expect(((await res.json()) as { total_credits: number }).total_credits).toBe(3);
    await waitFor(() => io.out().includes('search-jobs'));
    const line = io.out().split('\n').find((l) => l.includes('/v1/api/search-jobs'));
    expect(line).toMatch(/GET \/v1\/api\/search-jobs\?keywords=cli -> 200 charged 0\.25$/);
    expect(io.out().split('\n').filter((l) => l.includes('cli-token'))).toHaveLength(1);
    stop.abort();
    expect(await done).toBe(0);
    expect(io.out()).toContain('Sandbox stopped.');
    await expect(fetch(`${url}/v1/api/search-jobs`)).rejects.toThrow();
  });

  it('serves the live-service shapes with --live and says so', async () => {
    const io = capture();
    const stop = new AbortController();
    const done = serveSandbox(await parse(['--port', '0', '--quiet', '--live', '--max-num', '5']), io, stop.signal);
    await waitFor(() => io.out().includes('Token:'));
    const url = /listening on (\S+)/.exec(io.out())?.[1];
    expect(io.out()).toContain('Answers shaped as the live service may send them: absent-members, brand-url, page-cap, url-forms');
    const res = await fetch(`${url}/v1/api/similar-companies`, {
      method: 'POST',
      headers: { authorization: 'Bearer sandbox-token', 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'network.com/company/cli', num: 20 }),
    });
    expect(((await res.json()) as { num: number }).num).toBe(5);
    stop.abort();
    expect(await done).toBe(0);
  });

  it('prints no request lines with --quiet', async () => {
    const io = capture();
    const stop = new AbortController();
    const done = serveSandbox(await parse(['--port', '0', '--quiet']), io, stop.signal);
    await waitFor(() => io.out().includes('Token:'));
    const url = /listening on (\S+)/.exec(io.out())?.[1];
    await (await fetch(`${url}/v1/api/search-jobs`, { headers: { authorization: 'Bearer sandbox-token' } })).text();
    stop.abort();
    expect(await done).toBe(0);
    expect(io.out()).not.toContain('/v1/api/');
  });

  it('reports a port in use as a usage error', async () => {
    const busy = await startSandbox();
    try {
      await expect(serveSandbox(await parse(['--port', String(busy.port)]), capture(), new AbortController().signal)).rejects.toBeInstanceOf(UsageError);
    } finally {
      await busy.stop();
    }
  });

  it('stops cleanly on SIGTERM in its own process, exit code 0', async () => {
    // The built CLI, as users start it: the command's own process, its signal handlers and exit code.
    const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += String(c)));
    child.stderr.on('data', (c) => (out += String(c)));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor(() => out.includes('Token:'), 15_000);
      const url = /listening on (\S+)/.exec(out)?.[1];
      expect((await fetch(`${url}/v1/api/post-details?url=x`, { headers: { authorization: 'Bearer sandbox-token' } })).status).toBe(200);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(out).toContain('Sandbox stopped.');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
