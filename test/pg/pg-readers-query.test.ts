/**
 * `query` on PostgreSQL: the same output as on SQLite for the same data (a sandbox run, then `netingest copy`),
 * a write refused (by the statement's first word, and by the server's READ ONLY transaction for one hidden in a
 * WITH), `--timeout` ending a long statement with exit 124 and SIGINT with 130, the statement cancelled on the
 * server in both cases.
 */
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { inProcess, spawnCli } from '../support/run-helpers.ts';
import { waitFor as waitForPg } from './coordination-fixtures.ts';
import { docsAnalystUrl } from './analyst-role.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { SAME_ON_BOTH, useReadDataset } from './read-dataset.ts';

describe.skipIf(!pgClusterUrl)(`query on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  const ds = useReadDataset('query', ['lookalikes.json']);

  it('prints the same table, CSV and JSON Lines as on SQLite', async () => {
    // JSON Lines prints each value's type with its text: every statement is compared in it. The table and CSV print
    // those values with the formatters both engines share: compared on the statements with names, NULLs, counts,
    // sums, timestamps and fractions (companies, runs), not again on the task counts and the view (one statement
    // child fewer each on SQLite: ~0.2 s of CPU).
    for (const [i, sql] of SAME_ON_BOTH.entries()) {
      for (const format of i === 0 || i === SAME_ON_BOTH.length - 1 ? ['table', 'csv', 'jsonl'] : ['jsonl']) {
        const lite = await inProcess(['query', sql, '--db', ds.data.file, '--format', format]);
        const onPg = await inProcess(['query', sql, '--db', ds.data.url, '--format', format]);
        expect(onPg.stderr, sql).toBe('');
        expect(onPg.code).toBe(0);
        expect(lite.stdout.trim().split('\n').length, sql).toBeGreaterThan(format === 'jsonl' ? 0 : 1);
        expect(onPg.stdout, `${sql} (${format})`).toBe(lite.stdout);
      }
    }
  });

  it('refuses a write: by its first word as on SQLite, and by the READ ONLY transaction when hidden in a WITH', async () => {
    const before = (await ds.client.query('SELECT count(*)::int AS n FROM companies')).rows[0].n as number;
    expect(before).toBeGreaterThan(0);
    const lite = await inProcess(['query', 'DELETE FROM companies', '--db', ds.data.file]);
    const onPg = await inProcess(['query', 'DELETE FROM companies', '--db', ds.data.url]);
    expect(onPg.code).toBe(2);
    expect(onPg.code).toBe(lite.code);
    expect(onPg.stderr).toMatch(/refused: DELETE statements are not run here \(read-only/);
    for (const sql of [
      'WITH gone AS (DELETE FROM companies RETURNING url) SELECT count(*) FROM gone',
      "SELECT nextval(pg_get_serial_sequence('runs', 'id'))",
      'EXPLAIN ANALYZE DELETE FROM companies',
    ]) {
      const hidden = await inProcess(['query', sql, '--db', ds.data.url]);
      expect(hidden.code, sql).toBe(2);
      expect(hidden.stderr, sql).toMatch(/refused: this statement writes to the database \(read-only.*read-only transaction/);
    }
    expect((await ds.client.query('SELECT count(*)::int AS n FROM companies')).rows[0].n).toBe(before);
    const bad = await inProcess(['query', 'SELECT nope FROM companies', '--db', ds.data.url]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/SQL error: column "nope" does not exist/);
  });

  it("runs as docs/postgres.md's read-only analyst role, which can write nothing", async () => {
    const asAnalyst = await docsAnalystUrl(ds.client, ds.data.url);
    const sql = SAME_ON_BOTH[1]!;
    const onPg = await inProcess(['query', sql, '--db', asAnalyst, '--format', 'csv']);
    expect(onPg.stderr).toBe('');
    expect(onPg.stdout).toBe((await inProcess(['query', sql, '--db', ds.data.file, '--format', 'csv'])).stdout);
    for (const command of [['status'], ['export', 'runs']]) {
      const read = await inProcess([...command, '--db', asAnalyst]);
      expect(read.stderr, command[0]).toBe('');
      expect(read.code, command[0]).toBe(0);
    }
  });

  /** `export --sql` of `sql` to `file` by a CLI whose heap is `heapMb`: it exports `rows` rows and exits 0; its path. */
  async function exportWithHeap(sql: string, file: string, heapMb: number, rows: number): Promise<string> {
    const out = `${ds.data.ws.dir}/${file}`;
    const ended = await spawnCli(['export', '--sql', sql, '--db', ds.data.url, '--out', out], {
      cwd: ds.data.ws.dir,
      env: { NODE_OPTIONS: `--max-old-space-size=${heapMb}` },
    }).done;
    expect(ended.stderr).toBe(`netingest: exported ${rows} rows to ${out}\n`);
    expect(ended.code).toBe(0);
    return out;
  }

  it('streams a result larger than its heap: 120 MB of rows through a CLI limited to 64 MB', async () => {
    // Each row once raced against a promise pending for the whole statement, which kept every row reachable: a
    // million-row export or `changes` took over 1 GB. Rows held here would exhaust the heap (exit 134).
    const out = await exportWithHeap("SELECT i, repeat('x', 1200) AS pad FROM generate_series(1, 100000) AS i", 'large.csv', 64, 100000);
    expect(statSync(out).size).toBeGreaterThan(120_000_000);
    rmSync(out);
  }, 60_000);

  it('streams wide rows full of quotes (raw bodies) through a CLI limited to 48 MB, every row once', async () => {
    // 17 KB of JSON with ~2,700 quotes a row, as a raw body on PostgreSQL is. The CSV quoting once built each field of
    // two string pieces per quote and the cursor fetched 1000 such rows at once: past 64 MB (exit 134), and 10x slower.
    // 2,011 rows: the first fetch, then the narrower ones by width, the last partly filled.
    const body = `{"content":[${Array.from({ length: 340 }, (_, i) => `{"url":"https://example.com/c/${i}","name":"C ${i}"}`).join(',')}]}`;
    const out = await exportWithHeap(`SELECT i, $q$${body}$q$ || i AS body FROM generate_series(1, 2011) AS i`, 'bodies.csv', 48, 2011);
    const lines = readFileSync(out, 'utf8').split('\n');
    expect(lines.length).toBe(2013);
    expect(lines[2011]).toBe(`2011,"${body.replaceAll('"', '""')}2011"`);
    expect(lines.slice(1, -1).map((line) => Number(line.slice(0, line.indexOf(','))))).toEqual(Array.from({ length: 2011 }, (_, i) => i + 1));
    rmSync(out);
  }, 60_000);

  it('--timeout 1 stops SELECT pg_sleep(60) with exit 124, and the server stops it too', async () => {
    const cli = spawnCli(['query', 'SELECT pg_sleep(60) AS slept', '--db', ds.data.url, '--timeout', '1'], { cwd: ds.data.ws.dir });
    const started = Date.now();
    const ended = await cli.done;
    expect(ended.code).toBe(124);
    expect(ended.stderr).toMatch(/ran for more than 1 s \(--timeout\) and was stopped/);
    expect(ended.stdout).toBe('');
    // Far under the 60 s statement: a CLI that waited for it would take a minute (8 s here was met at load 18).
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(await sleepers('pg_sleep(60)')).toBe(0);
  }, 45_000);

  it('export --sql --timeout 1 stops the same way and leaves nothing at --out', async () => {
    // The CLI's code in this process: query's exit 124 above is the spawned process's.
    const out = `${ds.data.ws.dir}/slept.csv`;
    const ended = await inProcess(['export', '--sql', 'SELECT pg_sleep(10) AS slept', '--db', ds.data.url, '--timeout', '1', '--out', out], {}, { cwd: ds.data.ws.dir });
    expect(ended.code).toBe(124);
    expect(ended.stderr).toMatch(/ran for more than 1 s \(--timeout\) and was stopped/);
    expect(existsSync(out)).toBe(false);
    expect(await sleepers('pg_sleep(10)')).toBe(0);
  }, 30_000);

  it('SIGINT cancels the running statement on the server and exits 130', async () => {
    const cli = spawnCli(['query', 'SELECT pg_sleep(30) AS slept', '--db', ds.data.url], { cwd: ds.data.ws.dir });
    await waitForPg(async () => (await sleepers('pg_sleep(30)')) === 1, 10_000, 'the statement to run');
    cli.child.kill('SIGINT');
    const ended = await cli.done;
    expect(ended.code).toBe(130);
    expect(ended.stdout).toBe('');
    await waitForPg(async () => (await sleepers('pg_sleep(30)')) === 0, 10_000, 'the server to stop the statement');
  }, 30_000);

  it('a statement whose session the server ends (a restart, pg_terminate_backend) exits 1 saying the connection was lost', async () => {
    // In this process: a statement left waiting for ever (pg-cursor's Close, never answered) holds this test to its timeout.
    const ran = inProcess(['query', 'SELECT pg_sleep(20) AS slept', '--db', ds.data.url, '--format', 'csv'], {}, { cwd: ds.data.ws.dir });
    await waitForPg(async () => (await sleepers('pg_sleep(20)')) === 1, 10_000, 'the statement to run');
    await ds.client.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%pg_sleep(20)%' AND pid <> pg_backend_pid()`);
    const ended = await ran;
    expect(ended.code).toBe(1);
    expect(ended.stderr).toMatch(/^netingest: lost the connection to database postgres:\/\/\S+ \(.+\): the server ended the session \(a restart, a stop, pg_terminate_backend\) or cannot be reached; run the command again once it is back .*\[DB_CONNECTION_LOST\]\n$/);
    expect(ended.stdout).toBe('');
  }, 30_000);

  /** Statements of `text` the server is running now (not this query itself). */
  async function sleepers(text: string): Promise<number> {
    const found = await ds.client.query(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND query LIKE $1 AND pid <> pg_backend_pid()`,
      [`%${text}%`],
    );
    return found.rows[0].n as number;
  }
});
