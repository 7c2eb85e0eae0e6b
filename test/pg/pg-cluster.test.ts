import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { waitFor } from '../support/run-helpers.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

describe.skipIf(!pgClusterUrl)(`the test PostgreSQL cluster${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('gives each caller its own empty database on a loopback port', async () => {
    const [a, b] = await Promise.all([newPgDatabase('one'), newPgDatabase('two')]);
    expect(a).not.toBe(b);
    expect(new URL(a).hostname).toBe('127.0.0.1');
    const client = new pg.Client({ connectionString: a });
    await client.connect();
    try {
      const tables = await client.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'");
      expect(tables.rows[0].n).toBe(0);
      const version = await client.query('SHOW server_version_num');
      expect(Number(version.rows[0].server_version_num)).toBeGreaterThanOrEqual(130000);
    } finally {
      await client.end();
    }
  });
});

describe('a cluster whose process is killed', () => {
  it('is shut down and its folder deleted all the same', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'netingest-reaper-'));
    // Stands for the postmaster: a process that ends on SIGINT, named by the first line of postmaster.pid.
    const server = spawn('sleep', ['600'], { stdio: 'ignore' });
    const ended = new Promise<NodeJS.Signals | null>((resolve) => server.once('exit', (_code, signal) => resolve(signal)));
    writeFileSync(join(dir, 'postmaster.pid'), `${server.pid}\n${dir}\n`);
    // The process that started the cluster, as a bench or the suite's main process, SIGKILLed once its reaper is up.
    const module = new URL('./pg-cluster.ts', import.meta.url).href;
    const owner = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e',
      `const { startReaper } = await import(${JSON.stringify(module)}); startReaper(${JSON.stringify(join(dir, 'postmaster.pid'))}, ${JSON.stringify(dir)}); console.log('ready'); setInterval(() => {}, 1e6);`,
    ], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise<void>((resolve, reject) => {
        owner.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
        owner.once('exit', (code) => reject(new Error(`the owner exited with ${code} before its reaper was up`)));
      });
      owner.kill('SIGKILL');
      expect(await ended).toBe('SIGINT');
      await waitFor(() => !existsSync(dir), 10_000, 'the cluster\'s folder deleted');
    } finally {
      // A failure leaves neither process behind (no-ops once they ended).
      owner.kill('SIGKILL');
      server.kill('SIGKILL');
    }
  });
});
