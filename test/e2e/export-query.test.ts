import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { openDatabase } from '../../src/store/open.ts';
import { runQuery, type QueryStream } from '../../src/export/query.ts';
import { prepareReadQuery, REPORTING_PRAGMAS } from '../../src/store/readers/read-only-sql.ts';
import { openUserStatement } from '../../src/store/readers/read-only-sql.ts';
import { displayWidth } from '../../src/text-width.ts';
import { WriteRefusedError } from '../../src/store/readers/query-errors.ts';
import { main } from '../../src/cli/main.ts';

let dir: string;
let db: string;
const SEEN = '2026-11-20T08:00:00.000Z';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-query-'));
  db = join(dir, 'data.db');
  const database = openDatabase(db);
  const insert = database.sqlite.prepare(`INSERT INTO posts (post_id, url, author_name, text_content, reactions, comments_count,
    first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
  insert.run('activity-1', 'https://network.com/posts/a-activity-1', 'Jane', 'short', 5, 1, SEEN, SEEN);
  insert.run('activity-2', 'https://network.com/posts/b-activity-2', '山田太郎', `two\nlines and a very long text ${'x'.repeat(200)}`, 1234567, 0, SEEN, SEEN);
  insert.run('activity-3', 'https://network.com/posts/c-activity-3', 'Émile 🚀', null, null, 3, SEEN, SEEN);
  database.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function capture(tty = false, columns?: number): QueryStream & PassThrough & { text: () => string; bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  const stream = new PassThrough();
  stream.on('data', (c: Buffer) => chunks.push(c));
  return Object.assign(stream, { isTTY: tty, columns, text: () => Buffer.concat(chunks).toString('utf8'), bytes: () => Buffer.concat(chunks) });
}

function snapshot(): unknown {
  const database = openDatabase(db, { readonly: true });
  try {
    return {
      posts: database.sqlite.prepare('SELECT * FROM posts ORDER BY post_id').all(),
      schema: database.sqlite.prepare('SELECT type, name, sql FROM sqlite_master ORDER BY name').all(),
      userVersion: database.sqlite.pragma('user_version', { simple: true }),
      journal: database.sqlite.pragma('journal_mode', { simple: true }),
    };
  } finally {
    database.close();
  }
}

describe('query refuses anything that writes', () => {
  const writes = [
    `INSERT INTO posts (post_id, url, first_seen_at, updated_at) VALUES ('x', 'y', 'z', 'z')`,
    `UPDATE posts SET reactions = 0`,
    `DELETE FROM posts`,
    `REPLACE INTO netingest_meta (key, value) VALUES ('a', 'b')`,
    `DROP TABLE posts`,
    `DROP VIEW v_lookalikes`,
    `CREATE TABLE t (a)`,
    `CREATE TEMP TABLE t (a)`,
    `ALTER TABLE posts ADD COLUMN x`,
    `ATTACH DATABASE '${join(tmpdir(), 'netingest-attached.db')}' AS other`,
    `ATTACH ':memory:' AS m`,
    `DETACH DATABASE main`,
    `PRAGMA user_version = 7`,
    `PRAGMA main.user_version = 7`,
    `PRAGMA journal_mode = DELETE`,
    `PRAGMA journal_mode(DELETE)`,
    `PRAGMA query_only = OFF`,
    `PRAGMA foreign_keys = OFF`,
    `PRAGMA optimize`,
    `PRAGMA wal_checkpoint(TRUNCATE)`,
    `VACUUM`,
    `VACUUM INTO '${join(tmpdir(), 'netingest-vacuum.db')}'`,
    `REINDEX`,
    `ANALYZE`,
    `BEGIN IMMEDIATE`,
    `SAVEPOINT s`,
    `  -- a comment first\n  /* and another */ DELETE FROM posts`,
    `WITH doomed AS (SELECT post_id FROM posts) DELETE FROM posts WHERE post_id IN (SELECT post_id FROM doomed)`,
    `WITH x AS (SELECT 1) INSERT INTO netingest_meta (key, value) SELECT 'k', 'v' FROM x`,
  ];

  it.each(writes)('refuses %s and leaves the database as it was', async (sql) => {
    const before = snapshot();
    const err = await runQuery({ db, sql, stream: capture() }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WriteRefusedError);
    expect((err as WriteRefusedError).code).toBe('QUERY_WRITE_REFUSED');
    expect((err as Error).message).toMatch(/^refused: .*read-only/);
    expect(snapshot()).toEqual(before);
  });

  it('checks better-sqlite3 stmt.readonly too, not only the first keyword', () => {
    const database = openDatabase(db, { readonly: true });
    try {
      expect(() => prepareReadQuery(database.sqlite, 'WITH x AS (SELECT 1) UPDATE posts SET reactions = 1')).toThrow(/this statement writes/);
    } finally {
      database.close();
    }
  });

  it('runs on a read-only connection with query_only on (the last lock)', async () => {
    const stream = capture();
    await runQuery({ db, sql: 'PRAGMA query_only', stream, format: 'csv' });
    expect(stream.text()).toBe('query_only\n1\n');
  });

  it('exits 2 with the reason from the CLI', async () => {
    const stderr = capture();
    expect(await main(['query', 'DROP TABLE posts', '--db', db], { stdout: capture(), stderr })).toBe(2);
    expect(stderr.text()).toMatch(/refused: DROP statements are not run here.*\[QUERY_WRITE_REFUSED\]/);
  });
});

describe('a first word that starts no SQL statement', () => {
  it('is invalid SQL with SQLite\'s syntax error (QUERY_INVALID), while every writing keyword stays refused', async () => {
    for (const sql of ['SELEC 1', 'FOO bar', '  -- a comment\n selct * from posts', '(SELECT 1)']) {
      const err = await runQuery({ db, sql, stream: capture() }).catch((e: unknown) => e);
      expect(err, sql).toMatchObject({ code: 'QUERY_INVALID', message: expect.stringMatching(/^SQL error: near .*syntax error/) as unknown });
    }
    for (const sql of ['COMMIT', 'END', 'ROLLBACK', 'RELEASE s', 'REINDEX posts', 'ANALYZE', 'INSERT INTO posts DEFAULT VALUES']) {
      await expect(runQuery({ db, sql, stream: capture() }), sql).rejects.toMatchObject({ code: 'QUERY_WRITE_REFUSED' });
    }
  });

  it('the CLI reports it as bad SQL, not as a refused write (exit 2)', async () => {
    const stderr = capture();
    expect(await main(['query', 'SELEC 1', '--db', db], { stdout: capture(), stderr })).toBe(2);
    expect(stderr.text()).toBe('netingest: SQL error: near "SELEC": syntax error [QUERY_INVALID]\n');
  });
});

describe('a statement that fails while it runs', () => {
  it('writes nothing to stdout when it fails in its first rows: no lone header for a cron `> out.csv` (exit 2)', async () => {
    // Every format with a failure after two good rows (held back with the header); the failure on the first
    // row once (each query is a child process: ~1 s here with the CPU busy). No --format on a pipe is CSV, the
    // first case's path.
    const afterTwoRows = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) SELECT CASE WHEN i < 3 THEN i ELSE json('bad') END AS v FROM n";
    const cases = [
      ["SELECT json('bad') AS j", []],
      ...[['--format', 'csv'], ['--format', 'jsonl'], ['--format', 'table']].map((format) => [afterTwoRows, format] as const),
    ] as const;
    for (const [sql, format] of cases) {
      const stdout = capture(false);
      const stderr = capture();
      expect(await main(['query', sql, '--db', db, ...format], { stdout, stderr })).toBe(2);
      expect(stdout.text(), `${sql} ${format.join(' ')}`).toBe('');
      expect(stderr.text()).toMatch(/SQL error: malformed JSON.*\[QUERY_INVALID\]/);
    }
  });
});

describe('query runs reads', () => {
  it.each([
    ['SELECT count(*) AS n FROM posts', 'n\n3\n'],
    ['WITH t AS (SELECT reactions FROM posts WHERE post_id = \'activity-1\') SELECT reactions FROM t', 'reactions\n5\n'],
    ['VALUES (1, \'a\'), (2, NULL)', 'column1,column2\n1,a\n2,\n'],
    ['PRAGMA user_version', 'user_version\n0\n'],
    ['SELECT 1 AS one;', 'one\n1\n'],
  ])('%s', async (sql, expected) => {
    const stream = capture();
    await runQuery({ db, sql, stream });
    expect(stream.text()).toBe(expected);
  });

  it('every PRAGMA on the reporting list runs (none is listed only to be refused)', async () => {
    // The statement child's own path (openUserStatement) in this process: a child per PRAGMA took ~12 s.
    for (const name of REPORTING_PRAGMAS) {
      const run = () => {
        const statement = openUserStatement(db, `PRAGMA ${name}`);
        try {
          while (!statement.rows.next().done);
        } finally {
          statement.close();
        }
      };
      expect(run, `PRAGMA ${name}`).not.toThrow();
    }
    // And one through runQuery's child, end to end.
    await runQuery({ db, sql: 'PRAGMA table_info(posts)', stream: capture(), format: 'csv' });
  });

  it('PRAGMA journal_mode is refused as a write (SQLite prepares it as one); its table-valued form reads it', async () => {
    await expect(runQuery({ db, sql: 'PRAGMA journal_mode', stream: capture() })).rejects.toMatchObject({
      code: 'QUERY_WRITE_REFUSED',
    });
    const stream = capture();
    await runQuery({ db, sql: 'SELECT * FROM pragma_journal_mode', stream, format: 'csv' });
    expect(stream.text()).toMatch(/^journal_mode\n\w+\n$/);
  });

  it('reports bad SQL as a usage error naming the problem', async () => {
    await expect(runQuery({ db, sql: 'SELECT nope FROM posts', stream: capture() })).rejects.toMatchObject({
      code: 'QUERY_INVALID',
      message: expect.stringMatching(/no such column: nope/) as unknown,
    });
    await expect(runQuery({ db, sql: 'SELECT 1; SELECT 2', stream: capture() })).rejects.toMatchObject({ code: 'QUERY_INVALID' });
    await expect(runQuery({ db, sql: '  ', stream: capture() })).rejects.toMatchObject({ code: 'QUERY_INVALID' });
    expect(await main(['query', 'SELEC 1', '--db', db], { stdout: capture(), stderr: capture() })).toBe(2);
  });

  it('a statement that opens with a -- comment (a report file) is run, by query and export --sql alike', async () => {
    const sql = '-- posts per author\nSELECT count(*) AS n FROM posts';
    const stdout = capture();
    const stderr = capture();
    expect(await main(['query', sql, '--db', db, '--format', 'csv'], { stdout, stderr })).toBe(0);
    expect(stdout.text()).toBe('n\n3\n');
    const exported = capture();
    expect(await main(['export', '--sql', sql, '--db', db], { stdout: exported, stderr: capture() })).toBe(0);
    expect(exported.text()).toBe('n\n3\n');
  });

  it('refuses parameters (?, :name, $n), which nothing on the command line fills: exit 2, not an internal error', async () => {
    for (const sql of ['SELECT * FROM posts WHERE post_id = ?', 'SELECT :id', 'SELECT $1']) {
      await expect(runQuery({ db, sql, stream: capture() }), sql).rejects.toMatchObject({
        code: 'QUERY_INVALID',
        message: expect.stringMatching(/parameter/) as unknown,
      });
      const stderr = capture();
      expect(await main(['query', sql, '--db', db], { stdout: capture(), stderr }), sql).toBe(2);
      expect(stderr.text()).toMatch(/\[QUERY_INVALID\]/);
      expect(await main(['export', '--sql', sql, '--db', db], { stdout: capture(), stderr: capture() }), sql).toBe(2);
    }
  });
});

describe('query --bom', () => {
  const sql = 'SELECT post_id, author_name FROM posts ORDER BY post_id';
  const run = async (args: string[], stdout = capture()) => {
    const stderr = capture();
    return { code: await main(['query', sql, '--db', db, ...args], { stdout, stderr }), stdout: stdout.bytes(), stderr: stderr.text() };
  };

  it('starts the CSV with a UTF-8 byte-order mark, the rest byte for byte as without it (piped or --format csv)', async () => {
    const plain = await run([]);
    expect(plain.code).toBe(0);
    expect(plain.stdout.toString('utf8')).toContain('山田太郎');
    for (const [args, stdout] of [[['--bom'], capture()], [['--bom', '--format', 'csv'], capture(true, 100)]] as const) {
      const marked = await run([...args], stdout);
      expect(marked.code, marked.stderr).toBe(0);
      expect([...marked.stdout.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
      expect(marked.stdout.subarray(3).equals(plain.stdout)).toBe(true);
    }
  });

  it('is refused with an explicit table or jsonl format: exit 2, nothing written; the default table on a terminal has none', async () => {
    for (const format of ['table', 'jsonl']) {
      const refused = await run(['--bom', '--format', format], capture(true, 100));
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/--bom is for CSV only/);
      expect(refused.stdout.length).toBe(0);
    }
    const tty = await run(['--bom'], capture(true, 100));
    expect(tty.code).toBe(0);
    expect(tty.stdout.toString('utf8')).toMatch(/^post_id +\| author_name\n/);
  });
});

// Each query is a child process (~0.2 s of CPU): the format a query prints in and the integers it keeps whole
// are checked on the same queries.
describe('the format, and integers beyond 2^53', () => {
  it('CSV when not on a terminal, a table on one, what --format says; every digit kept in each, and NULL shown as such', async () => {
    const sql = 'SELECT 9007199254740993 AS big, -9223372036854775808 AS min, 42 AS small, 1.5 AS real, NULL AS none';
    const csv = capture(false);
    expect(await main(['query', sql, '--db', db], { stdout: csv, stderr: capture() })).toBe(0);
    expect(parse(csv.text())).toEqual([['big', 'min', 'small', 'real', 'none'], ['9007199254740993', '-9223372036854775808', '42', '1.5', '']]);

    const jsonl = capture(true);
    expect(await main(['query', sql, '--db', db, '--format', 'jsonl'], { stdout: jsonl, stderr: capture() })).toBe(0);
    expect(jsonl.text()).toBe('{"big":9007199254740993,"min":-9223372036854775808,"small":42,"real":1.5,"none":null}\n');

    const tty = capture(true, 100);
    expect(await main(['query', sql, '--db', db], { stdout: tty, stderr: capture() })).toBe(0);
    expect(tty.text()).toMatch(/^big +\| min +\| small \| real \| none\n-+-\+-/);
    expect(tty.text().split('\n')[2]).toMatch(/^9007199254740993 \| -9223372036854775808 \| +42 \| +1\.5 \| NULL$/);

    const out = join(dir, 'big.csv');
    expect(await main(['export', '--sql', sql, '--db', db, '--out', out], { stdout: capture(), stderr: capture() })).toBe(0);
    expect(parse(readFileSync(out, 'utf8'))[1]).toEqual(['9007199254740993', '-9223372036854775808', '42', '1.5', '']);
  });
});

describe('table format', () => {
  async function table(sql: string, options: { columns?: number; maxColumnWidth?: number; sampleRows?: number } = {}): Promise<string[]> {
    const stream = capture(true, options.columns);
    await runQuery({ db, sql, stream, format: 'table', maxColumnWidth: options.maxColumnWidth, sampleRows: options.sampleRows });
    return stream.text().split('\n').slice(0, -1);
  }

  it('aligns columns by display width (CJK and emoji count two), shows NULL, right-aligns numbers, counts rows', async () => {
    const lines = await table('SELECT post_id, author_name, reactions, text_content FROM posts ORDER BY post_id');
    expect(lines.at(-1)).toBe('(3 rows)');
    const body = lines.slice(0, -1);
    // Every separator sits at the same display column on every line.
    const bars = (line: string) => {
      const cols: number[] = [];
      let width = 0;
      for (const ch of line) {
        if (ch === '|' || ch === '+') cols.push(width);
        width += displayWidth(ch);
      }
      return cols;
    };
    for (const line of body) expect(bars(line)).toEqual(bars(body[0]!));
    expect(body[2]).toMatch(/^activity-1 \| Jane +\| +5 \| short$/);
    expect(body[3]).toContain('山田太郎');
    expect(body[3]).toMatch(/\| +1234567 \|/);
    expect(body[3]).toContain('two↵lines');
    expect(body[4]).toMatch(/Émile 🚀 +\| NULL +\| NULL$/);
  });

  it('caps each column and cuts long values with …', async () => {
    const lines = await table("SELECT text_content FROM posts WHERE post_id = 'activity-2'", { maxColumnWidth: 20 });
    expect(lines[0]!.trimEnd()).toBe('text_content');
    expect(lines[1]).toBe('-'.repeat(20));
    expect(lines[2]).toBe('two↵lines and a ver…');
  });

  it('shrinks the widest columns to fit the terminal', async () => {
    const lines = await table('SELECT url, author_name, text_content FROM posts ORDER BY post_id', { columns: 60 });
    for (const line of lines) expect(displayWidth(line)).toBeLessThanOrEqual(60);
    expect(lines[2]).toContain('…');
  });

  it('streams beyond the sample rows with the same widths', async () => {
    const sql = 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 500) SELECT i, printf(\'%.*c\', i % 30 + 1, \'x\') AS s FROM n';
    const lines = await table(sql, { sampleRows: 10 });
    expect(lines.at(-1)).toBe('(500 rows)');
    // Widths come from rows 1-10: later text is cut to them, a wider number overflows rather than being cut.
    expect(lines[1]).toBe('---+------------');
    for (const line of lines.slice(2, 101)) expect(displayWidth(line)).toBeLessThanOrEqual(lines[1]!.length);
    expect(lines[30]).toBe('29 | xxxxxxxxxx…');
    expect(lines[300]).toBe('299 | xxxxxxxxxx…');
  });

  it('prints the header and (0 rows) for an empty result', async () => {
    expect(await table('SELECT post_id FROM posts WHERE 0')).toEqual(['post_id', '-------', '(0 rows)']);
  });
});
