import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../../src/store/open.ts';
import { capture, freshFolder, leftovers } from './export-helpers.ts';
import { exportTable, type ExportTableOptions } from '../../src/export/export-table.ts';
import { ExportInterruptedError } from '../../src/store/readers/query-errors.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'dist/bin.js');
const ROWS = 3_000;
/** Values that break naive CSV, and NULL next to the empty string. */
const NASTY = ['plain', 'comma, inside', 'say "hello"', 'line one\nline two', 'crlf\r\nline', 'lone\rcr', '', 'Société 日本語 🚀', '"', null];
/** Small chunks and no size threshold: a few thousand rows go through many chunks on two workers. */
const PARALLEL = { workers: 2, minRowidSpan: 1, chunkRowids: 97, maxChunksInFlight: 3 } as const;
const SINGLE = { workers: 1 } as const;

let dir: string;
let db: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-export-par-'));
  db = join(dir, 'data.db');
  const database = openDatabase(db);
  const { sqlite } = database;
  const insert = sqlite.prepare(`INSERT INTO companies (url, name, description, tagline, followers, staff_total, founded_year,
    funding_data, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  sqlite.transaction(() => {
    for (let i = 0; i < ROWS; i++) {
      const value = NASTY[i % NASTY.length]!;
      insert.run(`https://network.com/company/c${i}`, value, `${value} ${i}`.repeat(1 + (i % 5)), NASTY[(i + 3) % NASTY.length],
        i % 3 === 0 ? i * 1000 : null, i % 4 === 0 ? `${i} staff` : i, i % 2 === 0 ? 1990.5 : null,
        i % 6 === 0 ? JSON.stringify({ rounds: i, note: value }) : null, '2026-11-01T00:00:00.000Z',
        `2026-11-${String(1 + (i % 28)).padStart(2, '0')}T10:00:00.000Z`);
    }
  })();
  // Sparse rowids: scattered deletions and a long gap, so some chunks are empty and others partly filled.
  sqlite.exec('DELETE FROM companies WHERE rowid % 7 = 3 OR rowid BETWEEN 1200 AND 1650');
  database.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The same export through the main-thread path and the parallel path, to stdout-like streams. */
async function bothWays(options: Omit<ExportTableOptions, 'db' | 'parallel' | 'stream' | 'out'>) {
  const single = capture();
  const parallel = capture();
  const a = await exportTable({ ...options, db, stream: single, parallel: SINGLE });
  const b = await exportTable({ ...options, db, stream: parallel, parallel: PARALLEL });
  return { single: { ...a, text: single.text() }, parallel: { ...b, text: parallel.text() } };
}

function count(sql: string, params: unknown[] = []): number {
  const database = openDatabase(db, { readonly: true });
  try {
    return database.sqlite.prepare(sql).pluck().get(...params) as number;
  } finally {
    database.close();
  }
}

describe('parallel table export', () => {
  it('writes CSV byte for byte like the main-thread path (sparse rowids, quotes, line breaks, NULL vs "")', async () => {
    const { single, parallel } = await bothWays({ table: 'companies' });
    expect(single.workers).toBe(0);
    expect(parallel.workers).toBe(2);
    expect(parallel.rows).toBe(count('SELECT count(*) FROM companies'));
    expect(parallel.rows).toBe(single.rows);
    expect(parallel.columns).toEqual(single.columns);
    expect(parallel.text).toBe(single.text);
    expect(parallel.text).toContain(',"",');
    expect(parallel.text).toContain('"say ""hello""');
  });

  it('--bom: one byte-order mark before the header, the rest byte for byte as without it, on both paths', async () => {
    // Without the mark, the main-thread path alone: the test above has the parallel one write the same bytes.
    const plain = capture();
    await exportTable({ db, table: 'companies', stream: plain, parallel: SINGLE });
    const marked = await bothWays({ table: 'companies', bom: true });
    expect(marked.parallel.workers).toBe(2);
    expect(marked.single.text).toBe(`\uFEFF${plain.text()}`);
    expect(marked.parallel.text).toBe(marked.single.text);
  });

  it('writes JSON Lines byte for byte like the main-thread path', async () => {
    const { single, parallel } = await bothWays({ table: 'companies', format: 'jsonl' });
    expect(parallel.workers).toBe(2);
    expect(parallel.text).toBe(single.text);
    expect(parallel.text.split('\n').length - 1).toBe(parallel.rows);
  });

  it('applies --since in every chunk', async () => {
    const { single, parallel } = await bothWays({ table: 'companies', since: '2026-11-20' });
    expect(parallel.workers).toBe(2);
    expect(parallel.rows).toBe(count('SELECT count(*) FROM companies WHERE updated_at >= ?', ['2026-11-20T00:00:00.000Z']));
    expect(parallel.rows).toBeLessThan(count('SELECT count(*) FROM companies'));
    expect(parallel.text).toBe(single.text);
  });

  it('writes --out atomically, the same file as the main-thread path', async () => {
    const folder = freshFolder(dir, 'out');
    const a = join(folder, 'single.csv');
    const b = join(folder, 'parallel.csv');
    await exportTable({ db, table: 'companies', out: a, parallel: SINGLE });
    const result = await exportTable({ db, table: 'companies', out: b, parallel: PARALLEL });
    expect(result).toMatchObject({ out: b, workers: 2, readerClosed: false });
    expect(readFileSync(b)).toEqual(readFileSync(a));
    expect(leftovers(folder)).toEqual([]);
  });

  it('keeps a small table (rowid span below the threshold) on the main thread', async () => {
    const result = await exportTable({ db, table: 'companies', stream: capture(), parallel: { workers: 2, minRowidSpan: 1_000_000 } });
    expect(result.workers).toBe(0);
  });

  it('keeps a table whose rowids are far sparser than its rows on the main thread (a row at rowid 2^40)', async () => {
    const sparse = join(dir, 'sparse.db');
    const database = openDatabase(sparse);
    const insert = database.sqlite.prepare('INSERT INTO companies (rowid, url, name, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?)');
    for (const rowid of [1, 2, 3, 2 ** 40]) insert.run(rowid, `https://network.com/company/s${rowid}`, `s${rowid}`, 't', 't');
    database.close();
    // Cut by rowid, this span would be ~11 billion chunks of 97: the export would never end.
    const out = capture();
    const result = await exportTable({ db: sparse, table: 'companies', stream: out, parallel: PARALLEL });
    expect(result).toMatchObject({ workers: 0, rows: 4 });
    expect(out.text()).toContain(`s${2 ** 40}`);
  });

  it('an abort mid-export stops the workers and leaves no file at --out, the previous file untouched', async () => {
    const folder = freshFolder(dir, 'abort');
    const out = join(folder, 'companies.csv');
    writeFileSync(out, 'previous complete export\n');
    const controller = new AbortController();
    let progressCalls = 0;
    const promise = exportTable({
      db,
      table: 'companies',
      out,
      parallel: PARALLEL,
      signal: controller.signal,
      onProgress: () => {
        progressCalls++;
        if (progressCalls === 3) controller.abort();
      },
    });
    await expect(promise).rejects.toBeInstanceOf(ExportInterruptedError);
    expect(progressCalls).toBe(3);
    expect(readFileSync(out, 'utf8')).toBe('previous complete export\n');
    expect(leftovers(folder)).toEqual([]);
  });

  it('a worker that cannot read (a damaged page mid-table) fails the export with DB_CORRUPT, naming the file; no file left', async () => {
    const broken = join(dir, 'broken.db');
    const database = openDatabase(broken);
    const insert = database.sqlite.prepare('INSERT INTO companies (url, description, first_seen_at, updated_at) VALUES (?, ?, ?, ?)');
    database.sqlite.transaction(() => {
      for (let i = 0; i < 2000; i++) insert.run(`https://network.com/company/b${i}`, 'x'.repeat(300), '2026-11-01', '2026-11-01');
    })();
    // dbstat lists the table's leaf pages; the first and last (read for min/max rowid) stay intact.
    const leaves = database.sqlite
      .prepare(`SELECT pageno FROM dbstat WHERE name = 'companies' AND pagetype = 'leaf' ORDER BY pageno`)
      .pluck()
      .all() as number[];
    const pageSize = database.sqlite.pragma('page_size', { simple: true }) as number;
    database.close();
    expect(leaves.length).toBeGreaterThan(20);
    const victim = leaves[Math.floor(leaves.length / 2)]!;
    const fd = openSync(broken, 'r+');
    writeSync(fd, Buffer.alloc(pageSize, 0xa5), 0, pageSize, (victim - 1) * pageSize);
    closeSync(fd);

    const folder = freshFolder(dir, 'corrupt');
    const out = join(folder, 'companies.csv');
    const err = await exportTable({ db: broken, table: 'companies', out, parallel: PARALLEL }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'DB_CORRUPT', message: expect.stringContaining(broken) as unknown });
    expect(existsSync(out)).toBe(false);
    expect(leftovers(folder)).toEqual([]);
  });

  it('a worker out of memory (a huge value, here against a small heap) fails clearly and leaves no file', async () => {
    const huge = join(dir, 'huge.db');
    const database = openDatabase(huge);
    const insert = database.sqlite.prepare('INSERT INTO companies (url, description, first_seen_at, updated_at) VALUES (?, ?, ?, ?)');
    insert.run('https://network.com/company/huge', 'a "quoted", line\n'.repeat(400_000), '2026-11-01', '2026-11-01');
    insert.run('https://network.com/company/small', 'small', '2026-11-01', '2026-11-01');
    database.close();
    const folder = freshFolder(dir, 'oom');
    const out = join(folder, 'companies.csv');
    const err = await exportTable({ db: huge, table: 'companies', out, parallel: { ...PARALLEL, workerOldGenerationMb: 16 } }).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'EXPORT_WORKER_OUT_OF_MEMORY', message: expect.stringContaining('--sql') as unknown });
    expect(existsSync(out)).toBe(false);
    expect(leftovers(folder)).toEqual([]);
  });
});

describe('the workers start however netingest runs', () => {
  /**
   * A table of small rows whose rowid span (1..50,000) meets the default thresholds: a row every third rowid,
   * under the four rowids a row the parallel path allows (16,668 rows, ~1 MB of CSV: 25 chunks, far past a
   * pipe's buffer; a row at nearly every rowid was 45,000 rows to write and export four times).
   */
  let wide: string;
  let expected: string;

  beforeAll(async () => {
    wide = join(dir, 'wide.db');
    const database = openDatabase(wide);
    const insert = database.sqlite.prepare(`INSERT INTO companies (rowid, url, name, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?)`);
    database.sqlite.transaction(() => {
      for (let rowid = 1; rowid < 50_000; rowid += 3) {
        insert.run(rowid, `https://network.com/company/w${rowid}`, `Wide, "${rowid}"`, '2026-11-01', '2026-11-02');
      }
      insert.run(50_000, 'https://network.com/company/w50000', 'last', '2026-11-01', '2026-11-02');
    })();
    database.close();
    const stream = capture();
    await exportTable({ db: wide, table: 'companies', stream, parallel: SINGLE });
    expected = stream.text();
  });

  // The built CLI, as installed (its workers are dist/'s entries beside bin.js), and the sources under vitest
  // (threads/start.ts picks the entry from the .ts module). `bin.mjs` under tsx is the sources' path again (the
  // module is the .ts source, the entry the same as here; threads-from-sources runs the tsx bootstraps): it was
  // 1.4 s of CPU for a tsx start that proved no more.
  it('from the built CLI (dist/bin.js), to a pipe', () => {
    // stdout is a pipe here: its buffers go back to the workers once written, and must not be reused before.
    expect(execFileSync(process.execPath, [BIN, 'export', 'companies', '--db', wide], { encoding: 'utf8', maxBuffer: 1 << 26 })).toBe(expected);
  });

  it('under vitest (this process)', async () => {
    const stream = capture();
    const result = await exportTable({ db: wide, table: 'companies', stream });
    expect(result.workers).toBe(2);
    expect(stream.text()).toBe(expected);
  });
});
