/** Checks made on `--out` before anything is read: it must not be an input (however it is spelled), nor a folder. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { openDatabase } from '../../src/store/open.ts';
import { enrichJob } from '../../src/export/enrich.ts';
import { main } from '../../src/cli/main.ts';

let dir: string;
let real: string;
let linked: string;
let db: string;

function io() {
  const stderr = new PassThrough();
  let text = '';
  stderr.on('data', (c: Buffer) => (text += c.toString()));
  return { stdout: new PassThrough(), stderr, text: () => text };
}

/** The first bytes of an SQLite database file. */
const isDatabase = (file: string) => readFileSync(file).subarray(0, 15).toString('latin1') === 'SQLite format 3';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-out-path-'));
  real = join(dir, 'real');
  mkdirSync(real);
  // The same folder under a second name: paths through it differ as strings but name the same files.
  linked = join(dir, 'linked');
  symlinkSync(real, linked);
  db = join(real, 'data.db');
  openDatabase(db).close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('an --out that is an input, reached another way, is refused (exit 2, OUT_IS_INPUT)', () => {
  it('the database through a symlinked folder', async () => {
    const streams = io();
    expect(await main(['export', 'posts', '--db', join(linked, 'data.db'), '--out', db], streams)).toBe(2);
    expect(streams.text()).toMatch(/is the database.*\[OUT_IS_INPUT\]/);
    expect(await main(['export', 'posts', '--db', db, '--out', join(linked, 'data.db')], io())).toBe(2);
    expect(await main(['export', '--sql', 'SELECT 1', '--db', db, '--out', join(linked, 'data.db-wal')], io())).toBe(2);
    expect(isDatabase(db)).toBe(true);
  });

  it('a hard link to the database', async () => {
    const hard = join(dir, 'hard.db');
    linkSync(db, hard);
    const streams = io();
    expect(await main(['export', 'posts', '--db', db, '--out', hard], streams)).toBe(2);
    expect(streams.text()).toMatch(/\[OUT_IS_INPUT\]/);
    expect(isDatabase(db)).toBe(true);
  });

  it("enrich: the job's input CSV and the job file through a symlinked folder", async () => {
    const csv = join(real, 'posts.csv');
    writeFileSync(csv, 'post_url\nhttps://network.com/posts/someone_activity-1\n');
    const job = join(real, 'posts.json');
    writeFileSync(job, JSON.stringify({ name: 'posts', operation: 'post-details', input: { csv, column: 'post_url' } }));
    await expect(enrichJob({ db, job, out: join(linked, 'posts.csv') })).rejects.toMatchObject({ code: 'OUT_IS_INPUT' });
    await expect(enrichJob({ db, job, out: join(linked, 'posts.json') })).rejects.toMatchObject({ code: 'OUT_IS_INPUT' });
    expect(readFileSync(csv, 'utf8')).toMatch(/^post_url\n/);
  });

  it("report: the database and its -wal, the page's default name aside", async () => {
    for (const out of [join(linked, 'data.db'), `${db}-wal`]) {
      const streams = io();
      expect(await main(['report', '--db', db, '--out', out], streams)).toBe(2);
      expect(streams.text()).toMatch(/is the database: writing there would destroy it.*\[OUT_IS_INPUT\]/);
    }
    expect(isDatabase(db)).toBe(true);
  });

  it('report --json with --out: refused (exit 2) rather than print to stdout and leave --out unwritten', async () => {
    const out = join(real, 'figures.json');
    const streams = io();
    expect(await main(['report', '--db', db, '--json', '--out', out], streams)).toBe(2);
    expect(streams.text()).toContain(`--json prints the figures on stdout: leave out --out (or redirect: > ${out})`);
    expect(readdirSync(real).filter((f) => f.startsWith('figures'))).toEqual([]);
  });

  it('another file in the linked folder is written as usual', async () => {
    const out = join(linked, 'posts-export.csv');
    expect(await main(['export', 'posts', '--db', db, '--out', out], io())).toBe(0);
    expect(readFileSync(join(real, 'posts-export.csv'), 'utf8')).toMatch(/^post_id,/);
  });
});

describe('an --out that names a folder is refused before anything is read (exit 2, OUTPUT_UNWRITABLE)', () => {
  // Seconds of work before the first row: the old check, at the rename, came only after it.
  const slow = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) SELECT count(*) FROM c';

  it('an existing folder, named as the user gave it', async () => {
    const out = join(dir, 'a-folder');
    mkdirSync(out);
    const streams = io();
    expect(await main(['export', '--sql', slow, '--db', db, '--out', out], streams)).toBe(2);
    expect(streams.text()).toMatch(/a-folder: cannot write the output file: it is a folder.*\[OUTPUT_UNWRITABLE\]/);
    expect(readdirSync(out)).toEqual([]);
  });

  it('a path ending with a slash, with no temporary file left in the parent folder', async () => {
    const parent = join(dir, 'parent');
    mkdirSync(parent);
    mkdirSync(join(parent, 'sub'));
    for (const out of [join(parent, 'sub') + '/', join(parent, 'not-yet') + '/']) {
      const streams = io();
      expect(await main(['export', 'posts', '--db', db, '--out', out], streams)).toBe(2);
      expect(streams.text()).toMatch(/ends with a slash.*\[OUTPUT_UNWRITABLE\]/);
    }
    expect(readdirSync(parent)).toEqual(['sub']);
  });

  it('is checked before the database is opened', async () => {
    const streams = io();
    expect(await main(['export', 'posts', '--db', join(dir, 'no-such.db'), '--out', dir], streams)).toBe(2);
    expect(streams.text()).toMatch(/\[OUTPUT_UNWRITABLE\]/);
  });

  it('enrich too', async () => {
    const csv = join(dir, 'enrich-input.csv');
    writeFileSync(csv, 'post_url\nhttps://network.com/posts/someone_activity-1\n');
    const job = join(dir, 'enrich-job.json');
    writeFileSync(job, JSON.stringify({ name: 'posts', operation: 'post-details', input: { csv, column: 'post_url' } }));
    const out = join(dir, 'enrich-folder');
    mkdirSync(out);
    const streams = io();
    expect(await main(['enrich', job, '--db', db, '--out', out], streams)).toBe(2);
    expect(streams.text()).toMatch(/\[OUTPUT_UNWRITABLE\]/);
  });
});

describe('an empty output flag (given no value, or an unset variable) is refused, naming the flag (exit 2)', () => {
  it.each([
    ['report', ['report', '--out']],
    ['export', ['export', 'posts', '--out', '']],
    ['changes', ['changes', '--out']],
    ['enrich', ['enrich', 'some-job', '--out', ' ']],
    ['plan', ['plan', 'some-job.json', '--invalid-out', '']],
  ])('%s', async (_command, args) => {
    const streams = io();
    const before = readdirSync(process.cwd());
    expect(await main([...args, '--db', db], streams)).toBe(2);
    expect(streams.text()).toMatch(/--(invalid-)?out is empty: name the file to write/);
    // Not the default page nor a file in the current folder.
    expect(readdirSync(process.cwd())).toEqual(before);
  });
});

describe('an existing --out is replaced as the file it is', () => {
  it('keeps its permissions: a private 0600 export is not made world-readable', async () => {
    const folder = join(dir, 'private');
    mkdirSync(folder);
    const out = join(folder, 'leads.csv');
    writeFileSync(out, 'old\n');
    chmodSync(out, 0o600);
    expect(await main(['export', 'posts', '--db', db, '--out', out], io())).toBe(0);
    expect(readFileSync(out, 'utf8')).toMatch(/^post_id,/);
    expect(statSync(out).mode & 0o777).toBe(0o600);
  });

  it('a symbolic link: the file it points to gets the export, and the link stays a link', async () => {
    const folder = join(dir, 'symlinked-out');
    mkdirSync(folder);
    const target = join(folder, 'exports-2026-11-23.csv');
    writeFileSync(target, 'old\n');
    const link = join(folder, 'latest.csv');
    symlinkSync(target, link);
    expect(await main(['export', 'posts', '--db', db, '--out', link], io())).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(target, 'utf8')).toMatch(/^post_id,/);
    expect(readdirSync(folder).sort()).toEqual(['exports-2026-11-23.csv', 'latest.csv']);
  });

  it('a named pipe (as /dev/null would be for root) is refused, not replaced by a regular file', async () => {
    const fifo = join(dir, 'a-pipe');
    execFileSync('mkfifo', [fifo]);
    const streams = io();
    expect(await main(['export', 'posts', '--db', db, '--out', fifo], streams)).toBe(2);
    expect(streams.text()).toMatch(/a-pipe: cannot write the output file: it is a device, pipe or socket.*\[OUTPUT_UNWRITABLE\]/);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
  });
});
