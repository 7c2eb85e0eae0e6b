/**
 * The WAL checkpointer thread copies committed pages from the log into the database file while another
 * connection keeps writing (and never checkpoints itself), and closes cleanly.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/open.ts';
import { startWalCheckpointer } from '../../src/store/result-writer.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-ckpt-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it('moves the log into the database file from its own thread, and stops on close()', async () => {
  const file = join(dir, 'c.db');
  const database = openDatabase(file);
  try {
    database.sqlite.pragma('wal_checkpoint(TRUNCATE)');
    database.sqlite.pragma('wal_autocheckpoint = 0');
    const before = statSync(file).size;
    const insert = database.sqlite.prepare(
      `INSERT INTO raw_responses (operation, request_key, request_json, body, received_at) VALUES ('post-details', ?, '{}', ?, '2026-01-01T00:00:00.000Z')`,
    );
    database.sqlite.transaction(() => {
      for (let i = 0; i < 2000; i++) insert.run(`k${i}`, 'x'.repeat(1000));
    })();
    // Committed, but only in the log: nothing has checkpointed it.
    expect(statSync(file).size).toBe(before);

    const checkpointer = startWalCheckpointer(file, 20);
    const deadline = Date.now() + 10_000;
    while (statSync(file).size < before + 2_000_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    expect(statSync(file).size).toBeGreaterThan(before + 2_000_000);
    await checkpointer.close();
    expect(database.sqlite.prepare('SELECT count(*) FROM raw_responses').pluck().get()).toBe(2000);
  } finally {
    database.close();
  }
});
