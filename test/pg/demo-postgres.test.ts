/**
 * `netingest demo --db postgres://...` fills that database, as `--db` does for every other command: the URL is not
 * read as a file path (a `postgres:` folder in the current one), and what the demo prints hides its password.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { inProcess } from '../support/run-helpers.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

describe.skipIf(!pgClusterUrl)(`demo on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('runs the example jobs into the database the URL names, and prints the URL with its password hidden', async () => {
    const url = new URL(await newPgDatabase('demo'));
    // The test cluster trusts local connections: the password is never asked for, only carried in the URL.
    url.password = 'demo-secret-pw';
    const cwd = await mkdtemp(join(tmpdir(), 'netingest-demo-pg-'));
    dirs.push(cwd);

    const demo = await inProcess(['demo', '--db', url.toString()], {}, { cwd });

    expect(demo.code, demo.stderr).toBe(0);
    const shown = url.toString().replace(':demo-secret-pw@', ':***@');
    expect(demo.stdout).toContain(`The demo's database is ${shown}.`);
    expect(demo.stdout).toContain(`Run 'npx --no-install netingest demo --db ${shown}' again`);
    expect(demo.stdout).toContain('(8 rows)');
    expect(demo.stdout + demo.stderr).not.toContain('demo-secret-pw');
    expect(await readdir(cwd)).toEqual([]);
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM companies');
      expect(rows[0]!.n).toBeGreaterThan(0);
    } finally {
      await client.end();
    }
  });
});
