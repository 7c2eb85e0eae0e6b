/**
 * Each table is defined once (src/store/tables.ts): whatever lists tables by another route must hold every one of
 * them. `copy` must move every table but the run lock, parents first; drizzle-kit generates only the tables each
 * engine's schema module exports; the operations' rows are written to exactly the tables marked as written.
 */
import { describe, expect, it } from 'vitest';
import { is } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { SQLiteTable, getTableConfig as getSqliteTableConfig } from 'drizzle-orm/sqlite-core';
import { COPY_ORDER, NOT_COPIED } from '../../src/store/copy-dataset.ts';
import { TABLE_STATEMENTS } from '../../src/store/ingest/tables.ts';
import * as pgSchema from '../../src/store/pg/schema.ts';
import * as sqliteSchema from '../../src/store/schema.ts';
import { DATASET_TABLES, NORMALIZED_TABLES } from '../../src/store/tables.ts';
import type { TableDef } from '../../src/store/table-kit.ts';

const DEFINED = DATASET_TABLES.map((t) => t.name);

/** The names of `copy`'s order, and where a table names a parent that comes after it (by PostgreSQL's foreign keys). */
function copyOrderProblems(definitions: readonly TableDef[]): { missing: string[]; parentsAfter: string[] } {
  const order = definitions.map((t) => pgSchema.TABLES[t.name as keyof typeof pgSchema.TABLES] as PgTable);
  const names = order.map((t) => getTableConfig(t).name);
  const missing = DEFINED.filter((name) => !names.includes(name) && !NOT_COPIED.has(name));
  const parentsAfter = order.flatMap((t, i) =>
    getTableConfig(t).foreignKeys
      .map((fk) => getTableConfig(fk.reference().foreignTable as PgTable).name)
      .filter((parent) => names.indexOf(parent) > i)
      .map((parent) => `${getTableConfig(t).name} before ${parent}`),
  );
  return { missing, parentsAfter };
}

describe('the table definitions', () => {
  it('are all copied by `copy` but the run lock, each after the tables its foreign keys name', () => {
    expect(DEFINED).toHaveLength(21);
    expect([...NOT_COPIED]).toEqual(['run_lock']);
    expect(copyOrderProblems(COPY_ORDER)).toEqual({ missing: [], parentsAfter: [] });
    expect(new Set(COPY_ORDER).size).toBe(COPY_ORDER.length);
  });

  it('tell a table missing from the copy order and a child copied before its parent', () => {
    const withoutJobs = COPY_ORDER.filter((t) => t.name !== 'jobs');
    expect(copyOrderProblems(withoutJobs).missing).toEqual(['jobs']);
    const postMedia = COPY_ORDER.find((t) => t.name === 'post_media')!;
    const childFirst = [postMedia, ...COPY_ORDER.filter((t) => t !== postMedia)];
    expect(copyOrderProblems(childFirst).parentsAfter).toEqual(['post_media before posts']);
  });

  it('are each exported by both engines’ schema modules, where drizzle-kit finds them', () => {
    const sqliteNames = Object.values(sqliteSchema).filter((v) => is(v, SQLiteTable)).map((t) => getSqliteTableConfig(t as SQLiteTable).name);
    const pgNames = Object.values(pgSchema).filter((v) => is(v, PgTable)).map((t) => getTableConfig(t as PgTable).name);
    expect(sqliteNames.sort()).toEqual([...DEFINED].sort());
    expect(pgNames.sort()).toEqual([...DEFINED].sort());
  });

  it('give a statement to each normalized table and to no other', () => {
    expect(Object.keys(TABLE_STATEMENTS).sort()).toEqual([...NORMALIZED_TABLES].sort());
    expect(NORMALIZED_TABLES).toHaveLength(11);
  });
});
