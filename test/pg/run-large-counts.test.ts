/**
 * Counts past a 32-bit integer in an answer (reactions, comments; a garbled or hostile service's): read as NULL on
 * both engines and counted as drift. PostgreSQL's integer column refused them, so the run stopped with its answers
 * paid and lost, night after night, while SQLite stored them.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { loadJob } from '../../src/jobs/load.ts';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { postResponse } from '../support/db-fixtures.ts';
import { forEachEngine } from './engines.ts';
import { useFakeServices } from '../support/sandbox-helpers.ts';
import { opsWorkspace, type OpsWorkspace } from '../soak/ops-fixture.ts';

const TOKEN = 'large-counts-token-0001';
const POSTS = 3;
let ws: OpsWorkspace;
const startFake = useFakeServices();

beforeEach(async () => {
  ws = await opsWorkspace({ posts: POSTS, retries: 1 });
});
afterEach(() => ws.cleanup());

/** Post answers whose engagement counts are past 2^31 - 1 (what a PostgreSQL `integer` holds). */
async function startLargeCounts(): Promise<string> {
  let used = 0;
  return startFake((req, res) => {
    if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
    used += 1;
    const base = postResponse({ total_credits: 100, credits_used: used, credits_remaining: 100 - used } as never);
    const body = JSON.stringify({ ...base, engagement: { reactions: 3_000_000_000, comments_count: 2 ** 40 } });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
}

forEachEngine('answers holding counts past a 32-bit integer', (engine) => {
  it('are read as NULL and counted as drift alike on both engines, and the run completes', async () => {
    const baseUrl = await startLargeCounts();
    const db = await engine.open(ws.dir);
    const job = await loadJob(ws.postsJob, { cwd: ws.dir });
    const summary = await runJobs({ dbPath: db.locator, jobs: [job], api: { baseUrl, token: TOKEN } });
    expect(summary.status).toBe('completed');
    expect(summary.jobs[0]).toMatchObject({ done: POSTS, failed: 0 });
    const posts = await db.rows<{ reactions: number | string | null; comments: number | string | null }>('SELECT reactions, comments_count AS comments FROM posts');
    expect(posts).toEqual(Array.from({ length: POSTS }, () => ({ reactions: null, comments: null })));
    expect(summary.drift.map((d) => d.message)).toContainEqual(expect.stringMatching(/engagement\.reactions: of another type in 3\/3 \(number 3000000000\), stored as NULL/));
  }, 60_000);
});
