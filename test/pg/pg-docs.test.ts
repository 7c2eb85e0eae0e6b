/** docs/postgres.md's read-only role for analysts, run as written: it reads every table and view and writes nothing. */
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { openPgStore } from '../../src/store/pg/open.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { analystSql } from './analyst-role.ts';


describe.skipIf(!pgClusterUrl)(`docs/postgres.md${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('the analyst role reads tables, views and later tables, and cannot write', async () => {
    const url = await newMigratedPgDatabase('docs_role');
    const store = await openPgStore(url);
    const role = `analyst_${process.pid}`;
    try {
      await store.pool.query(analystSql(new URL(url).pathname.slice(1), role));
      // A table a later migration adds, created by the owner after the grants.
      await store.pool.query('CREATE TABLE later_table (x int)');
      const asAnalyst = new URL(url);
      asAnalyst.username = role;
      const client = new pg.Client({ connectionString: asAnalyst.toString() });
      await client.connect();
      try {
        expect((await client.query('SELECT count(*)::int AS n FROM v_job_progress')).rows[0].n).toBe(0);
        expect((await client.query('SELECT count(*)::int AS n FROM tasks')).rows[0].n).toBe(0);
        expect((await client.query('SELECT count(*)::int AS n FROM later_table')).rows[0].n).toBe(0);
        expect((await client.query("SELECT current_setting('TimeZone') AS z")).rows[0].z).toBe('UTC');
        await expect(client.query("INSERT INTO netingest_meta (key, value) VALUES ('x', 'y')")).rejects.toThrow(/read-only transaction|permission denied/);
        await client.query('SET default_transaction_read_only = off');
        await expect(client.query("INSERT INTO netingest_meta (key, value) VALUES ('x', 'y')")).rejects.toThrow(/permission denied/);
      } finally {
        await client.end();
      }
    } finally {
      await store.close();
    }
  });
});
