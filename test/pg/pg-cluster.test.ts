import { describe, expect, it } from 'vitest';
import pg from 'pg';
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
