import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { getTableConfig, type PgTable } from 'drizzle-orm/pg-core';
import { openPgStore } from '../../src/store/pg/open.ts';
import * as tables from '../../src/store/pg/coordination/tables.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

let pool: pg.Pool | null = null;
afterEach(async () => {
  await pool?.end();
  pool = null;
});

describe.skipIf(!pgClusterUrl)(`the coordination tables${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('are created by the generated migrations as tables.ts defines them, and workers opening a new database at once do not race', async () => {
    const url = await newPgDatabase('tables');
    const stores = await Promise.all([openPgStore(url), openPgStore(url), openPgStore(url)]);
    await Promise.all(stores.map((s) => s.close()));
    pool = new pg.Pool({ connectionString: url, max: 4 });
    for (const table of Object.values(tables) as PgTable[]) {
      const config = getTableConfig(table);
      const { rows } = await pool.query(
        `SELECT column_name AS name, is_nullable = 'NO' AS "notNull", data_type AS type FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, [config.name]);
      const expected = config.columns.map((c) => ({ name: c.name, notNull: c.notNull || c.primary, type: c.getSQLType() }));
      expect(rows, config.name).toEqual(expected);
      const indexes = (await pool.query(`SELECT indexname FROM pg_indexes WHERE tablename = $1`, [config.name])).rows.map((r) => r.indexname);
      for (const index of config.indexes) expect(indexes, config.name).toContain(index.config.name);
    }
  });
});
