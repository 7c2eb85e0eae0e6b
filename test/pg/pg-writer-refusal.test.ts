/**
 * A group of answers the server refuses (here a CHECK constraint a DBA added): the run stops saying why, not with the
 * "current transaction is aborted" (25P02) of what was pipelined behind the refused rows: the next group's reads,
 * or the history's reads after rows sent early.
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

describe.skipIf(!pgClusterUrl)(`a group the server refuses${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('posts (rows sent once the reads are back): the refusal is what the run says', async () => {
    const baseUrl = await startFake(postService());
    const db = await POSTGRES.open(ws.dir);
    await refusing(db.locator, 'ALTER TABLE posts ADD CONSTRAINT no_posts CHECK (reactions < 0)');
    const summary = await runJobs({ dbPath: db.locator, jobs: [await loadJob(ws.postsJob, { cwd: ws.dir })], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('failed');
    expect(summary.error?.message).toMatch(/violates check constraint "no_posts" \[23514\]/);
  }, 60_000);

  it('lookalikes (rows sent early): the refusal is what the run says', async () => {
    const sandbox = await startSandbox({ port: 0, tokens: { [TOKEN]: 10_000 } });
    try {
      const db = await POSTGRES.open(ws.dir);
      await refusing(db.locator, 'ALTER TABLE companies ADD CONSTRAINT no_companies CHECK (name IS NULL)');
      const job = await loadJob(ws.lookalikesJob, { cwd: ws.dir });
      const summary = await runJobs({ dbPath: db.locator, jobs: [job], api: { baseUrl: sandbox.url, token: TOKEN } });
      expect(summary.status).toBe('failed');
      expect(summary.error?.message).toMatch(/violates check constraint "no_companies" \[23514\]/);
    } finally {
      await sandbox.stop();
    }
  }, 60_000);
});
