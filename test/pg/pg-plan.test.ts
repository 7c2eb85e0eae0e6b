/**
 * `plan` on PostgreSQL gives the report it gives on SQLite for the same history: the same runs on both engines
 * (each against its own stand-in service on 127.0.0.1), then plan on both, compared field by field: fresh tasks,
 * tasks failed for good, calls, another job's shared answers, the learned cost, the last known balance, invalid
 * rows and duplicates. `--invalid-out` of plan and run writes the same CSV on both. An empty database (no
 * netingest schema) plans as if nothing had run and is left empty; docs/postgres.md's analyst role can plan.
 */
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAST_RATE, FAST_RETRY, csv, inProcess, makeWorkspace, postUrls, type Workspace } from '../support/run-helpers.ts';
import { postResponse } from '../support/db-fixtures.ts';
import { docsAnalystUrl } from './analyst-role.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { DATABASE_URL_ENV } from '../../src/store/locator.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import type { PlanReport } from '../../src/runner/plan-report.ts';

const TOKEN = 'pg-plan-token-5d21';
const BALANCE = 1000;
/** Posts of the first job; the second job asks these again after NEW_POSTS others (past the first batch of 1,000). */
const POSTS = 8;
const NEW_POSTS = 1500;

/** How the stand-in answers post k: a post, a 404, or a 200 of the wrong shape (failed for good: never retried). */
const outcomeOf = (k: number): 'done' | 'notFound' | 'failed' => (k % 4 === 1 ? 'notFound' : k % 4 === 3 ? 'failed' : 'done');
const expected = (outcome: ReturnType<typeof outcomeOf>) => Array.from({ length: POSTS }, (_, k) => outcomeOf(k)).filter((o) => o === outcome).length;

interface Service {
  url: string;
  calls: number;
  server: Server;
}

/** One credit a lookup; the free balance check is not offered (400), so plan asks nothing live. */
async function startService(): Promise<Service> {
  const service = { url: '', calls: 0 } as Service;
  service.server = createServer((req, res) => {
    if (req.url === '/v1/api/auth') return void res.writeHead(400).end();
    service.calls += 1;
    const counters = { total_credits: BALANCE, credits_used: service.calls, credits_remaining: BALANCE - service.calls };
    const target = new URL(req.url ?? '/', 'http://x').searchParams.get('url') ?? '';
    const outcome = outcomeOf(Number(/author-(\d+)_/.exec(target)?.[1] ?? 0));
    res.writeHead(outcome === 'notFound' ? 404 : 200, { 'content-type': 'application/json' });
    if (outcome === 'notFound') res.end(JSON.stringify({ message: 'not found' }));
    else if (outcome === 'failed') res.end(JSON.stringify({ status: 'ok', item: {}, ...counters }));
    else res.end(JSON.stringify({ ...postResponse(), ...counters }));
  });
  await new Promise<void>((resolve) => service.server.listen(0, '127.0.0.1', resolve));
  service.url = `http://127.0.0.1:${(service.server.address() as { port: number }).port}`;
  return service;
}

const env = (service: Service) => ({ NETINGEST_API_URL: service.url, NETINGEST_API_TOKEN: TOKEN });

describe.skipIf(!pgClusterUrl)(`plan on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let ws: Workspace;
  let url: string;
  let lite: Service;
  let onPg: Service;
  let postsJob: string;
  let moreJob: string;
  const runOut = (engine: string) => join(ws.dir, `run-bad-${engine}.csv`);

  /** `plan --json` of `jobFile` on `db`, its one report. */
  async function planJson(jobFile: string, db: string, ...flags: string[]): Promise<PlanReport> {
    const result = await inProcess(['plan', jobFile, '--db', db, '--json', ...flags]);
    expect(result.code, result.stderr).toBe(EXIT.ok);
    const reports = JSON.parse(result.stdout) as PlanReport[];
    expect(reports).toHaveLength(1);
    return reports[0]!;
  }

  beforeAll(async () => {
    ws = await makeWorkspace();
    const posts = postUrls(POSTS);
    // Two invalid rows and one duplicate in each input.
    await ws.write('posts.csv', csv(['post_url'], [...posts, 'not a post', posts[0]!, 'no post either'].map((u) => [u])));
    await ws.write('more.csv', csv(['post_url'], [...postUrls(NEW_POSTS, POSTS), ...posts, 'not a post', posts[1]!].map((u) => [u])));
    const common = { operation: 'post-details', rate: FAST_RATE, retry: { ...FAST_RETRY, retries: 1 } };
    postsJob = await ws.job('posts', { ...common, input: { csv: join(ws.dir, 'posts.csv'), column: 'post_url' } });
    moreJob = await ws.job('more', { ...common, input: { csv: join(ws.dir, 'more.csv'), column: 'post_url' } });
    url = await newPgDatabase('plan');
    lite = await startService();
    onPg = await startService();
    // The same run on each engine, through the CLI, with --invalid-out.
    for (const [engine, db, service] of [['sqlite', ws.db, lite], ['postgres', url, onPg]] as const) {
      const run = await inProcess(['run', postsJob, '--db', db, '--invalid-out', runOut(engine)], env(service));
      expect(run.code, `${engine}: ${run.stderr}`).toBe(EXIT.failedItems);
      expect(run.stderr, engine).toContain(`wrote 2 invalid rows of posts to ${runOut(engine)}`);
    }
  }, 60_000);

  afterAll(async () => {
    for (const s of [lite, onPg]) s?.server.close();
    await ws?.cleanup();
  });

  it('the job that ran: every task fresh or failed earlier, no call, the learned cost and last balance: as on SQLite', async () => {
    expect(onPg.calls).toBe(POSTS);
    const report = await planJson(postsJob, url);
    expect(report).toMatchObject({
      tasks: POSTS,
      invalidRows: 2,
      duplicates: 1,
      fresh: expected('done') + expected('notFound'),
      failedBefore: expected('failed'),
      calls: 0,
      costPerCall: 1,
      costLearned: true,
      estimatedCredits: 0,
      lastKnownBalance: BALANCE - onPg.calls,
    });
    expect(report).toEqual(await planJson(postsJob, ws.db));
  });

  it("another job asking the same lookups takes the first job's answers, past the first batch of tasks, as on SQLite", async () => {
    // NETINGEST_DATABASE_URL instead of --db.
    const result = await inProcess(['plan', moreJob, '--json'], { [DATABASE_URL_ENV]: url });
    expect(result.code, result.stderr).toBe(EXIT.ok);
    const report = (JSON.parse(result.stdout) as PlanReport[])[0]!;
    const shared = expected('done') + expected('notFound');
    expect(report).toMatchObject({
      tasks: NEW_POSTS + POSTS,
      invalidRows: 1,
      duplicates: 1,
      fresh: shared,
      // A failure is no answer to take: those are called again, with the new lookups.
      failedBefore: 0,
      calls: NEW_POSTS + expected('failed'),
      estimatedCredits: NEW_POSTS + expected('failed'),
    });
    expect(report).toEqual(await planJson(moreJob, ws.db));
  });

  it('--refresh: every task is a call again, as on SQLite', async () => {
    const report = await planJson(postsJob, url, '--refresh');
    expect(report).toMatchObject({ tasks: POSTS, fresh: 0, failedBefore: 0, calls: POSTS });
    expect(report).toEqual(await planJson(postsJob, ws.db, '--refresh'));
  });

  it('prints the same text report as on SQLite', async () => {
    const onPgText = await inProcess(['plan', postsJob, moreJob, '--db', url]);
    expect(onPgText.code, onPgText.stderr).toBe(EXIT.ok);
    expect(onPgText.stderr).toBe('');
    expect(onPgText.stdout).toBe((await inProcess(['plan', postsJob, moreJob, '--db', ws.db])).stdout);
  });

  it('--invalid-out of plan and of run writes the same CSV on both engines', async () => {
    const planOut = (engine: string) => join(ws.dir, `plan-bad-${engine}.csv`);
    for (const [engine, db] of [['sqlite', ws.db], ['postgres', url]] as const) {
      const result = await inProcess(['plan', postsJob, '--db', db, '--invalid-out', planOut(engine)]);
      expect(result.code, result.stderr).toBe(EXIT.ok);
    }
    const written = readFileSync(planOut('postgres'), 'utf8');
    expect(written.split('\n')[0]).toBe('post_url,netingest_line,netingest_reason');
    expect(written).toMatch(/^not a post,\d+,/m);
    expect(written).toBe(readFileSync(planOut('sqlite'), 'utf8'));
    expect(readFileSync(runOut('postgres'), 'utf8')).toBe(written);
    expect(readFileSync(runOut('sqlite'), 'utf8')).toBe(written);
  });

  it("runs as docs/postgres.md's read-only analyst role", async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    let asAnalyst: string;
    try {
      asAnalyst = await docsAnalystUrl(client, url);
    } finally {
      await client.end();
    }
    expect(await planJson(moreJob, asAnalyst)).toEqual(await planJson(moreJob, url));
  });

  it('an empty database (no netingest schema): planned as if nothing had run, exit 0, and left empty', async () => {
    const empty = await newPgDatabase('plan-empty');
    const result = await inProcess(['plan', postsJob, '--db', empty, '--invalid-out', join(ws.dir, 'empty-bad.csv')]);
    expect(result.code, result.stderr).toBe(EXIT.ok);
    expect(result.stderr).toMatch(/no netingest dataset in postgres:\/\/\S+ yet: planned as if nothing had run/);
    expect(result.stdout).toContain(`at most ${POSTS} calls to make`);
    const json = await planJson(postsJob, empty);
    expect(json).toMatchObject({ tasks: POSTS, fresh: 0, failedBefore: 0, calls: POSTS, costLearned: false, lastKnownBalance: null });
    const client = new pg.Client({ connectionString: empty });
    await client.connect();
    try {
      const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'`);
      expect(rows[0]!.n).toBe(0);
    } finally {
      await client.end();
    }
  });
});

describe('plan on a PostgreSQL server it cannot reach', () => {
  it('says which database it cannot open, with the password hidden, and plans nothing', async () => {
    const jobDir = await makeWorkspace();
    try {
      await jobDir.write('posts.csv', csv(['post_url'], postUrls(2).map((u) => [u])));
      const job = await jobDir.job('posts', { operation: 'post-details', input: { csv: join(jobDir.dir, 'posts.csv'), column: 'post_url' } });
      const result = await inProcess(['plan', job, '--db', 'postgres://analyst:s3cret-pw@127.0.0.1:1/leads']);
      expect(result.code).not.toBe(EXIT.ok);
      expect(result.stderr).toMatch(/cannot open database postgres:\/\/analyst:\*\*\*@127\.0\.0\.1:1\/leads/);
      expect(result.stdout + result.stderr).not.toContain('s3cret-pw');
    } finally {
      await jobDir.cleanup();
    }
  });
});
