/**
 * The SQLite and PostgreSQL schemas cannot drift: a fresh dataset on each, migrations applied, introspected by
 * each engine's own catalog and compared table by table, column by column (under the documented type mapping),
 * key by key, index by index and view by view.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { engineOnlyIndexes, PG_ONLY_COORDINATION_TABLES, pgShape, schemaDifferences, sqliteShape } from './schema-shape.ts';

describe.skipIf(!pgClusterUrl)(`the SQLite and PostgreSQL schemas${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let dir: string;
  let sqlite: Database;
  let client: pg.Client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'netingest-parity-'));
    sqlite = openDatabase(join(dir, 'netingest.db'));
    const url = await newPgDatabase('parity');
    await (await openPgStore(url)).close();
    client = new pg.Client({ connectionString: url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    sqlite?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('have the same tables, columns, keys, indexes and views', async () => {
    const lite = sqliteShape(sqlite.sqlite);
    const pgs = await pgShape(client);
    // Not vacuous: both sides see the whole dataset.
    expect(Object.keys(lite.tables).length).toBeGreaterThanOrEqual(20);
    expect(Object.keys(lite.views)).toHaveLength(4);
    expect(lite.tables.tasks!.indexes.find((i) => i.name === 'tasks_job_input_key_page_uq')).toMatchObject({ unique: true });
    // Only what the definitions ask for (tasks' status index is SQLite's: see src/store/tables.ts).
    expect(engineOnlyIndexes()).toEqual(['index tasks_job_status_idx on tasks: only on SQLite']);
    expect(schemaDifferences(lite, pgs)).toEqual(engineOnlyIndexes());
    // The PostgreSQL-only tables are the coordination ones, each there (a misspelt name in the list would pass above).
    for (const t of PG_ONLY_COORDINATION_TABLES) {
      expect(pgs.tables[t], t).toBeDefined();
      expect(lite.tables[t], t).toBeUndefined();
    }
  });

  it('tells a column added to one engine only, a changed type, a dropped index and a missing view', async () => {
    const lite = sqliteShape(sqlite.sqlite);
    await client.query('BEGIN');
    try {
      await client.query('ALTER TABLE companies ADD COLUMN extra text');
      await client.query('ALTER TABLE runs ALTER COLUMN started_at TYPE text');
      await client.query('DROP INDEX tasks_job_input_key_page_uq');
      await client.query('DROP VIEW v_job_progress');
      const differences = schemaDifferences(lite, await pgShape(client));
      expect(differences).toEqual(expect.arrayContaining([
        'column companies.extra: only on PostgreSQL',
        'column runs.started_at: SQLite text maps to timestamp with time zone, PostgreSQL has text',
        'index tasks_job_input_key_page_uq on tasks: only on SQLite',
        'view v_job_progress: only on SQLite',
      ]));
      await client.query('CREATE TABLE worker_notes (id int)');
      expect(schemaDifferences(lite, await pgShape(client))).toContain('table worker_notes: only on PostgreSQL');
    } finally {
      await client.query('ROLLBACK');
    }
    sqlite.sqlite.exec('BEGIN; ALTER TABLE posts ADD COLUMN extra integer');
    try {
      const asked = engineOnlyIndexes();
      expect((schemaDifferences(sqliteShape(sqlite.sqlite), await pgShape(client))).filter((d) => !asked.includes(d))).toEqual(['column posts.extra: only on SQLite']);
    } finally {
      sqlite.sqlite.exec('ROLLBACK');
    }
  });
});
