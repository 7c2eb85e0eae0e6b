/**
 * The read commands on a database whose folder this user cannot write (an analyst reading the cron user's file):
 * each command runs as uid 65534 through setpriv, on a WAL-mode file in a folder owned by root. See
 * src/store/read-without-shm.ts. The commands that write it (reprocess, prune) are refused there, naming themselves,
 * and copy, which only reads its source, is refused by a live run's lock as a writer is.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/open.ts';
import { exportTable } from '../../src/export/export-table.ts';
import { capture } from './export-helpers.ts';
import { OTHER_USER, ROOT, canRunAsOtherUser, childEnv, useUnwritableFolder, writeAsARunWould } from './read-unwritable-helpers.ts';

// Far more than a pipe and the command's buffers hold (over a megabyte of CSV), and a few dozen chunks of the
// helper's parallel export; 20,000 rows cost the other user's exports four times the CPU and proved no more.
const ROWS = 5_000;
const ro = useUnwritableFolder('netingest-ro-', ROWS);
const { unwritableCopy } = ro;
/** The export script, bundled beside the other user's netingest: the checkout may be out of its reach. */
let helper: string;
let folders = 0;

beforeAll(async () => {
  if (canRunAsOtherUser) helper = await ro.cli.bundle(join(ROOT, 'test/e2e/read-unwritable-export.ts'));
});

/** What root's own export of the pristine database writes, made once for the tests that compare with it. */
let rootExport: Promise<string> | undefined;
function exportedByRoot(): Promise<string> {
  return (rootExport ??= (async () => {
    const expected = capture();
    await exportTable({ db: ro.pristine, table: 'companies', stream: expected, parallel: { workers: 1 } });
    return expected.text();
  })());
}

/**
 * `args` of the other user's netingest (of node when not `cli`: a script and its arguments), run to its end
 * without blocking this process, so that the cases can run at once.
 */
async function otherUserRun(args: string[], cli = true): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = ro.spawnAsOtherUser(cli ? [ro.cli.bin, ...args] : args);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const [status] = (await once(child, 'close')) as [number | null];
  return { status, stdout, stderr };
}

/** A folder the other user can write, for --out. */
function outFolder(): string {
  const folder = join(ro.dir, `out-${++folders}`);
  mkdirSync(folder);
  chmodSync(folder, 0o777);
  return folder;
}

// Each case its own copy of the database in its own folder: they run at once, one's process start beside another's.
describe.skipIf(!canRunAsOtherUser)(
  'read commands on a database in a folder the user cannot write (runs them as uid 65534: needs root and setpriv, skipped otherwise)',
  { concurrent: true },
  () => {
    it('the scenario is the real one: WAL mode, no -wal or -shm, and the user cannot create them', () => {
      const db = unwritableCopy();
      expect(readFileSync(db).subarray(18, 20)).toEqual(Buffer.from([2, 2]));
      expect(existsSync(`${ro.pristine}-wal`) || existsSync(`${ro.pristine}-shm`)).toBe(false);
      const touch = spawnSync('setpriv', [...OTHER_USER, 'touch', `${db}-shm`], { encoding: 'utf8' });
      expect(touch.status).not.toBe(0);
    });

    it('query reads it, through a path that needs escaping in a file: URI, and leaves nothing beside it', async () => {
      const db = unwritableCopy('x #1?%.db');
      const result = await otherUserRun(['query', 'SELECT count(*) AS n, max(name) AS last FROM companies', '--format', 'csv', '--db', db]);
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      expect(result.stdout).toBe(`n,last\n${ROWS},Company 999\n`);
      expect(readdirSync(join(db, '..'))).toEqual(['x #1?%.db']);
    });

    it('export writes the same file as root gets, on the main thread', async () => {
      const db = unwritableCopy();
      const out = join(outFolder(), 'companies.csv');
      const result = await otherUserRun(['export', 'companies', '--out', out, '--db', db]);
      expect(result.stderr).toBe(`netingest: exported ${ROWS} rows to ${out}\n`);
      expect(result.status).toBe(0);
      expect(readFileSync(out, 'utf8')).toBe(await exportedByRoot());
    });

    it('export on worker threads writes the same file, the workers opening it the same way', async () => {
      const db = unwritableCopy();
      const out = join(outFolder(), 'companies.csv');
      const child = await otherUserRun([helper, db, out, 'parallel'], false);
      expect(child.stderr).toBe('');
      expect(JSON.parse(child.stdout)).toEqual({ rows: ROWS, workers: 2 });
      expect(readFileSync(out, 'utf8')).toBe(await exportedByRoot());
    });

    it('enrich, status and plan read it', async () => {
      const db = unwritableCopy();
      const out = join(outFolder(), 'enriched.csv');
      // Three readers of the one file at once, as analysts would: none writes beside it, so none is in another's way.
      const [enrich, status, plan] = await Promise.all([
        otherUserRun(['enrich', 'jobs/lookalikes.json', '--out', out, '--db', db]),
        otherUserRun(['status', '--json', '--db', db]),
        otherUserRun(['plan', 'jobs/lookalikes.json', '--db', db]),
      ]);
      expect(enrich.stderr).not.toMatch(/DB_/);
      expect(enrich.status).toBe(0);
      const inputRows = readFileSync(join(ROOT, 'data/leads.csv'), 'utf8').trim().split('\n').length - 1;
      expect(readFileSync(out, 'utf8').trim().split('\n')).toHaveLength(inputRows + 1);

      expect(status.stderr).toBe('');
      expect(status.status).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ runs: [], creditsSpentAllRuns: 0 });

      expect(plan.stderr).toBe('');
      expect(plan.status).toBe(0);
      expect(plan.stdout).toMatch(/lookalikes/);
    });

    it('a non-empty -wal, which holds writes the file lacks, is refused with DB_READONLY saying why', async () => {
      const db = unwritableCopy();
      // A writer that has committed into the -wal and not checkpointed; the copy has no -shm.
      const writer = openDatabase(db);
      writer.sqlite.pragma('wal_autocheckpoint = 0');
      writer.sqlite.exec(`DELETE FROM companies WHERE rowid > 10`);
      const copy = join(ro.dir, `wal-${++folders}`);
      mkdirSync(copy, { mode: 0o755 });
      copyFileSync(db, join(copy, 'data.db'));
      copyFileSync(`${db}-wal`, join(copy, 'data.db-wal'));
      writer.close();
      const result = await otherUserRun(['query', 'SELECT count(*) FROM companies', '--db', join(copy, 'data.db')]);
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/latest writes are still in .*data\.db-wal.* \[DB_READONLY\]\n$/);
    });

    it('reprocess and prune, which write it, are refused with DB_READONLY saying which command, changing nothing', async () => {
      const db = unwritableCopy();
      const before = readFileSync(db);
      for (const command of [['reprocess'], ['prune', '--keep-days', '0']]) {
        const refused = await otherUserRun([...command, '--db', db]);
        expect(refused.status, command[0]).toBe(1);
        expect(refused.stderr).toMatch(new RegExp(`^netingest: \`netingest ${command[0]}\` was refused: database \\S+ cannot be written .*\\[DB_READONLY\\]\n$`));
      }
      expect(readFileSync(db).equals(before)).toBe(true);
      expect(readdirSync(join(db, '..'))).toEqual(['data.db']);
    });

    it('copy refuses a source a live run holds (exit 4) with the sentence a writer is refused with, naming the run', async () => {
      const db = unwritableCopy();
      const since = new Date().toISOString();
      const writer = openDatabase(db);
      writer.sqlite.prepare(`INSERT INTO run_lock (id, pid, host, run_id, acquired_at, heartbeat_at, lease_ms) VALUES (1, 4242, 'other-host', 7, ?, ?, 300000)`).run(since, since);
      writer.close();
      // Refused before the target is opened: no server is asked.
      const args = ['copy', '--from', db, '--to', 'postgres://netingest@127.0.0.1:1/never'];
      const readOnly = await otherUserRun(args);
      expect(readOnly.status).toBe(4);
      expect(readOnly.stderr).toContain(`the database ${db} is in use by run 7 (pid 4242 on other-host, since ${since}); wait for it to finish`);
      // Root can write the folder: its copy meets the lock by taking it, as a run or reprocess does.
      const writable = spawnSync(process.execPath, [ro.cli.bin, ...args], { cwd: ro.cli.root, env: childEnv(), encoding: 'utf8' });
      expect(writable.status).toBe(4);
      expect(readOnly.stderr).toBe(writable.stderr);
    });

    it('a database that changes while query prints it fails with DB_CHANGED', async () => {
      const db = unwritableCopy();
      const child = ro.spawnAsOtherUser([ro.cli.bin, 'query', 'SELECT * FROM companies', '--format', 'csv', '--db', db]);
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      // The first rows are out, so the file is open; ROWS rows are megabytes, far more than the pipe and the
      // command's buffers hold: it cannot finish reading until this test reads on.
      await Promise.race([new Promise<void>((resolve) => child.stdout.once('data', () => resolve())), exited]);
      child.stdout.pause();
      writeAsARunWould(db);
      child.stdout.resume();
      expect(await exited).toBe(1);
      expect(stderr).toMatch(/changed while this command read it.*run the command again \[DB_CHANGED\]\n$/);
    });

    for (const path of ['serial', 'parallel'] as const) {
      it(`a database that changes during a ${path} export fails with DB_CHANGED and leaves no --out file`, async () => {
        const db = unwritableCopy();
        const folder = outFolder();
        const out = join(folder, 'companies.csv');
        const child = ro.spawnAsOtherUser([helper, db, out, path, 'pause']);
        let stdout = '';
        let stderr = '';
        child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
        const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
        // The helper holds the export after its first batch (or chunk) until it reads a line.
        await Promise.race([
          new Promise<void>((resolve) =>
            child.stdout.on('data', (c: Buffer) => {
              stdout += c.toString();
              if (stdout.includes('paused\n')) resolve();
            }),
          ),
          exited,
        ]);
        writeAsARunWould(db);
        child.stdin.end('go\n');
        await exited;
        expect(stderr).toBe('');
        expect(JSON.parse(stdout.slice(stdout.indexOf('\n') + 1))).toMatchObject({ code: 'DB_CHANGED' });
        expect(readdirSync(folder)).toEqual([]);
      });
    }
  },
);
