import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { openDatabase } from '../../src/store/open.ts';
import { capture, freshFolder, leftovers } from './export-helpers.ts';
import { exportSql, exportTable } from '../../src/export/export-table.ts';
import { exportSources, parseSince } from '../../src/export/sources.ts';
import { parseChangesSince } from '../../src/store/history/changes-query.ts';
import { UsageError } from '../../src/errors.ts';
import { main } from '../../src/cli/main.ts';

// The built CLI, as installed (test/global-setup.ts builds it).
const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));

let dir: string;
let db: string;

const T = (day: number) => `2026-11-${String(day).padStart(2, '0')}T10:00:00.000Z`;
/** Values that break naive CSV: quotes, delimiters, every line break, non-ASCII, emoji, empty vs null. */
const NASTY = [
  'plain',
  'comma, inside',
  'say "hello"',
  'line one\nline two',
  'crlf\r\nline',
  'lone\rcr',
  '',
  '  padded  ',
  'Société Générale — «ünïcödé» 日本語',
  'rocket 🚀 family 👨‍👩‍👧',
  '=SUM(A1)',
  '"',
  ',',
  null,
];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-export-'));
  db = join(dir, 'data.db');
  const database = openDatabase(db);
  const { sqlite } = database;
  const company = sqlite.prepare(`INSERT INTO companies (url, name, description, phone, followers, object_urn, founded_year,
    staff_total, funding_data, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const industry = sqlite.prepare('INSERT INTO company_industries (company_url, position, value) VALUES (?, ?, ?)');
  const similar = sqlite.prepare(`INSERT INTO similar_companies (reference_url, filter_key, company_url, filters, rank, page,
    relevancy_score, relevancy_grade, first_seen_at, last_seen_at) VALUES (?, ?, ?, '{}', ?, 1, ?, ?, ?, ?)`);
  sqlite.transaction(() => {
    NASTY.forEach((value, i) => {
      company.run(`https://network.com/company/c${i}`, value, NASTY[(i + 3) % NASTY.length], value === null ? null : `+49${i}`,
        i % 2 === 0 ? i * 1000 : `${i} followers`, 9_007_199_254_740_991 - i, 1990 + i, i === 5 ? null : i * 10,
        i % 3 === 0 ? JSON.stringify({ rounds: i, note: value }) : null, T(1), T(1 + i));
      industry.run(`https://network.com/company/c${i}`, 1, value);
      similar.run('https://network.com/company/ref', 'f_none', `https://network.com/company/c${i}`, i + 1, 0.5 + i / 100, 'B', T(1), T(1 + i));
    });
  })();
  database.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Parses our CSV back, telling NULL (empty unquoted field) from '' (`""`). */
function parseCsv(text: string): { header: string[]; rows: (string | null)[][] } {
  const records = parse(text, {
    cast: (value, ctx) => (value === '' && !ctx.quoting ? null : value),
    relax_column_count: false,
  }) as (string | null)[][];
  const [header, ...rows] = records;
  return { header: header as string[], rows };
}

/** The rows as the database holds them, as CSV text would carry them. */
function dbRows(sql: string, params: unknown[] = []): { columns: string[]; rows: (string | null)[][] } {
  const database = openDatabase(db, { readonly: true });
  try {
    const stmt = database.sqlite.prepare(sql).raw(true);
    const columns = stmt.columns().map((c) => c.name);
    const rows = (stmt.all(...params) as unknown[][]).map((r) => r.map((v) => (v === null ? null : String(v))));
    return { columns, rows };
  } finally {
    database.close();
  }
}

function objects(sql: string, params: unknown[] = []): Record<string, unknown>[] {
  const database = openDatabase(db, { readonly: true });
  try {
    return database.sqlite.prepare(sql).all(...params) as Record<string, unknown>[];
  } finally {
    database.close();
  }
}

describe('export <table> as CSV', () => {
  it('round-trips every row and value through csv-parse (quotes, commas, line breaks, unicode, emoji, NULL vs empty)', async () => {
    const out = join(dir, 'companies.csv');
    const result = await exportTable({ db, table: 'companies', out });
    const expected = dbRows('SELECT * FROM companies ORDER BY rowid');
    expect(result.rows).toBe(NASTY.length);
    expect(result.columns).toEqual(expected.columns);
    const text = readFileSync(out, 'utf8');
    expect(text.charCodeAt(0)).not.toBe(0xfeff);
    const parsed = parseCsv(text);
    expect(parsed.header).toEqual(expected.columns);
    expect(parsed.rows).toEqual(expected.rows);
    // The row with a NULL name and the row with an empty name stay apart.
    const nameIndex = parsed.header.indexOf('name');
    expect(parsed.rows.map((r) => r[nameIndex])).toEqual(NASTY);
    expect(leftovers(dir)).toEqual([]);
  });

  it('quotes per RFC 4180: doubled quotes, quoted line breaks, plain fields left bare', async () => {
    const out = join(dir, 'quoting.csv');
    await exportSql({ db, out, sql: `SELECT 'say "hi"' AS a, 'x,y' AS b, 'l1' || char(10) || 'l2' AS c, 'bare' AS d, NULL AS e, '' AS f` });
    expect(readFileSync(out, 'utf8')).toBe('a,b,c,d,e,f\n"say ""hi""","x,y","l1\nl2",bare,,""\n');
  });

  it('exports every public table and view (header even when empty)', async () => {
    for (const source of exportSources()) {
      const stream = capture();
      const result = await exportTable({ db, table: source.name, stream });
      const parsed = parseCsv(stream.text());
      expect(parsed.header, source.name).toEqual(dbRows(`SELECT * FROM "${source.name}"`).columns);
      expect(parsed.rows.length, source.name).toBe(result.rows);
    }
    expect(exportSources().map((s) => s.name)).not.toContain('run_lock');
  });

  it('exports a view row for row', async () => {
    const stream = capture();
    await exportTable({ db, table: 'v_lookalikes', stream });
    expect(parseCsv(stream.text()).rows).toEqual(dbRows('SELECT * FROM v_lookalikes').rows);
  });
});

describe('export as JSON Lines', () => {
  it('writes one object per row equal to the database row (types kept, NULL as null)', async () => {
    const out = join(dir, 'companies.jsonl');
    await exportTable({ db, table: 'companies', out, format: 'jsonl' });
    const lines = readFileSync(out, 'utf8').split('\n');
    expect(lines.pop()).toBe('');
    expect(lines.map((l) => JSON.parse(l) as unknown)).toEqual(objects('SELECT * FROM companies ORDER BY rowid'));
  });

  it('keeps both values of repeated column names (suffix _2)', async () => {
    const stream = capture();
    await exportSql({ db, stream, format: 'jsonl', sql: `SELECT c.url, i.company_url AS url, i.value FROM companies c
      JOIN company_industries i ON i.company_url = c.url ORDER BY c.rowid LIMIT 1` });
    expect(JSON.parse(stream.text())).toEqual({ url: 'https://network.com/company/c0', url_2: 'https://network.com/company/c0', value: 'plain' });
  });
});

describe('--since', () => {
  it('keeps rows with updated_at at or after a date (midnight UTC)', async () => {
    const stream = capture();
    const result = await exportTable({ db, table: 'companies', since: '2026-11-05', stream });
    const expected = dbRows('SELECT * FROM companies WHERE updated_at >= ? ORDER BY rowid', ['2026-11-05T00:00:00.000Z']);
    expect(expected.rows.length).toBe(NASTY.length - 4);
    expect(result.rows).toBe(expected.rows.length);
    expect(parseCsv(stream.text()).rows).toEqual(expected.rows);
  });

  it('filters on last_seen_at where there is no updated_at, and takes date-times with offsets', async () => {
    const stream = capture();
    await exportTable({ db, table: 'similar_companies', since: '2026-11-08T12:00:00+02:00', stream });
    const expected = dbRows('SELECT * FROM similar_companies WHERE last_seen_at >= ? ORDER BY rowid', ['2026-11-08T10:00:00.000Z']);
    expect(expected.rows.length).toBeGreaterThan(0);
    expect(parseCsv(stream.text()).rows).toEqual(expected.rows);
  });

  it('refuses a bad date and a table without seen-at times, clearly', async () => {
    for (const bad of ['yesterday', '2026-02-30', '2026-11-01T25:00:00Z', '11/01/2026', '']) {
      await expect(exportTable({ db, table: 'companies', since: bad, stream: capture() })).rejects.toMatchObject({ code: 'BAD_SINCE' });
    }
    const err = await exportTable({ db, table: 'company_industries', since: '2026-11-01', stream: capture() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).code).toBe('SINCE_UNSUPPORTED');
    expect((err as Error).message).toMatch(/company_industries has no updated_at or last_seen_at.*companies/);
  });

  it('parses dates to the database format', () => {
    expect(parseSince('2026-11-01')).toBe('2026-11-01T00:00:00.000Z');
    expect(parseSince('2026-11-01T08:30Z')).toBe('2026-11-01T08:30:00.000Z');
    expect(parseSince('2026-11-01T08:30:15.5-0130')).toBe('2026-11-01T10:00:15.500Z');
    expect(parseSince('2024-02-29')).toBe('2024-02-29T00:00:00.000Z');
  });

  it("reads changes' --since dates by the same rule: a day that is not in the calendar is none", () => {
    expect(parseChangesSince('2026-11-01T08:30:15.5-0130')).toEqual({ at: '2026-11-01T10:00:15.500Z' });
    expect(parseChangesSince('2026-11-01 08:00')).toEqual({ at: '2026-11-01T08:00:00.000Z' });
    // Date would read it as 2026-03-02.
    expect(parseChangesSince('2026-02-30')).toBeNull();
    expect(parseChangesSince('7')).toEqual({ runId: 7 });
  });
});

describe('export --sql', () => {
  it('exports the rows of a SELECT with its column names', async () => {
    const stream = capture();
    const sql = `SELECT c.name, i.value AS industry, c.staff_total * 2 AS doubled FROM companies c
      JOIN company_industries i ON i.company_url = c.url WHERE c.staff_total > 20 ORDER BY c.url`;
    await exportSql({ db, sql, stream });
    const parsed = parseCsv(stream.text());
    const expected = dbRows(sql);
    expect(parsed.header).toEqual(['name', 'industry', 'doubled']);
    expect(parsed.rows).toEqual(expected.rows);
  });

  it('refuses statements that write', async () => {
    await expect(exportSql({ db, sql: 'DELETE FROM companies', stream: capture() })).rejects.toMatchObject({ code: 'QUERY_WRITE_REFUSED' });
    expect(objects('SELECT count(*) AS n FROM companies')[0]!.n).toBe(NASTY.length);
  });
});

describe('stdout and backpressure', () => {
  it('waits for a slow reader instead of buffering everything', async () => {
    const received: string[] = [];
    let buffered = 0;
    let maxBuffered = 0;
    let refusals = 0;
    const slow = new Writable({
      highWaterMark: 256,
      write(chunk: Buffer, _enc, done) {
        received.push(chunk.toString('utf8'));
        setTimeout(done, 1);
      },
    });
    const realWrite = slow.write.bind(slow);
    slow.write = ((chunk: string) => {
      buffered = slow.writableLength + Buffer.byteLength(chunk);
      maxBuffered = Math.max(maxBuffered, buffered);
      const ok = realWrite(chunk);
      if (!ok) refusals++;
      return ok;
    }) as typeof slow.write;
    const result = await exportSql({
      db,
      stream: slow,
      batchRows: 5,
      sql: 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000) SELECT i, printf(\'row %05d\', i) AS label FROM n',
    });
    expect(result.rows).toBe(2000);
    expect(refusals).toBeGreaterThan(10);
    // Never more than one batch beyond the high-water mark is queued.
    expect(maxBuffered).toBeLessThan(256 + 200);
    const parsed = parseCsv(received.join(''));
    expect(parsed.rows.length).toBe(2000);
    expect(parsed.rows[1999]).toEqual(['2000', 'row 02000']);
  });

  it('stops quietly when the reader goes away (EPIPE)', async () => {
    let writes = 0;
    const closing = new Writable({
      write(_chunk, _enc, done) {
        writes++;
        if (writes === 2) done(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
        else done();
      },
    });
    const result = await exportSql({ db, stream: closing, batchRows: 10, sql: 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) SELECT i FROM n' });
    expect(result.readerClosed).toBe(true);
    expect(result.rows).toBeLessThan(5000);
  });
});

describe('netingest export (CLI)', () => {
  function io() {
    return { stdout: capture(), stderr: capture() };
  }

  it('writes to --out and says so on stderr; exit 0', async () => {
    const streams = io();
    const out = join(dir, 'cli.csv');
    expect(await main(['export', 'companies', '--db', db, '--out', out], streams)).toBe(0);
    expect(parseCsv(readFileSync(out, 'utf8')).rows).toEqual(dbRows('SELECT * FROM companies ORDER BY rowid').rows);
    expect(streams.stderr.text()).toContain(`exported ${NASTY.length} rows to ${out}`);
  });

  it('writes to stdout by default, jsonl on request, and --sql', async () => {
    const streams = io();
    expect(await main(['export', '--db', db, '--format', 'jsonl', '--sql', 'SELECT url FROM companies ORDER BY url LIMIT 2'], streams)).toBe(0);
    expect(streams.stdout.text()).toBe('{"url":"https://network.com/company/c0"}\n{"url":"https://network.com/company/c1"}\n');
  });

  it('--bom starts the CSV with a UTF-8 byte-order mark (for Excel); with jsonl it is refused, exit 2', async () => {
    const out = join(dir, 'bom.csv');
    expect(await main(['export', 'companies', '--db', db, '--out', out, '--bom'], io())).toBe(0);
    const bytes = readFileSync(out);
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(parseCsv(bytes.subarray(3).toString('utf8')).rows).toEqual(dbRows('SELECT * FROM companies ORDER BY rowid').rows);
    const streams = io();
    expect(await main(['export', 'companies', '--db', db, '--format', 'jsonl', '--bom'], streams)).toBe(2);
    expect(streams.stderr.text()).toMatch(/--bom is for CSV only/);
    expect(streams.stdout.text()).toBe('');
  });

  it('an unknown table exits 2 and lists the tables and views', async () => {
    const streams = io();
    expect(await main(['export', 'compnies', '--db', db], streams)).toBe(2);
    const message = streams.stderr.text();
    expect(message).toMatch(/unknown table 'compnies'/);
    for (const name of ['companies', 'jobs', 'posts', 'similar_companies', 'v_lookalikes']) expect(message).toContain(name);
  });

  it('an unknown name close to a table or view suggests it (a view typo, case, a missing v_ or plural s)', async () => {
    const cases: Array<[string, string]> = [
      ['v_lookalike', 'v_lookalikes'],
      ['V_LOOKALIKES', 'v_lookalikes'],
      ['lookalikes', 'v_lookalikes'],
      ['job-progress', 'v_job_progress'],
      ['Companies', 'companies'],
      ['post', 'posts'],
    ];
    for (const [typed, meant] of cases) {
      const streams = io();
      expect(await main(['export', typed, '--db', db], streams)).toBe(2);
      expect(streams.stderr.text()).toContain(`unknown table '${typed}'; did you mean '${meant}'? Tables: `);
    }
    const far = io();
    expect(await main(['export', 'leads', '--db', db], far)).toBe(2);
    expect(far.stderr.text()).toContain(`unknown table 'leads'. Tables: `);
  });

  it('counts one row as "1 row" on stderr', async () => {
    const streams = io();
    const out = join(dir, 'one-row.csv');
    expect(await main(['export', '--sql', 'SELECT 1 AS n', '--db', db, '--out', out], streams)).toBe(0);
    expect(streams.stderr.text()).toBe(`netingest: exported 1 row to ${out}\n`);
  });

  it('a bad --since, --since with --sql, both or neither of table and --sql exit 2', async () => {
    expect(await main(['export', 'companies', '--db', db, '--since', 'soon'], io())).toBe(2);
    expect(await main(['export', '--db', db, '--sql', 'SELECT 1', '--since', '2026-01-01'], io())).toBe(2);
    expect(await main(['export', 'companies', '--db', db, '--sql', 'SELECT 1'], io())).toBe(2);
    expect(await main(['export', '--db', db], io())).toBe(2);
  });

  it('refuses an --out that is the database itself, and a database that does not exist (exit 2)', async () => {
    const streams = io();
    expect(await main(['export', 'companies', '--db', db, '--out', db], streams)).toBe(2);
    expect(streams.stderr.text()).toMatch(/is the database.*\[OUT_IS_INPUT\]/);
    expect(await main(['export', 'companies', '--db', db, '--out', `${db}-wal`], io())).toBe(2);
    expect(objects('SELECT count(*) AS n FROM companies')[0]!.n).toBe(NASTY.length);
    const missing = io();
    expect(await main(['export', 'companies', '--db', join(dir, 'nope.db')], missing)).toBe(2);
    expect(missing.stderr.text()).toMatch(/no database at .*nope\.db.*\[DB_NOT_FOUND\]/);
  });

  it('--sql failing on its first row writes nothing to stdout and leaves no --out file (exit 2)', async () => {
    const sql = "SELECT name, json('bad') AS j FROM companies";
    for (const format of ['csv', 'jsonl']) {
      const piped = io();
      expect(await main(['export', '--db', db, '--format', format, '--sql', sql], piped)).toBe(2);
      expect(piped.stdout.text(), format).toBe('');
      expect(piped.stderr.text()).toMatch(/SQL error: malformed JSON.*\[QUERY_INVALID\]/);
    }
    const folder = freshFolder(dir, 'failing-sql');
    expect(await main(['export', '--db', db, '--sql', sql, '--out', join(folder, 'out.csv')], io())).toBe(2);
    expect(readdirSync(folder)).toEqual([]);
  });

  it('--list names every exportable table and view', async () => {
    const streams = io();
    expect(await main(['export', '--list', '--db', db], streams)).toBe(0);
    expect(streams.stdout.text().split('\n').filter(Boolean).map((l) => l.split('\t')[0])).toEqual(exportSources().map((s) => s.name));
  });

  it('--list refuses what it would ignore (--out, a table, --sql), exit 2 and no file written', async () => {
    const folder = freshFolder(dir, 'list-out');
    const out = join(folder, 'tables.txt');
    const withOut = io();
    expect(await main(['export', '--list', '--db', db, '--out', out], withOut)).toBe(2);
    expect(withOut.stderr.text()).toContain(`--list only prints the names that can be exported, on stdout: leave out --out (to keep the list in a file: netingest export --list > ${out})`);
    expect(withOut.stdout.text()).toBe('');
    expect(readdirSync(folder)).toEqual([]);
    const withTable = io();
    expect(await main(['export', 'companies', '--list', '--sql', 'SELECT 1', '--db', db], withTable)).toBe(2);
    expect(withTable.stderr.text()).toMatch(/leave out the table \(companies\), --sql \[USAGE\]/);
  });

  it('has --help with examples', async () => {
    // yargs prints help and exits on its own: run the real executable.
    const help = execFileSync(process.execPath, [BIN, 'export', '--help'], { encoding: 'utf8' });
    expect(help).toMatch(/Examples:/);
    expect(help).toMatch(/--since/);
  });
});
