/**
 * SQLite refusing the one write of a run's end (as a full disk would; here a trigger, so it is that write and no
 * other): `netingest run` prints the summary of what it did, marked as not recorded, and exits as the write's error
 * does (DB_WRITE_FAILED: 1), not 0. The row stays `running` until the next run closes it as abandoned.
 */
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { startSandbox } from '../../src/sandbox/server.ts';
import { FAST_RATE, FAST_RETRY, csv, inProcess, operationRequests, postUrls, useWorkspaces } from '../support/run-helpers.ts';

const TOKEN = 'end-refused-token-3b9e';
const TASKS = 6;
const newWorkspace = useWorkspaces();

describe('a SQLite run whose end cannot be written', () => {
  it('prints its summary marked not recorded and exits 1 (DB_WRITE_FAILED); the next run closes it as abandoned', async () => {
    const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 1_000 }, notFoundRate: 0, latencyMs: [1, 3] });
    try {
      const ws = await newWorkspace();
      await ws.write('posts.csv', csv(['post_url'], postUrls(TASKS).map((u) => [u])));
      const file = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
      const netingest = (...args: string[]) => inProcess(['run', file, '--db', ws.db, ...args], { NETINGEST_API_URL: sandbox.url, NETINGEST_API_TOKEN: TOKEN }, { cwd: ws.dir });
      expect((await netingest()).code).toBe(0);
      const db = new BetterSqlite3(ws.db);
      try {
        db.exec(`CREATE TRIGGER test_end_refused BEFORE UPDATE OF status ON runs WHEN OLD.status = 'running'
          BEGIN SELECT RAISE(ABORT, 'test_end_refused'); END`);
        const paidBefore = operationRequests(sandbox).length;

        const cli = await netingest('--refresh');
        expect(cli.code, cli.stderr).toBe(1);
        const paid = operationRequests(sandbox).length - paidBefore;
        expect(paid).toBe(TASKS);
        expect(cli.stdout).toBe(
          `Run 2: completed; NOT RECORDED in the database: its end could not be written (see below)\n` +
            `  posts (post-details): ${TASKS} tasks, 0 still fresh, ${TASKS} done, 0 not found, 0 failed, 0 deferred; 0 invalid rows, 0 duplicates\n` +
            `  ${paid} API calls; credits: ${paid} spent, ${1_000 - 2 * TASKS} left\n` +
            `  not recorded: database ${ws.db}: test_end_refused [SQLITE_CONSTRAINT_TRIGGER] [DB_WRITE_FAILED]\n` +
            '  these figures are what this process counted; the runs table shows the run as running until the next run closes it as abandoned\n',
        );
        expect(cli.stderr).toMatch(/run finished .*not_recorded=DB_WRITE_FAILED exit_code=1\nnetingest: database \S+: test_end_refused .*\[DB_WRITE_FAILED\]\n$/);
        expect(db.prepare('SELECT status FROM runs ORDER BY id').pluck().all()).toEqual(['completed', 'running']);
        // What the run stored is there: only its end is missing.
        expect(db.prepare('SELECT count(*) FROM api_calls WHERE run_id = 2').pluck().get()).toBe(paid);

        db.exec('DROP TRIGGER test_end_refused');
        const next = await netingest();
        expect(next.code, next.stderr).toBe(0);
        expect(db.prepare('SELECT status FROM runs ORDER BY id').pluck().all()).toEqual(['completed', 'abandoned', 'completed']);
      } finally {
        db.close();
      }
    } finally {
      await sandbox.stop();
    }
  });
});
