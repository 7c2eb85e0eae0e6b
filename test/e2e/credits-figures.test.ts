/**
 * Figures and messages that must be true and plain: what a run stopped by a full disk did, what `status` says of
 * credits no run counted (paid answers lost in flight), a value too big for SQLite. (A counter of 1e400 is read
 * as no counter by the answer contracts: the run charges that answer at an estimate, test/e2e/credits-unread.test.ts.)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { toDatabaseUseError } from '../../src/store/open.ts';
import { describeError } from '../../src/cli/exit-codes.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { runCli as runCliLimited } from '../soak/cli-process.ts';
import { FAST_RATE, FAST_RETRY, count, csv, inProcess, postUrls, useWorkspaces, type Workspace } from '../support/run-helpers.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { postResponse } from '../support/db-fixtures.ts';

const TOKEN = 'figures-token-5521';
const newWorkspace = useWorkspaces();
const startFake = useFakeServices();

async function postsJob(ws: Workspace, n: number, first = 0): Promise<string> {
  await ws.write('posts.csv', csv(['post_url'], postUrls(n, first).map((u) => [u])));
  return ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE, retry: FAST_RETRY });
}

describe('a run stopped by a full disk', () => {
  it('says how many tasks it did, as the ledger holds them, and that a write failed (not "cannot open")', async () => {
    const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 1_000_000 }, notFoundRate: 0, logRequests: false });
    const ws = await newWorkspace();
    try {
      const file = await postsJob(ws, 1000);
      // The database and its log may grow to 2 MB: some hundred answers are committed, then a write fails.
      const result = await runCliLimited(['run', file, '--db', ws.db, '--json'], {
        cwd: ws.dir,
        env: { NETINGEST_API_URL: sandbox.url, NETINGEST_API_TOKEN: TOKEN },
        fileSizeLimitKb: 2000,
        timeoutMs: 60_000,
      });
      expect(result.code, result.stderr).toBe(1);
      const summary = JSON.parse(result.stdout) as { jobs: Array<{ name: string; done: number; deferred: number }>; error: { code: string; message: string } };
      const done = count(ws, `SELECT count(*) FROM tasks WHERE status = 'done'`);
      expect(done).toBeGreaterThan(0);
      expect(summary.jobs).toHaveLength(1);
      const waiting = count(ws, `SELECT count(*) FROM tasks WHERE status IN ('pending', 'deferred')`);
      expect(summary.jobs[0]).toMatchObject({ name: 'posts', done, deferred: waiting });
      expect(summary.error.code).toBe('DB_WRITE_FAILED');
      expect(summary.error.message).toMatch(/could not write .*disk full/);
      expect(summary.error.message).not.toMatch(/cannot open/);
    } finally {
      await sandbox.stop();
    }
  }, 90_000);
});

describe('status and paid answers lost in flight', () => {
  it('names the credits used between runs that no run counted', async () => {
    let used = 0;
    const url = await startFake((req: IncomingMessage, res: ServerResponse) => {
      const asked = new URL(req.url ?? '/', 'http://x');
      if (asked.pathname !== '/v1/api/post-details') return void res.writeHead(404).end('{}');
      used += 1;
      const id = /activity-(\d+)/.exec(asked.searchParams.get('url') ?? '')?.[1];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(postResponse({ PostId: `activity-${id}`, total_credits: 1000, credits_used: used, credits_remaining: 1000 - used })));
    });
    const ws = await newWorkspace();
    const api = { baseUrl: url, token: TOKEN };
    await runJobs({ dbPath: ws.db, jobs: await ws.load(await postsJob(ws, 5)), api });
    // Three paid answers the service charged and no run stored: lost in flight when a run was killed.
    used += 3;
    await runJobs({ dbPath: ws.db, jobs: await ws.load(await postsJob(ws, 4, 100)), api });
    expect(used).toBe(12);
    // status's figures through the CLI's code in this process: what it prints, not how a process starts.
    const json = await inProcess(['status', '--db', ws.db, '--json'], {}, { cwd: ws.dir });
    expect(JSON.parse(json.stdout)).toMatchObject({ creditsSpentAllRuns: 9, creditsUncountedBetweenRuns: 3 });
    const text = await inProcess(['status', '--db', ws.db], {}, { cwd: ws.dir });
    expect(text.stdout).toContain('Credits spent by all runs: 9\n');
    expect(text.stdout).toContain('Credits used between runs and counted by none: 3 (paid answers lost in flight when a run was killed, or the token used elsewhere)');
  });
});

describe('a value too big for SQLite during a run', () => {
  it('is a plain write failure naming the database, not "unexpected error: string or blob too big"', () => {
    const sqlite = new BetterSqlite3(':memory:');
    let err: unknown;
    try {
      // SQLite refuses a value past its length limit before allocating it: the real error, cheaply.
      sqlite.prepare('SELECT zeroblob(2000000000)').get();
    } catch (e) {
      err = e;
    } finally {
      sqlite.close();
    }
    expect((err as { code?: string }).code).toBe('SQLITE_TOOBIG');
    const mapped = toDatabaseUseError(err, '/data/x.db');
    expect(describeError(mapped)).toBe(
      'database /data/x.db: a value is larger than SQLite can store in one field (string or blob too big) [SQLITE_TOOBIG] [DB_WRITE_FAILED]',
    );
  });
});
