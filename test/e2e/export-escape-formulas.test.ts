import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/open.ts';
import { capture } from './export-helpers.ts';
import { exportTable } from '../../src/export/export-table.ts';
import { runQuery } from '../../src/export/query.ts';
import { loadJob } from '../../src/jobs/load.ts';
import { planTasks } from '../../src/jobs/plan-tasks.ts';
import { main } from '../../src/cli/main.ts';

const T = '2026-11-01T10:00:00.000Z';
/**
 * Each stored name, then its CSV field as written today and as written with --escape-formulas, by hand: the
 * expectations must not come from the code under test.
 */
const NAMES: [string | null, string, string][] = [
  ['=HYPERLINK("http://x","y")', '"=HYPERLINK(""http://x"",""y"")"', `"'=HYPERLINK(""http://x"",""y"")"`],
  ['+1', '+1', "'+1"],
  ['-2', '-2', "'-2"],
  ['@SUM(A1)', '@SUM(A1)', "'@SUM(A1)"],
  ['\ttab first', '\ttab first', "'\ttab first"],
  ['\rcr first', '"\rcr first"', `"'\rcr first"`],
  ['Acme, Inc', '"Acme, Inc"', '"Acme, Inc"'],
  ['plain', 'plain', 'plain'],
  ['a=b-c', 'a=b-c', 'a=b-c'],
  // A spreadsheet skips leading blanks before it looks for a formula: space, NBSP, byte-order mark, line break.
  [' =1+2', ' =1+2', "' =1+2"],
  ['\u00a0+1', '\u00a0+1', "'\u00a0+1"],
  ['\ufeff@SUM(A1)', '\ufeff@SUM(A1)', "'\ufeff@SUM(A1)"],
  ['\n=cmd', '"\n=cmd"', `"'\n=cmd"`],
  [' \r\n -3', '" \r\n -3"', `"' \r\n -3"`],
  ['  spaced', '  spaced', '  spaced'],
  ['', '""', '""'],
  [null, '', ''],
];
const ROWS = 3_000;
/** Small chunks and no size threshold, so the rows go through many chunks on two workers. */
const PARALLEL = { workers: 2, minRowidSpan: 1, chunkRowids: 97, maxChunksInFlight: 3 } as const;
const SINGLE = { workers: 1 } as const;
/** A negative number stays a number: csv-stringify escapes a leading `-` of text only. */
const staff = (i: number) => (i % 2 === 1 ? -i : i);
const year = (i: number) => (i % 3 === 0 ? -1.5 : null);

let dir: string;
let db: string;
let columns: string[];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-escape-'));
  db = join(dir, 'data.db');
  const database = openDatabase(db);
  const insert = database.sqlite.prepare(`INSERT INTO companies (url, name, description, founded_year, staff_total, first_seen_at,
    updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`);
  database.sqlite.transaction(() => {
    for (let i = 0; i < ROWS; i++) insert.run(`https://www.network.com/company/c${i}`, NAMES[i % NAMES.length]![0], `about ${i}`, year(i), staff(i), T, T);
  })();
  columns = (database.sqlite.prepare('SELECT * FROM companies').columns() as { name: string }[]).map((c) => c.name);
  database.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The whole table export, built by hand: 1 with the fields as written today, 2 with them escaped. */
function expectedTable(which: 1 | 2): string {
  let out = columns.join(',') + '\n';
  for (let i = 0; i < ROWS; i++) {
    const cells: Record<string, string> = {
      url: `https://www.network.com/company/c${i}`,
      name: NAMES[i % NAMES.length]![which],
      description: `about ${i}`,
      founded_year: year(i) === null ? '' : '-1.5',
      staff_total: String(staff(i)),
      first_seen_at: T,
      updated_at: T,
    };
    out += columns.map((c) => cells[c] ?? '').join(',') + '\n';
  }
  return out;
}

/** The first rows of `SELECT name, staff_total`, built by hand. */
function expectedNames(which: 1 | 2): string {
  return 'name,staff_total\n' + NAMES.map((n, i) => `${n[which]},${staff(i)}\n`).join('');
}

const io = () => ({ stdout: capture(), stderr: capture() });
const NAMES_SQL = `SELECT name, staff_total FROM companies ORDER BY rowid LIMIT ${NAMES.length}`;

describe('--escape-formulas', () => {
  it('export (main thread, CLI): a quote before each dangerous text field, numbers and the rest as before', async () => {
    const plain = join(dir, 'plain.csv');
    const escaped = join(dir, 'escaped.csv');
    expect(await main(['export', 'companies', '--db', db, '--out', plain], io())).toBe(0);
    expect(await main(['export', 'companies', '--db', db, '--out', escaped, '--escape-formulas'], io())).toBe(0);
    expect(readFileSync(plain, 'utf8')).toBe(expectedTable(1));
    expect(readFileSync(escaped, 'utf8')).toBe(expectedTable(2));
  });

  it('export on the worker threads escapes the same way (and not without the option)', async () => {
    const escaped = capture();
    const plain = capture();
    const a = await exportTable({ db, table: 'companies', stream: escaped, escapeFormulas: true, parallel: PARALLEL });
    const b = await exportTable({ db, table: 'companies', stream: plain, parallel: PARALLEL });
    expect([a.workers, b.workers]).toEqual([2, 2]);
    expect(escaped.text()).toBe(expectedTable(2));
    expect(plain.text()).toBe(expectedTable(1));
    const single = capture();
    await exportTable({ db, table: 'companies', stream: single, escapeFormulas: true, bom: true, parallel: SINGLE });
    expect(single.text()).toBe(`\uFEFF${expectedTable(2)}`);
  });

  it('export --sql and query as CSV (integers read as bigint stay unescaped too)', async () => {
    for (const args of [['export', '--sql', NAMES_SQL], ['query', NAMES_SQL, '--format', 'csv']]) {
      const plain = io();
      const escaped = io();
      expect(await main([...args, '--db', db], plain)).toBe(0);
      expect(await main([...args, '--db', db, '--escape-formulas'], escaped)).toBe(0);
      expect(plain.stdout.text()).toBe(expectedNames(1));
      expect(escaped.stdout.text()).toBe(expectedNames(2));
    }
  });

  it('query on a terminal: the table shows values as stored, the option has nothing to escape there', async () => {
    const stream = Object.assign(capture(), { isTTY: true, columns: 120 });
    await runQuery({ db, sql: NAMES_SQL, stream, escapeFormulas: true });
    expect(stream.text()).toContain('=HYPERLINK("http://x","y")');
    expect(stream.text()).not.toContain("'=");
  });

  it('is refused with JSON Lines (export, query, enrich) and with an explicit table format: exit 2, nothing written', async () => {
    const cases = [
      [['export', 'companies', '--format', 'jsonl'], /--escape-formulas is for CSV only/],
      [['export', '--sql', NAMES_SQL, '--format', 'jsonl'], /--escape-formulas is for CSV only/],
      [['query', NAMES_SQL, '--format', 'jsonl'], /--escape-formulas is for CSV only/],
      [['query', NAMES_SQL, '--format', 'table'], /--escape-formulas is for CSV only; the table format/],
    ] as const;
    for (const [args, message] of cases) {
      const streams = io();
      expect(await main([...args, '--db', db, '--escape-formulas'], streams)).toBe(2);
      expect(streams.stderr.text()).toMatch(message);
      expect(streams.stdout.text()).toBe('');
    }
    const job = await postJob();
    const out = join(dir, 'refused.jsonl');
    const streams = io();
    expect(await main(['enrich', job, '--db', db, '--out', out, '--format', 'jsonl', '--escape-formulas'], streams)).toBe(2);
    expect(streams.stderr.text()).toMatch(/--escape-formulas is for CSV only/);
    expect(existsSync(out)).toBe(false);
  });

  it('enrich: input columns and API values escaped, numbers and everything else byte for byte as without it', async () => {
    const job = await postJob();
    const plain = join(dir, 'enriched.csv');
    const escaped = join(dir, 'enriched-escaped.csv');
    expect(await main(['enrich', job, '--db', db, '--out', plain], io())).toBe(0);
    expect(await main(['enrich', job, '--db', db, '--out', escaped, '--escape-formulas'], io())).toBe(0);
    const row = (note: string, author: string, headline: string, text: string) =>
      `${note},${POST},2,ok,,${POST},activity-1,${author},${headline},,21-11-2026,${text},-7,3,0,,"",,${T}\n`;
    expect(readFileSync(plain, 'utf8')).toBe(
      ENRICH_HEADER + row('"=HYPERLINK(""http://x"",""y"")"', '@jane', '+49 30 1234', '"-1 ok, really"'),
    );
    expect(readFileSync(escaped, 'utf8')).toBe(
      ENRICH_HEADER + row(`"'=HYPERLINK(""http://x"",""y"")"`, "'@jane", "'+49 30 1234", `"'-1 ok, really"`),
    );
  });
});

const POST = 'https://www.network.com/posts/someone_activity-1';
const ENRICH_HEADER =
  'note,post_url,netingest_line,netingest_status,netingest_error,netingest_input_key,post_id,post_author_name,' +
  'post_author_headline,post_author_url,post_timestamp,post_text,post_reactions,post_comments,post_media_count,' +
  'post_media_urls,post_media_description,post_hashtags,post_last_seen_at\n';
let postJobFile: string | undefined;

/** A post-details job over one post the dataset holds, whose text and author come "from the API". */
async function postJob(): Promise<string> {
  if (postJobFile !== undefined) return postJobFile;
  writeFileSync(join(dir, 'posts.csv'), `note,post_url\n"=HYPERLINK(""http://x"",""y"")",${POST}\n`);
  const file = join(dir, 'posts.json');
  writeFileSync(file, JSON.stringify({ name: 'posts', operation: 'post-details', input: { csv: join(dir, 'posts.csv'), column: 'post_url' } }));
  const requests: string[] = [];
  for await (const item of planTasks(await loadJob(file))) if (item.kind === 'task') requests.push(JSON.stringify(item.request));
  const database = openDatabase(db);
  database.sqlite
    .prepare(`INSERT INTO posts (post_id, url, author_name, author_headline, posted_raw, text_content, media_description, reactions,
      comments_count, first_seen_at, updated_at) VALUES ('activity-1', ?, '@jane', '+49 30 1234', '21-11-2026', '-1 ok, really', '', -7, 3, ?, ?)`)
    .run(POST, T, T);
  database.sqlite
    .prepare(`INSERT INTO tasks (job, operation, input_key, page, request_json, status, attempts, created_at, updated_at)
      VALUES ('posts', 'post-details', ?, 1, ?, 'done', 1, ?, ?)`)
    .run(POST, requests[0], T, T);
  database.close();
  postJobFile = file;
  return file;
}
