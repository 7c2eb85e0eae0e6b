/**
 * A group of answers the server refuses (here a CHECK constraint a DBA added): each refused answer's task says why,
 * not the "current transaction is aborted" (25P02) of what was pipelined behind the refused rows: the next group's
 * reads, or the history's reads after rows sent early. (The answers are kept apart: run-refused-answer.test.ts.)
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { postService } from '../support/db-fixtures.ts';
import { POSTGRES } from './engines.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';

const TOKEN = 'writer-refusal-token-0001';
let ws: OpsWorkspace;
const startFake = useFakeServices();
beforeEach(async () => {
  ws = await opsWorkspace({ posts: 3, companies: 2, retries: 1 });
});
afterEach(() => ws.cleanup());

async function refusing(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(sql).finally(() => client.end());
}

/** The failed tasks: some, each on the server's refusal and saying it (the constraint and its SQLSTATE). */
async function expectRefused(failed: Promise<Array<Record<string, unknown>>>, constraint: string): Promise<void> {
  const refusal = new RegExp(`^the database refused this answer's rows: .*violates check constraint "${constraint}".* \\[23514\\]$`);
  const rows = await failed;
  expect(rows.length).toBeGreaterThan(0);
  expect(rows).toEqual(rows.map(() => ({ code: 'STORE_REFUSED', message: expect.stringMatching(refusal) })));
}

describe.skipIf(!pgClusterUrl)(`a group the server refuses${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('posts (rows sent once the reads are back): the refusal is what the run says', async () => {
    const baseUrl = await startFake(postService());
    const db = await POSTGRES.open(ws.dir);
    await refusing(db.locator, 'ALTER TABLE posts ADD CONSTRAINT no_posts CHECK (reactions < 0)');
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('completed_with_failures');
    await expectRefused(db.rows('SELECT last_error_code AS code, last_error AS message FROM tasks WHERE status = ?', 'failed'), 'no_posts');
  }, 60_000);

  it('lookalikes (rows sent early): the refusal is what the run says', async () => {
    const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 10_000 } });
    try {
      const db = await POSTGRES.open(ws.dir);
      await refusing(db.locator, 'ALTER TABLE companies ADD CONSTRAINT no_companies CHECK (name IS NULL)');
      const job = await loadJob(ws.lookalikesJob, { cwd: ws.dir });
      const summary = await runJobs({ dbPath: db.locator, jobs: [job], api: { baseUrl: sandbox.url, token: TOKEN } });
      expect(summary.status).toBe('completed_with_failures');
      await expectRefused(db.rows("SELECT last_error_code AS code, last_error AS message FROM tasks WHERE status = ?", 'failed'), 'no_companies');
    } finally {
      await sandbox.stop();
    }
  }, 60_000);
});
