/**
 * The package's openDataset() on PostgreSQL: the same rows as on SQLite for the same data (a sandbox run, then
 * `netingest copy`), parameters bound as $1, every write refused with the BadQueryError SQLite's all() gives
 * (one hidden after a `; COMMIT;` included), the password never shown, docs/postgres.md's read-only role able
 * to read, close() ending the pool, NETINGEST_DATABASE_URL when no `db` is given, and pg left unloaded for a
 * SQLite dataset.
 */
import { execFile } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDataset, UsageError, type Dataset, type PgDataset, type SqliteDataset } from '../../src/index.ts';
import { BadQueryError } from '../../src/store/readers/query-errors.ts';
import { ROOT } from '../support/run-helpers.ts';
import { bundledModules, DIST, RECORDER } from '../support/bundle-loads.ts';
import { waitFor as waitForPg } from './coordination-fixtures.ts';
import { docsAnalystUrl } from './analyst-role.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { SAME_ON_BOTH, useReadDataset } from './read-dataset.ts';

/** Writes of every shape; each is refused on both engines and changes nothing. */
const WRITES = [
  'DELETE FROM companies',
  "INSERT INTO netingest_meta (key, value) VALUES ('dataset-api', 'x') RETURNING key",
  'WITH gone AS (DELETE FROM companies RETURNING url) SELECT count(*) FROM gone',
  // One text, three statements: were it run as one, COMMIT would end the READ ONLY transaction before the DELETE.
  'SELECT 1; COMMIT; DELETE FROM companies',
];

const SECRET = 'dataset-api-s3cret-pw';

describe.skipIf(!pgClusterUrl)(`openDataset() on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  const ds = useReadDataset('dsapi', ['lookalikes.json']);
  let lite: SqliteDataset;
  beforeAll(async () => {
    const opened = await openDataset(ds.data.file);
    if (opened.engine !== 'sqlite') throw new Error(`${ds.data.file} opened as ${opened.engine}`);
    lite = opened;
  });
  afterAll(() => lite?.close());

  /** The test database's URL with a password in it (the cluster trusts loopback, so any password connects). */
  const withPassword = () => {
    const url = new URL(ds.data.url);
    url.password = SECRET;
    return url.toString();
  };

  it('reads the same rows as the SQLite dataset, with parameters as $1 (? on SQLite)', async () => {
    const onPg: Dataset = await openDataset(ds.data.url);
    try {
      expect(onPg.engine).toBe('postgres');
      for (const sql of SAME_ON_BOTH) {
        const rows = lite.all(sql);
        expect(rows.length, sql).toBeGreaterThan(0);
        expect(await onPg.query(sql), sql).toEqual(rows);
        expect(await lite.query(sql), sql).toEqual(rows);
      }
      const { url } = lite.all<{ url: string }>('SELECT url FROM companies ORDER BY url LIMIT 1')[0]!;
      const byParams = 'SELECT url, name, staff_total FROM companies WHERE url = $1 OR staff_total > $2 ORDER BY url';
      const pgRows = await onPg.query<{ url: string }>(byParams, [url, 1000]);
      expect(pgRows.map((r) => r.url)).toContain(url);
      expect(pgRows).toEqual(lite.all(byParams.replace('$1', '?').replace('$2', '?'), [url, 1000]));
      // Named parameters are SQLite's: said so, not sent to the server.
      await expect(onPg.query(byParams, { url } as never)).rejects.toThrow(/parameters are \$1, \$2, \.\.\. given as an array/);
    } finally {
      await onPg.close();
    }
  });

  it('refuses every write with a BadQueryError, as SQLite does, and the data stays as it was', async () => {
    const count = async () => (await ds.client.query('SELECT count(*)::int AS n FROM companies')).rows[0].n as number;
    const before = await count();
    expect(before).toBeGreaterThan(0);
    const onPg = await openDataset(ds.data.url);
    try {
      for (const sql of WRITES) {
        expect(() => lite.all(sql), sql).toThrow(BadQueryError);
        await expect(onPg.query(sql), sql).rejects.toThrow(BadQueryError);
        await expect(onPg.query(sql), sql).rejects.toThrow(/refused|SQL error/);
      }
      await expect(onPg.query('DELETE FROM companies')).rejects.toThrow(/refused: DELETE statements are not run here/);
      await expect(onPg.query(WRITES[2]!)).rejects.toThrow(/refused: this statement writes.*read-only transaction/);
      // all() is SQLite's: callable on a Dataset (0.1's code compiles), on PostgreSQL it says what to use.
      expect(() => onPg.all('SELECT 1')).toThrow(UsageError);
      expect(() => onPg.all('SELECT 1')).toThrow(/use `await dataset\.query\(sql, params\)`/);
    } finally {
      await onPg.close();
    }
    expect(await count()).toBe(before);
    expect(lite.all('SELECT count(*) AS n FROM companies')).toEqual([{ n: before }]);
  });

  it('never shows the password: not in `file`, nor in an error of the SQL or of the connection', async () => {
    const onPg = await openDataset(withPassword());
    try {
      expect(onPg.file).toContain('***');
      expect(onPg.file).not.toContain(SECRET);
      const bad = await onPg.query('SELECT nope FROM companies').catch((err: Error) => err);
      expect(bad).toBeInstanceOf(BadQueryError);
      expect(String((bad as Error).message)).toMatch(/column "nope" does not exist/);
      expect(JSON.stringify({ message: (bad as Error).message, stack: (bad as Error).stack })).not.toContain(SECRET);
    } finally {
      await onPg.close();
    }
    const missing = new URL(withPassword());
    missing.pathname = '/no_such_dataset_db';
    const failed = await openDataset(missing.toString()).catch((err: Error) => err);
    expect(failed).toBeInstanceOf(Error);
    expect((failed as Error).message).toMatch(/no_such_dataset_db/);
    expect((failed as Error).message).toContain('***');
    expect(`${(failed as Error).message}\n${(failed as Error).stack}`).not.toContain(SECRET);
  });

  it("reads as docs/postgres.md's read-only analyst role, which opens it without migrating", async () => {
    const asAnalyst = await docsAnalystUrl(ds.client, ds.data.url);
    const onPg = await openDataset(asAnalyst);
    try {
      const sql = SAME_ON_BOTH[1]!;
      expect(await onPg.query(sql)).toEqual(lite.all(sql));
      await expect(onPg.query(WRITES[2]!)).rejects.toThrow(BadQueryError);
    } finally {
      await onPg.close();
    }
  });

  it('close() ends the pool (no connection left on the server), is safe twice, and a later query says it is closed', async () => {
    const database = new URL(ds.data.url).pathname.slice(1);
    const connections = async () =>
      (await ds.client.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database])).rows[0]
        .n as number;
    const opened = await openDataset(ds.data.url);
    if (opened.engine !== 'postgres') throw new Error(`${ds.data.url} opened as ${opened.engine}`);
    const onPg: PgDataset = opened;
    // The type says it first: a PgDataset has no all() to call (tsc checks this file).
    // @ts-expect-error all is `never` on PostgreSQL
    expect(() => onPg.all('SELECT 1')).toThrow(/on PostgreSQL use `await dataset\.query/);
    await onPg.query('SELECT 1 AS one');
    expect(await connections()).toBeGreaterThan(0);
    await onPg.close();
    await onPg.close();
    await waitForPg(async () => (await connections()) === 0, 10_000, 'the pool to disconnect');
    await expect(onPg.query('SELECT 1 AS one')).rejects.toThrow(/was closed; open it again/);
  });

  it('without `db`, opens NETINGEST_DATABASE_URL, as the CLI does without --db', async () => {
    const saved = process.env.NETINGEST_DATABASE_URL;
    process.env.NETINGEST_DATABASE_URL = ds.data.url;
    try {
      const onPg = await openDataset();
      try {
        expect(onPg.engine).toBe('postgres');
        expect(await onPg.query('SELECT count(*) AS n FROM companies')).toEqual(lite.all('SELECT count(*) AS n FROM companies'));
      } finally {
        await onPg.close();
      }
    } finally {
      if (saved === undefined) delete process.env.NETINGEST_DATABASE_URL;
      else process.env.NETINGEST_DATABASE_URL = saved;
    }
  });

  it('a SQLite dataset loads no pg; a PostgreSQL one does (the same script, one process)', async () => {
    const loads = join(ds.data.ws.dir, 'loads.txt');
    // The package as users import it (dist/index.js), in plain Node: no tsx start compiling the sources.
    const script = join(ds.data.ws.dir, 'open-both.mjs');
    await writeFile(
        script,
        `import { appendFileSync } from 'node:fs';\n` +
          `import { openDataset } from ${JSON.stringify(join(DIST, 'index.js'))};\n` +
          `const lite = await openDataset(${JSON.stringify(ds.data.file)});\n` +
          `await lite.query('SELECT count(*) AS n FROM companies');\n` +
          `lite.close();\n` +
          `appendFileSync(process.env.LOADS_FILE, 'POSTGRES\\n');\n` +
          `const onPg = await openDataset(process.env.PG_URL);\n` +
          `await onPg.query('SELECT count(*) AS n FROM companies');\n` +
          `await onPg.close();\n`,
    );
    appendFileSync(loads, '');
    await promisify(execFile)(process.execPath, ['--import', RECORDER, script], {
      cwd: ROOT,
      env: { ...process.env, LOADS_FILE: loads, PG_URL: ds.data.url },
    });
    const [sqlitePart, pgPart] = await Promise.all(readFileSync(loads, 'utf8').split('POSTGRES\n').map((part) => bundledModules(part.split('\n'))));
    const pgModules = (part: { sources: string[]; packages: string[] }) => [...part.packages.filter((p) => p.startsWith('pg/')), ...part.sources.filter((m) => m === 'store/readers/pg-dataset.ts')];
    expect(sqlitePart!.sources).toContain('store/readers/dataset.ts');
    expect(pgModules(sqlitePart!)).toEqual([]);
    expect(pgModules(pgPart!).length).toBeGreaterThan(0);
  }, 30_000);
});
