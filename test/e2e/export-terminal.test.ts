/**
 * Values come from a third-party API: one holding an escape sequence, written raw to a terminal, would be run
 * by it (OSC 52 writes the clipboard, CSI clears the screen or hides the text). Every command writing to a
 * terminal strips the controls, as the query table always did; a file or a pipe gets the values as stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/open.ts';
import { capture } from './export-helpers.ts';
import { exportTable } from '../../src/export/export-table.ts';
import { main } from '../../src/cli/main.ts';

const T = '2026-11-01T10:00:00.000Z';
const OSC52 = '\x1b]52;c;cm0gLXJmIH4=\x07';
const HOSTILE = [`Acme${OSC52} Inc`, 'clear\x1b[2J\x1b[H', 'c1\x9b31mred\x9d0;title\x9c', 'bell\x07del\x7f', 'back\bspace\rover'];
const ROWS = 500;
/** Small chunks and no size threshold, so the rows go through the worker threads' byte chunks. */
const PARALLEL = { workers: 2, minRowidSpan: 1, chunkRowids: 37, maxChunksInFlight: 3 } as const;
/** Any C0 control but tab and line feed, DEL, any C1 control. */
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

let dir: string;
let db: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-terminal-'));
  db = join(dir, 'data.db');
  const database = openDatabase(db);
  const insert = database.sqlite.prepare(`INSERT INTO companies (url, name, description, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?)`);
  database.sqlite.transaction(() => {
    for (let i = 0; i < ROWS; i++) insert.run(`https://www.network.com/company/c${i}`, HOSTILE[i % HOSTILE.length], `multi\nline ${i}`, T, T);
  })();
  database.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const terminal = () => Object.assign(capture(), { isTTY: true, columns: 120 });

function expectNoControls(text: string, lineBreak = '\n'): void {
  expect(text).not.toMatch(CONTROL);
  expect(text).toContain('Acme');
  expect(text).toContain(`multi${lineBreak}line 1`);
  expect(text.split('\n').length).toBeGreaterThan(ROWS);
}

describe('writing to a terminal', () => {
  for (const format of ['csv', 'jsonl']) {
    it(`export --format ${format} (CLI) strips the controls; to a file, the values are as stored`, async () => {
      const stdout = terminal();
      expect(await main(['export', 'companies', '--db', db, '--format', format], { stdout, stderr: capture() })).toBe(0);
      expectNoControls(stdout.text(), format === 'csv' ? '\n' : '\\n');
      const out = join(dir, `companies.${format}`);
      expect(await main(['export', 'companies', '--db', db, '--format', format, '--out', out], { stdout: capture(), stderr: capture() })).toBe(0);
      expect(readFileSync(out, 'utf8')).toContain(format === 'csv' ? OSC52 : '\\u001b]52;c;cm0gLXJmIH4=\\u0007');
      expect(readFileSync(out, 'utf8')).toContain('\x9b31m');
    });
  }

  it('export on the worker threads strips them too; a pipe gets the bytes as stored', async () => {
    const tty = terminal();
    const result = await exportTable({ db, table: 'companies', stream: tty, parallel: PARALLEL });
    expect(result.workers).toBe(2);
    expectNoControls(tty.text());
    const pipe = capture();
    await exportTable({ db, table: 'companies', stream: pipe, parallel: PARALLEL });
    expect(pipe.text()).toContain(OSC52);
  });

  it('query as CSV and as its table strip them alike', async () => {
    for (const format of ['csv', 'table']) {
      const stdout = terminal();
      expect(await main(['query', 'SELECT name FROM companies', '--db', db, '--format', format], { stdout, stderr: capture() })).toBe(0);
      expect(stdout.text()).not.toMatch(CONTROL);
      expect(stdout.text()).toContain('c1 31mred 0;title');
    }
  });
});
