import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/store/open.ts';
import { capture, freshFolder, leftovers } from './export-helpers.ts';
import { exportSql, exportTable } from '../../src/export/export-table.ts';
import { ExportInterruptedError } from '../../src/store/readers/query-errors.ts';
import { openFileSink } from '../../src/export/output-sink.ts';
import { writeOutput } from '../../src/export/write-output.ts';

// The built CLI, as installed (test/global-setup.ts builds it).
const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));
const ROWS = 20_000;
let dir: string;
let db: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-export-int-'));
  db = join(dir, 'data.db');
  const database = openDatabase(db);
  const insert = database.sqlite.prepare(`INSERT INTO jobs (url, title, company_name, description, first_seen_at, updated_at)
    VALUES (?, ?, ?, ?, '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z')`);
  database.sqlite.transaction(() => {
    for (let i = 0; i < ROWS; i++) insert.run(`https://network.com/jobs/view/${i}`, `Engineer ${i}`, `Acme ${i % 100}`, `Build "things", line\n${i}`);
  })();
  database.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** `netingest export --sql <sql> --out <out>` as a child process, resolved once its temporary file exists in `folder`. */
async function exportUnderWay(sql: string, out: string, folder: string) {
  const child = spawn(process.execPath, [BIN, 'export', '--sql', sql, '--db', db, '--out', out], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const started = Date.now();
  while (leftovers(folder).length === 0 && Date.now() - started < 20_000) await new Promise((r) => setTimeout(r, 2));
  expect(leftovers(folder).length).toBe(1);
  return { child, exited, stderr: () => stderr };
}

describe('an interrupted export leaves nothing half-written', () => {
  it('an abort signal mid-export: no file at --out, no temporary file, and the previous file untouched', async () => {
    const folder = freshFolder(dir, 'abort');
    const out = join(folder, 'jobs.csv');
    writeFileSync(out, 'previous complete export\n');
    const controller = new AbortController();
    const promise = exportTable({
      db,
      table: 'jobs',
      out,
      batchRows: 100,
      signal: controller.signal,
      onProgress: (n) => {
        if (n >= 1000) controller.abort();
        expect(n).toBeLessThanOrEqual(1000);
      },
    });
    await expect(promise).rejects.toBeInstanceOf(ExportInterruptedError);
    await expect(promise).rejects.toMatchObject({ code: 'INTERRUPTED' });
    expect(readFileSync(out, 'utf8')).toBe('previous complete export\n');
    expect(leftovers(folder)).toEqual([]);
  });

  it('an exception during the iteration (a SQL error on row 500) removes the temporary file', async () => {
    const folder = freshFolder(dir, 'sql-error');
    const out = join(folder, 'boom.csv');
    const sql = `SELECT url, CASE WHEN rowid > 500 THEN abs(-9223372036854775808) ELSE rowid END AS n FROM jobs`;
    await expect(exportSql({ db, sql, out, batchRows: 50 })).rejects.toMatchObject({ code: 'QUERY_INVALID' });
    expect(existsSync(out)).toBe(false);
    expect(leftovers(folder)).toEqual([]);
  });

  it('a failing progress callback aborts the export the same way', async () => {
    const folder = freshFolder(dir, 'callback');
    const out = join(folder, 'jobs.jsonl');
    const boom = new Error('disk quota (simulated)');
    await expect(
      exportTable({ db, table: 'jobs', out, format: 'jsonl', onProgress: (n) => {
        if (n > 2000) throw boom;
      } }),
    ).rejects.toBe(boom);
    expect(existsSync(out)).toBe(false);
    expect(leftovers(folder)).toEqual([]);
  });

  it('a failing output stream rejects the export with its error (no silent truncation)', async () => {
    let writes = 0;
    const failing = new Writable({
      write(_chunk, _enc, done) {
        writes++;
        done(writes === 3 ? new Error('ENOSPC: no space left on device') : null);
      },
    });
    await expect(exportTable({ db, table: 'jobs', stream: failing, batchRows: 100 })).rejects.toThrow(/ENOSPC/);
  });

  it('an --out folder that does not exist fails before any work, naming it', async () => {
    const out = join(dir, 'missing-folder', 'x.csv');
    await expect(exportTable({ db, table: 'jobs', out })).rejects.toMatchObject({
      code: 'OUTPUT_UNWRITABLE',
      message: expect.stringContaining('does not exist') as unknown,
    });
  });

  it('a failure when renaming into place (a folder took the --out path meanwhile) removes the temporary file', async () => {
    const folder = freshFolder(dir, 'rename');
    const out = join(folder, 'taken');
    // Made once the export is under way: a folder there at the start is refused up front (test/export-out-path).
    const onProgress = () => {
      if (!existsSync(out)) mkdirSync(out);
    };
    await expect(exportTable({ db, table: 'jobs', out, onProgress })).rejects.toMatchObject({ code: 'OUTPUT_WRITE_FAILED' });
    expect(readdirSync(folder)).toEqual(['taken']);
  });

  it('SIGINT to `netingest export`: exit 130, no file at --out, temporary file removed', async () => {
    const folder = freshFolder(dir, 'sigint');
    const out = join(folder, 'jobs.csv');
    // An endless SELECT: only the signal can end this export, so the test cannot race its completion.
    const endless = 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i, i * 2 AS twice FROM n';
    // Signal as soon as the temporary file exists: the export is under way.
    const { child, exited, stderr } = await exportUnderWay(endless, out, folder);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr()).toMatch(/SIGINT received/);
    expect(stderr()).toMatch(/INTERRUPTED/);
    expect(existsSync(out)).toBe(false);
    expect(leftovers(folder)).toEqual([]);
  });

  it('SIGHUP (the terminal or ssh session closed): exit 130, no file at --out, temporary file removed', async () => {
    const folder = freshFolder(dir, 'sighup');
    const out = join(folder, 'jobs.csv');
    const endless = 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n';
    const { child, exited, stderr } = await exportUnderWay(endless, out, folder);
    child.kill('SIGHUP');
    expect(await exited).toBe(130);
    expect(stderr()).toMatch(/INTERRUPTED/);
    expect(existsSync(out)).toBe(false);
    expect(leftovers(folder)).toEqual([]);
  });

  it('SIGINT while one long statement holds the thread: exit 130, and the previous --out is kept', async () => {
    const folder = freshFolder(dir, 'sigint-blocked');
    const out = join(folder, 'count.csv');
    writeFileSync(out, 'previous complete export\n');
    // One row, produced only after seconds of work: the signal arrives while SQLite holds the thread.
    const slow = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 8000000) SELECT count(*) FROM c';
    const { child, exited, stderr } = await exportUnderWay(slow, out, folder);
    // Not at once: a signal that beats the statement's start is handled before SQLite takes the thread.
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(stderr()).toMatch(/INTERRUPTED/);
    expect(stderr()).not.toMatch(/exported/);
    expect(readFileSync(out, 'utf8')).toBe('previous complete export\n');
    expect(leftovers(folder)).toEqual([]);
  });

  it('an abort mid-export to stdout says the rows already sent are incomplete, not that no file was written', async () => {
    const stream = capture();
    const controller = new AbortController();
    const promise = exportTable({
      db,
      table: 'jobs',
      stream,
      batchRows: 100,
      signal: controller.signal,
      onProgress: (n) => {
        if (n >= 1000) controller.abort();
      },
    });
    await expect(promise).rejects.toMatchObject({ code: 'INTERRUPTED' });
    const err = (await promise.catch((e: unknown) => e)) as Error;
    expect(err.message).toBe('interrupted after 1000 rows had been written to the output: what it holds is incomplete');
    expect(stream.text().startsWith('url,')).toBe(true);
  });

  it('an abort to stdout before the first batch says nothing was written', async () => {
    const stream = capture();
    const promise = exportTable({ db, table: 'jobs', stream, signal: AbortSignal.abort() });
    await expect(promise).rejects.toMatchObject({ code: 'INTERRUPTED', message: 'interrupted; nothing was written' });
    expect(stream.text()).toBe('');
  });

  it('an abort after the last row is written but before the rename still discards the output', async () => {
    const folder = freshFolder(dir, 'abort-at-commit');
    const out = join(folder, 'late.csv');
    const controller = new AbortController();
    async function* rows() {
      yield { data: 'a\n1\n', rows: 1 };
      controller.abort();
    }
    const promise = writeOutput({ out, signal: controller.signal }, rows());
    await expect(promise).rejects.toBeInstanceOf(ExportInterruptedError);
    expect(existsSync(out)).toBe(false);
    expect(leftovers(folder)).toEqual([]);
  });

  it('a file sink told to commit after its signal aborted renames nothing', async () => {
    const folder = freshFolder(dir, 'commit-aborted');
    const out = join(folder, 'late.csv');
    const sink = await openFileSink(out);
    await sink.write('a\n1\n');
    await expect(sink.commit(AbortSignal.abort())).rejects.toBeInstanceOf(ExportInterruptedError);
    expect(existsSync(out)).toBe(false);
    expect(leftovers(folder)).toEqual([]);
  });

  it('the same export left alone completes and renames into place', async () => {
    const folder = freshFolder(dir, 'complete');
    const out = join(folder, 'jobs.csv');
    const result = await exportTable({ db, table: 'jobs', out });
    expect(result.rows).toBe(ROWS);
    expect(readdirSync(folder)).toEqual(['jobs.csv']);
  });
});
