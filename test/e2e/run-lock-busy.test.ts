/**
 * A command that rewrites a SQLite dataset holds the run lock and one long write transaction (`reprocess` replays every
 * stored answer in one, `prune` ends with a VACUUM). Another `run`, `prune`, `reprocess` or `copy` started meanwhile
 * waits out the busy timeout on the lock's own transaction, then must refuse as LOCKED (exit 4), naming the holder, as
 * it does when the lock row alone is held; not exit 1 with "unexpected error: database is locked".
 */
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/open.ts';
import { acquireRunLock } from '../../src/store/run-lock.ts';
import { csv, runCli, useWorkspaces } from '../support/run-helpers.ts';

const workspace = useWorkspaces();

type Workspace = Awaited<ReturnType<typeof workspace>>;

/**
 * run, prune, reprocess and copy started together behind a write transaction kept open on `ws`'s dataset; with
 * `runLock`, as `reprocess` holds it (the run lock taken first), else as another program would (no lock row). Each
 * waits 1 s for the transaction, not 5 (NETINGEST_SQLITE_BUSY_SECONDS); `also` runs while it is still held.
 */
async function behindWriter(ws: Workspace, runLock: boolean, also: (busy: NodeJS.ProcessEnv) => Promise<void> = async () => {}) {
  const input = await ws.write('leads.csv', csv(['company_url'], [['https://www.network.com/company/acme']]));
  const job = await ws.job('leads', { operation: 'similar-companies', input: { csv: input, column: 'company_url' } });
  const holder = openDatabase(ws.db);
  const lock = runLock ? acquireRunLock(holder) : null;
  holder.sqlite.exec('BEGIN IMMEDIATE');
  holder.sqlite.prepare(`INSERT INTO netingest_meta (key, value) VALUES ('busy_test', 'x')`).run();
  try {
    const busy = { NETINGEST_SQLITE_BUSY_SECONDS: '1' };
    // Nothing answers at this URL: a run that got past the lock would fail on its first call instead.
    const env = { ...busy, NETINGEST_API_URL: 'http://127.0.0.1:9', NETINGEST_API_TOKEN: 'busy-lock-token' };
    const [run, prune, reprocess, copy] = await Promise.all([
      runCli(['run', job, '--db', ws.db], { cwd: ws.dir, env }),
      runCli(['prune', '--db', ws.db], { cwd: ws.dir, env: busy }),
      runCli(['reprocess', '--db', ws.db], { cwd: ws.dir, env: busy }),
      runCli(['copy', '--from', ws.db, '--to', 'postgres://nobody@127.0.0.1:9/none'], { cwd: ws.dir, env: busy }),
    ]);
    await also(busy);
    return { run, prune, reprocess, copy, all: [run, prune, reprocess, copy] };
  } finally {
    holder.sqlite.exec('ROLLBACK');
    lock?.release();
    holder.close();
  }
}

describe('a dataset whose run lock is held inside a long write transaction', () => {
  it('refuses run, prune, reprocess and copy with LOCKED (exit 4), naming the holder, and changes nothing', { timeout: 90_000 }, async () => {
    const ws = await workspace();
    const { prune, reprocess, all } = await behindWriter(ws, true, async (busy) => {
      // `status` says the dataset is in use, not that a run "?" is in progress.
      const status = await runCli(['status', '--db', ws.db], { cwd: ws.dir, env: busy });
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain(`The dataset is in use: netingest with no run id (\`reprocess\`, \`prune\`, \`copy\`, or a run starting) (pid ${process.pid} on `);
    });
    for (const refused of all) {
      expect(refused.code, refused.stderr).toBe(4);
      expect(refused.stderr).toContain(`is in use by netingest with no run id (\`reprocess\`, \`prune\`, \`copy\`, or a run starting) (pid ${process.pid} on `);
      expect(refused.stderr).toContain('[LOCKED]');
      expect(refused.stderr).not.toMatch(/unexpected error/);
    }
    // prune and reprocess say it was they that were refused, as on PostgreSQL.
    expect(prune.stderr).toMatch(/^netingest: `netingest prune` was refused: the database \S+ is in use by /);
    expect(reprocess.stderr).toMatch(/^netingest: `netingest reprocess` was refused: the database \S+ is in use by /);
  });

  it('refuses them with DB_LOCKED (exit 4) when the writer holds no run lock row to name', { timeout: 90_000 }, async () => {
    const ws = await workspace();
    // Another program's write transaction (sqlite3, a script): the run lock's own transaction times out behind it.
    const { prune, reprocess, all } = await behindWriter(ws, false);
    for (const refused of all) {
      expect(refused.code, refused.stderr).toBe(4);
      expect(refused.stderr).toContain(`database ${ws.db} is locked by another process`);
      expect(refused.stderr).not.toMatch(/unexpected error/);
    }
    expect(prune.stderr).toMatch(/^netingest: `netingest prune` was refused: database \S+ is locked by another process .*\[DB_LOCKED\]\n$/);
    expect(reprocess.stderr).toMatch(/^netingest: `netingest reprocess` was refused: database \S+ is locked by another process .*\[DB_LOCKED\]\n$/);
  });
});
