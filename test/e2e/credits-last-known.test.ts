/**
 * The "last known balance" that `plan` and `status` show between runs: the lower of credits_remaining and
 * total_credits - credits_used when the service's counters disagree, as the run's credit guard counts it, so
 * that plan never promises credits the run will not spend.
 */
import BetterSqlite3 from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/open.ts';
import { statusReads } from '../../src/store/status.ts';
import { readSync } from '../../src/store/read-steps.ts';
import { planReport } from '../../src/runner/plan-report.ts';
import { FAST_RATE, csv, postUrls, run, useWorkspaces } from '../support/run-helpers.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

const TOKEN = 'last-known-token';
const newWorkspace = useWorkspaces();
const newSandbox = useSandboxes();

describe('last known balance between runs', () => {
  it.each([
    ['credits_remaining is the lower', { remaining: -40, used: 0 }],
    ['total_credits - credits_used is the lower', { remaining: 0, used: 25 }],
  ])('is the lower figure when the counters disagree: %s', async (_name, skew) => {
    const sandbox = await newSandbox({ tokens: { [TOKEN]: 1000 } });
    const ws = await newWorkspace();
    await ws.write('posts.csv', csv(['post_url'], postUrls(3).map((u) => [u])));
    const jobs = await ws.load(await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE }));
    await run(ws, sandbox, TOKEN, jobs);

    // The sandbox's counters agree; skew the last answer's as a service might report them.
    const db = new BetterSqlite3(ws.db);
    const last = db.prepare('SELECT id, total_credits AS total, credits_used AS used, credits_remaining AS remaining FROM api_calls WHERE status = 200 ORDER BY id DESC LIMIT 1').get() as { id: number; total: number; used: number; remaining: number };
    expect(last.remaining).toBe(last.total - last.used);
    db.prepare('UPDATE api_calls SET credits_remaining = credits_remaining + ?, credits_used = credits_used + ? WHERE id = ?').run(skew.remaining, skew.used, last.id);
    db.close();
    const expected = last.remaining + Math.min(skew.remaining, -skew.used);

    expect((await planReport(jobs[0]!, ws.db)).lastKnownBalance).toBe(expected);
    const database = openDatabase(ws.db, { readonly: true });
    try {
      expect(readSync(database.sqlite, statusReads()).lastCounters).toMatchObject({ balance: expected, totalCredits: last.total });
    } finally {
      database.close();
    }
  });
});
