/**
 * A stop signal while a command starts, before its work installs its own handling (loading a .ts job, opening the
 * dataset): the process exits 130, as docs/exit-codes.md says of an interrupt, saying so. It used to die of node's
 * default, exit 143 on SIGTERM with nothing said.
 * And one while the run reads the balance before its first call: it used to log "balance not offered by the API",
 * blaming the service for the check the signal cut short.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DIST } from '../support/bundle-loads.ts';
import { BIN, csv, makeWorkspace, postUrls, spawnCli, taskStatuses, waitFor, type Workspace } from '../support/run-helpers.ts';

const HOLD_LOAD = fileURLToPath(new URL('../fixtures/hold-cli-load.mjs', import.meta.url));

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('a stop signal while run starts', () => {
  it('exits 130 with a line saying so', { timeout: 60_000 }, async () => {
    const ws: Workspace = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    // A job module that says it is loading, then never gives its definition: the run is held in its start.
    await ws.write('slow.ts', `import { writeFileSync } from 'node:fs';\nwriteFileSync('loading.marker', '');\nexport default new Promise(() => {});\n`);
    const cli = spawnCli(['run', 'slow.ts', '--db', ws.db], { cwd: ws.dir, env: { NETINGEST_API_URL: 'http://127.0.0.1:9', NETINGEST_API_TOKEN: 'tok-signal-start-01' } });
    await waitFor(() => existsSync(join(ws.dir, 'loading.marker')) || cli.child.exitCode !== null, 30_000, 'the job module loading');
    cli.child.kill('SIGTERM');
    const result = await cli.done;
    expect(result.signal).toBeNull();
    expect(result.code).toBe(130);
    expect(result.stderr).toBe('netingest: SIGTERM received: stopping at once\n');
  });
});

/**
 * The earliest point the CLI can answer for: node has begun its entry (dist/bin.js) and asks for a second file of
 * dist/, held there (test/fixtures/hold-cli-load.mjs) while the signal is sent. The entry's statically imported
 * files are fetched and parsed before any of its code runs, so the handlers must be in place before that second file.
 * It used to be a chunk of the entry's ~0.3 s static graph (yargs, main.ts): node's default, 143 on SIGTERM, silent.
 */
describe('a stop signal as soon as the CLI loads its second file', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`exits 130 on ${signal} with a line saying so`, { timeout: 60_000 }, async () => {
      const ws: Workspace = await makeWorkspace();
      cleanups.push(() => ws.cleanup());
      await ws.write('posts.csv', csv(['post_url'], postUrls(1).map((u) => [u])));
      const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' } });
      const env = { ...process.env, HOLD_UNDER: `${pathToFileURL(DIST).href}/`, NETINGEST_API_URL: 'http://127.0.0.1:9', NETINGEST_API_TOKEN: 'tok-signal-load-01' };
      const child = spawn(process.execPath, ['--import', HOLD_LOAD, BIN, 'run', job, '--db', ws.db], { cwd: ws.dir, env, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'] });
      let stderr = '';
      child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      // The two pipes of the hold end reset when the child dies by the signal (the outcome asserted below).
      for (const fd of [3, 4]) (child.stdio[fd] as Readable | Writable).on('error', () => {});
      const held = new Promise<string>((resolve) => (child.stdio[3] as Readable).setEncoding('utf8').once('data', resolve));
      const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('close', (code, sig) => resolve([code, sig])));
      const heldUrl = await Promise.race([held, exited.then(() => '')]);
      expect(heldUrl, stderr).toMatch(/\/dist\/.+\.js\n$/);
      child.kill(signal);
      (child.stdio[4] as Writable).end('go');
      const [code, killedBy] = await exited;
      expect({ code, killedBy, stderr }).toEqual({ code: 130, killedBy: null, stderr: `netingest: ${signal} received: stopping at once\n` });
    });
  }
});

describe('a stop signal while run reads the balance before its first call', () => {
  it('says the signal stopped the run before it called, not that the API offers no balance', { timeout: 60_000 }, async () => {
    const ws: Workspace = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    const asked: string[] = [];
    let balanceAsked!: () => void;
    const held = new Promise<void>((resolve) => (balanceAsked = resolve));
    // The balance check is held unanswered until the signal; any other request would be a paid call.
    const server = createServer((req, res) => {
      asked.push(req.url ?? '');
      if (req.url === '/v1/api/auth') return balanceAsked();
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    });
    await ws.write('posts.csv', csv(['post_url'], postUrls(3).map((u) => [u])));
    const job = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' } });
    const env = { NETINGEST_API_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, NETINGEST_API_TOKEN: 'tok-signal-balance-01' };
    const cli = spawnCli(['run', job, '--db', ws.db], { cwd: ws.dir, env });
    await Promise.race([held, cli.done]);
    cli.child.kill('SIGTERM');
    const result = await cli.done;
    expect(result.code, result.stderr).toBe(130);
    expect(asked).toEqual(['/v1/api/auth']);
    expect(result.stderr).not.toMatch(/not offered/);
    expect(result.stderr).toMatch(/signal received.*signal=SIGTERM\n(?:.*\n)*.*run stopped early.*interrupted by a signal before the run's first call: no call was made/);
    expect(taskStatuses(ws, 'posts')).toEqual({ deferred: 3 });
  });
});
