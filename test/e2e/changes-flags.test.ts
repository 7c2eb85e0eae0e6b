/**
 * `netingest changes`' flags, as a hostile tester used them: `--since 20261129` (a date without dashes) and any run id
 * that names no run printed the header alone and exited 0, and `--since ""` meant `last`; on a terminal of 250
 * columns every value was cut at 40, so a job's key showed as `https://www.network.com/jobs/view/30…`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/open.ts';
import { capture } from './export-helpers.ts';
import { main } from '../../src/cli/main.ts';

const JOB = 'https://www.network.com/jobs/view/3011223344556677-senior-platform-engineer-remote';
let dir: string;
let db: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-changes-flags-'));
  db = join(dir, 'data.db');
  const database = openDatabase(db);
  for (const id of [1, 2, 3, 4]) {
    const at = `2026-11-0${id}T01:00:00.000Z`;
    database.sqlite.prepare(`INSERT INTO runs (id, jobs, started_at, ended_at, status) VALUES (?, '["jobs"]', ?, ?, 'completed')`).run(id, at, at);
    database.sqlite.prepare(`INSERT INTO changes (run_id, at, entity, key, change, field, old, new) VALUES (?, ?, 'job', ?, 'changed', 'title', ?, ?)`)
      .run(id, at, `${JOB}-${id}`, `Engineer ${id}`, `Senior engineer ${id}`);
  }
  database.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function changes(args: string[], stdout = capture()): Promise<{ code: number; out: string; err: string }> {
  const stderr = capture();
  const code = await main(['changes', '--db', db, ...args], { stdout, stderr });
  return { code, out: stdout.text(), err: stderr.text() };
}

describe('changes --since', () => {
  it('refuses a run id that names no run, giving the run ids there are (exit 2)', async () => {
    const refused = await changes(['--since', '99']);
    expect(refused.code).toBe(2);
    expect(refused.err).toMatch(/--since 99: no run 99 in .*data\.db \(its run ids: 1 to 4\)/);
    expect(refused.out).toBe('');
    expect((await changes(['--since', '0'])).code).toBe(2);
  });

  it('refuses a date written without dashes, naming the date form', async () => {
    const refused = await changes(['--since', '20261129']);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('--since 20261129: no run 20261129');
    expect(refused.err).toContain('YYYY-MM-DD: --since 2026-11-29');
    // Eight digits that make no calendar day are no date: no hint.
    const notADate = await changes(['--since', '20261340']);
    expect(notADate.code).toBe(2);
    expect(notADate.err).not.toContain('YYYY-MM-DD');
  });

  it('refuses an empty value, and one given twice, rather than read either as last', async () => {
    for (const value of ['', '  ']) {
      const refused = await changes(['--since', value]);
      expect(refused.code).toBe(2);
      expect(refused.err).toContain('--since is empty');
    }
    const twice = await changes(['--since', '1', '--since', '2']);
    expect(twice.code).toBe(2);
    expect(twice.err).toContain('--since is given more than once (1, 2)');
  });

  it('refuses any flag of one value given twice (exit 2), as --since: --job, --entity, --format, --db', async () => {
    // Before: `--job a --job b` and `--entity x --entity y` ended in "unexpected error: argv.job.trim is not a function"
    // (exit 1), `--db` twice in one about `opts.db?.trim`, and `--format csv --format jsonl` wrote CSV unsaid.
    for (const [flag, a, b] of [['--job', 'a', 'b'], ['--entity', 'job', 'post'], ['--format', 'csv', 'jsonl']] as const) {
      const refused = await changes([flag, a, flag, b]);
      expect(refused.code, flag).toBe(2);
      expect(refused.err, flag).toContain(`${flag} is given more than once (${a}, ${b}): give it once`);
      expect(refused.out, flag).toBe('');
    }
    // A database URL may hold a password: its values are not quoted (`--db` comes once more from changes() itself).
    const twice = await changes(['--db', db]);
    expect(twice.code).toBe(2);
    expect(twice.err).toContain('--db is given more than once: give it once');
    expect(twice.err).not.toContain(db);
  });

  it('still lists from a run that is there, and accepts a future date (a filter that keeps nothing)', async () => {
    const from3 = await changes(['--since', '3', '--format', 'csv']);
    expect(from3.code, from3.err).toBe(0);
    expect(from3.out.trim().split('\n').slice(1).map((l) => l.split(',')[0])).toEqual(['3', '4']);
    const future = await changes(['--since', '2099-01-01', '--format', 'csv']);
    expect(future.code, future.err).toBe(0);
    expect(future.out.trim()).toBe('run_id,at,job,entity,key,change,field,old,new');
  });
});

describe('changes on a terminal', () => {
  const terminal = (columns: number) => Object.assign(capture(), { isTTY: true, columns });

  it('--max-width widens the columns as query\'s does, up to the terminal\'s width', async () => {
    const wide = await changes(['--since', '1', '--max-width', '200'], terminal(250));
    expect(wide.code, wide.err).toBe(0);
    for (const id of [1, 2, 3, 4]) expect(wide.out).toContain(`${JOB}-${id}`);
    // The default is query's: 40 cells a column, the keys cut.
    const narrow = await changes(['--since', '1'], terminal(250));
    expect(narrow.out).not.toContain(`${JOB}-1`);
    expect(narrow.out).toContain('https://www.network.com/jobs/view/30');
    // The same table as query's for the same rows and options: one encoder, not a second formatter.
    const sql = `SELECT c.run_id, c.at, t.job, c.entity, c.key, c.change, c.field, c.old, c.new FROM changes c LEFT JOIN tasks t ON t.id = c.task_id
      WHERE c.run_id >= 1 ORDER BY c.entity, c.key, c.at, c.id`;
    const stdout = terminal(250);
    expect(await main(['query', sql, '--db', db, '--max-width', '200'], { stdout, stderr: capture() })).toBe(0);
    expect(wide.out).toBe(stdout.text());
  });

  it('refuses a --max-width that is no number, as query does', async () => {
    const refused = await changes(['--max-width', 'wide'], terminal(250));
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('--max-width wide: must be a number');
  });
});
