/**
 * The commands that only read (`status`, `enrich` through the store's read; `export <table>` through its table
 * rows) see one snapshot of the dataset, taken when their read starts, however much a run commits meanwhile; the
 * next read sees those commits. Said once, through the store every command uses, on both engines. How SQLite's
 * snapshot is kept (its read transaction, the change check of a file read without locks, the snapshot an export
 * worker holds) is SQLite's own: test/unit/db-read-snapshot.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.ts';
import { rows, value } from '../../src/store/read-steps.ts';
import { statusReads } from '../../src/store/status.ts';
import { forEachEngine, type TestDb, type TestEngine } from './engines.ts';

const root = mkdtempSync(join(tmpdir(), 'netingest-read-snapshot-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let datasets = 0;

/** A finished run, as a writer of the dataset commits one. */
const addRun = (db: TestDb, id: number) =>
  db.run(`INSERT INTO runs (id, jobs, started_at, ended_at, status, credits_spent, calls) VALUES (?, '["posts"]', ?, ?, 'completed', 1, 1)`,
    id, new Date(Date.UTC(2026, 0, id)).toISOString(), new Date(Date.UTC(2026, 0, id, 1)).toISOString());

/** A dataset holding runs 1 and 2. */
async function twoRuns(engine: TestEngine): Promise<TestDb> {
  const db = await engine.created(root, `snapshot-${++datasets}.db`);
  for (const id of [1, 2]) await addRun(db, id);
  return db;
}

const runIds = function* () {
  return (yield* rows<{ id: number | string }>('SELECT id FROM runs ORDER BY id')).map((r) => Number(r.id));
};

forEachEngine('a read-only command', (engine) => {
  it.concurrent("reads one snapshot, taken when its read starts, across awaits and statements while another connection commits", async () => {
    const db = await twoRuns(engine);
    const store = await openStore(db.locator);
    const seen = await store.read(async (snapshot) => {
      // Committed before the read's first statement: the snapshot was taken when the read began.
      await addRun(db, 3);
      const first = await snapshot.read(runIds());
      await addRun(db, 4);
      await db.run('UPDATE runs SET status = ? WHERE id = 1', 'failed');
      const report = await snapshot.read(statusReads());
      const failed = await snapshot.read(value<number>(`SELECT count(*) FROM runs WHERE status = 'failed'`));
      return { first, statusRuns: report.runs.map((r) => r.id).sort(), failed: Number(failed) };
    });
    expect(seen).toEqual({ first: [1, 2], statusRuns: [1, 2], failed: 0 });
    // Ended: the next read sees every commit.
    expect(await store.read((snapshot) => snapshot.read(runIds()))).toEqual([1, 2, 3, 4]);
  });

  it.concurrent("export's table rows come from the snapshot taken when the export starts", async () => {
    const db = await twoRuns(engine);
    const store = await openStore(db.locator);
    const exported = await store.tableRows({ table: 'runs', kind: 'table' }, {}, async (table) => {
      await addRun(db, 3);
      await db.run('DELETE FROM runs WHERE id = 1');
      const id = table.columns.indexOf('id');
      const out: number[] = [];
      for await (const row of table.rows) out.push(Number(row[id]));
      return out;
    });
    expect(exported).toEqual([1, 2]);
    expect(await db.rows('SELECT id FROM runs ORDER BY id').then((r) => r.map((x) => Number(x['id'])))).toEqual([2, 3]);
  });

  it.concurrent('a read that fails ends its snapshot and gives its own error; the next read sees what was committed meanwhile', async () => {
    const db = await twoRuns(engine);
    const store = await openStore(db.locator);
    const boom = new Error('boom');
    await expect(
      store.read(async (snapshot) => {
        await snapshot.read(runIds());
        await addRun(db, 3);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await store.read((snapshot) => snapshot.read(runIds()))).toEqual([1, 2, 3]);
  });
});
