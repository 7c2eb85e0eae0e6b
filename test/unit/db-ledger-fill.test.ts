import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { createLedger, type NewTask } from '../../src/store/ledger.ts';

// insertPlanned writes tasks several rows per statement; whatever the batch shape, the ledger must end up as if
// every row had been upserted on its own, in input order.

let dir: string;
const opened: Database[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-db-ledger-fill-'));
});
afterEach(() => {
  for (const d of opened.splice(0)) d.close();
  rmSync(dir, { recursive: true, force: true });
});

function open(name: string): Database {
  const database = openDatabase(join(dir, name));
  opened.push(database);
  return database;
}

function task(i: number, page: number, num = 10, job = 'j'): NewTask {
  const url = `https://network.com/company/co-${i}`;
  return { job, operation: 'similar-companies', inputKey: url, page, requestJson: JSON.stringify({ url, account: {}, page, num }), inputLine: i + 2 };
}

function dump(database: Database) {
  return database.sqlite
    .prepare(`SELECT id, job, operation, input_key, page, request_json, input_line, status, attempts, created_at, updated_at, run_id
      FROM tasks ORDER BY id`)
    .all();
}

/** A plan of `n` inputs x 2 pages with a few repeats of earlier keys (conflicts inside one batch). */
function plan(n: number, num: number): NewTask[] {
  const out: NewTask[] = [];
  for (let i = 0; i < n; i++) {
    out.push(task(i, 1, num), task(i, 2, num));
    if (i % 17 === 5) out.push(task(i - 3, 1, num + 1));
  }
  return out;
}

describe('ledger.insertPlanned', () => {
  it('writes a batch exactly as row-by-row upserts would, across statement boundaries and conflicts', () => {
    const batched = open('batched.db');
    const single = open('single.db');
    const a = createLedger(batched);
    const b = createLedger(single);
    const first = plan(137, 10);
    a.insertPlanned(first, [], 1, 'T1');
    for (const t of first) b.insertPlanned([t], [], 1, 'T1');
    expect(dump(batched)).toEqual(dump(single));
    expect(dump(batched)).toHaveLength(137 * 2);

    // Settle some tasks, then plan again with a changed request for every third input.
    for (const database of [batched, single]) {
      database.sqlite.prepare(`UPDATE tasks SET status = 'done', completed_at = 'T1' WHERE id % 2 = 0`).run();
    }
    const second = plan(160, 10).map((t, k) => (k % 3 === 0 ? { ...t, requestJson: t.requestJson.replace('"num":10', '"num":20') } : t));
    a.insertPlanned(second, [], 2, 'T2');
    for (const t of second) b.insertPlanned([t], [], 2, 'T2');
    const rows = dump(batched);
    expect(rows).toEqual(dump(single));
    expect(rows).toHaveLength(160 * 2);
  });

  it('keeps a settled task settled when its request is unchanged, and makes it pending when it changed', () => {
    const database = open('semantics.db');
    const ledger = createLedger(database);
    const tasks = Array.from({ length: 120 }, (_, i) => task(i, 1));
    ledger.insertPlanned(tasks, [], 1, 'T1');
    database.sqlite.prepare(`UPDATE tasks SET status = 'done', completed_at = 'T1'`).run();
    const again = tasks.map((t, i) => (i % 2 === 0 ? t : task(i, 1, 25)));
    ledger.insertPlanned(again, [], 2, 'T2');
    const rows = database.sqlite.prepare('SELECT input_line, status, run_id, request_json, created_at FROM tasks ORDER BY id').all() as Array<{
      input_line: number;
      status: string;
      run_id: number;
      request_json: string;
      created_at: string;
    }>;
    expect(rows).toHaveLength(120);
    rows.forEach((r, i) => {
      expect(r.run_id).toBe(2);
      expect(r.created_at).toBe('T1');
      expect(r.status).toBe(i % 2 === 0 ? 'done' : 'pending');
      expect(r.request_json).toBe(again[i]!.requestJson);
    });
  });

  it('records invalid rows in the same transaction', () => {
    const database = open('invalid.db');
    createLedger(database).insertPlanned([task(1, 1)], [{ job: 'j', file: 'in.csv', line: 3, field: 'url', value: 'x', reason: 'not a URL' }], 1, 'T1');
    expect(database.sqlite.prepare('SELECT job, file, line, field, value, reason, run_id FROM invalid_inputs').all()).toEqual([
      { job: 'j', file: 'in.csv', line: 3, field: 'url', value: 'x', reason: 'not a URL', run_id: 1 },
    ]);
  });
});
