/**
 * SQLite's read snapshot, as the store keeps it: one read transaction on the connection (begun and its snapshot
 * taken by withReadSnapshot, held by holdReadSnapshot for an export worker), and the change check of a file read
 * without locks (read-without-shm.ts) after each read. That a read-only command sees one snapshot while a run
 * commits, on both engines: test/pg/read-snapshot.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openConnection, type Connection } from '../../src/store/connection.ts';
import { holdReadSnapshot, withReadSnapshot } from '../../src/store/read-snapshot.ts';

let dir: string;
let file: string;
const opened: Connection[] = [];

function open(readonly = false): Connection {
  const c = openConnection(file, { readonly });
  opened.push(c);
  return c;
}

/** A real read-only connection whose change check records what it was called with. */
function watched(): { connection: Connection; checks: unknown[] } {
  const real = open(true);
  const checks: unknown[] = [];
  return { connection: { ...real, assertUnchanged: (failure?: unknown) => void checks.push(failure ?? 'ok') }, checks };
}

const count = (c: Connection) => c.sqlite.prepare('SELECT count(*) FROM t').pluck().get() as number;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-read-snapshot-'));
  file = join(dir, 'data.db');
  const writer = open();
  writer.sqlite.exec('CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2)');
});
afterEach(() => {
  for (const c of opened.splice(0)) c.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('withReadSnapshot', () => {
  it('holds its transaction across awaits, ends it when the promise settles, then runs the change check once', async () => {
    const { connection, checks } = watched();
    const seen = await withReadSnapshot(connection, async (snapshot) => {
      const before = count(connection);
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(snapshot.file).toBe(connection.file);
      expect(connection.sqlite.inTransaction).toBe(true);
      expect(checks).toEqual([]);
      return before;
    });
    expect(seen).toBe(2);
    expect(connection.sqlite.inTransaction).toBe(false);
    expect(checks).toEqual(['ok']);
  });

  it('ends the transaction on a failure and checks with the error as cause', async () => {
    const { connection, checks } = watched();
    const boom = new Error('boom');
    await expect(
      withReadSnapshot(connection, async (snapshot) => {
        snapshot.sqlite.prepare('SELECT n FROM t').all();
        await new Promise<void>((resolve) => setImmediate(resolve));
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(checks).toEqual([boom]);
    expect(connection.sqlite.inTransaction).toBe(false);
  });

  it('reports the change check failure instead of the read error it explains', async () => {
    const real = open(true);
    const changed = new Error('changed');
    const connection: Connection = {
      ...real,
      assertUnchanged: (failure?: unknown) => {
        throw Object.assign(changed, { cause: failure });
      },
    };
    await expect(withReadSnapshot(connection, () => Promise.reject(new Error('torn page')))).rejects.toBe(changed);
    expect((changed.cause as Error).message).toBe('torn page');
    expect(real.sqlite.inTransaction).toBe(false);
  });

  it('refuses to nest without ending the transaction already open', async () => {
    const { connection } = watched();
    await withReadSnapshot(connection, async () => {
      expect(() => withReadSnapshot(connection, () => 1)).toThrow(/within a transaction/);
      expect(connection.sqlite.inTransaction).toBe(true);
    });
  });
});

describe('withReadSnapshot, given a synchronous read', () => {
  it('reads in one transaction, checks after it and closes it, all before it returns', () => {
    const { connection, checks } = watched();
    const n: number = withReadSnapshot(connection, (snapshot) => {
      expect(snapshot.sqlite.inTransaction).toBe(true);
      return count(connection);
    });
    expect(n).toBe(2);
    expect(checks).toEqual(['ok']);
    expect(connection.sqlite.inTransaction).toBe(false);
  });
});

describe('holdReadSnapshot', () => {
  it('keeps one snapshot for every read and checks after each', () => {
    const writer = opened[0]!;
    const { connection, checks } = watched();
    const held = holdReadSnapshot(connection);
    writer.sqlite.exec('INSERT INTO t VALUES (3)');
    expect(held.read(() => count(connection))).toBe(2);
    writer.sqlite.exec('INSERT INTO t VALUES (4)');
    expect(held.read(() => count(connection))).toBe(2);
    const boom = new Error('boom');
    expect(() =>
      held.read(() => {
        throw boom;
      }),
    ).toThrow(boom);
    expect(checks).toEqual(['ok', 'ok', boom]);
  });
});
