/**
 * The report against what its runs did, on both engines: a drift line has a gap on a night its operation had no
 * answer (not 0%), every point it draws is in its table; the pace is measured from send times (arrival less latency),
 * so a run never looks faster than its rate gate let it; a run killed mid-run has its bar in the credits chart, the
 * spend the headline counts for it; and the headline says a run's status in English.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { gatherFigures, writeReport } from '../../src/report/write-report.ts';
import { chartSpecs } from '../../src/report/charts.ts';
import { forEachEngine, type TestDb } from './engines.ts';
import { makeWorkspace } from '../support/run-helpers.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const NOW = new Date('2026-11-05T06:00:00.000Z');
const TOTAL = 1000;
/** The rate the runs recorded, and the gate's spacing of sends at it (rate-gate.ts: the interval and 2% margin). */
const RATE = 600;
const SEND_GAP_MS = (60_000 / RATE) * 1.02;
const LEADS_CALLS = 11;
const POSTS_CALLS = 5;

/**
 * Runs 1-3 completed (posts, run every other night, answered in 1 and 3 only); run 4 was killed after 4 paid calls
 * (still marked running, no end written). Leads' answers arrive bunched: each later send answered sooner.
 */
async function writeRuns(db: TestDb): Promise<void> {
  let used = 0;
  let callId = 0;
  for (let i = 1; i <= 6; i++) {
    const [job, operation] = i <= 3 ? ['leads', 'similar-companies'] : ['posts', 'post-details'];
    await db.run(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, input_line, status, attempts, created_at, updated_at, completed_at, run_id)
      VALUES (?, ?, ?, ?, 1, '{}', ?, 'done', 1, ?, ?, ?, 1)`, i, job, operation, `k${i}`, i + 1, '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z', '2026-11-01T01:00:00.000Z');
  }
  const call = async (runId: number, taskId: number, operation: string, sentMs: number, latencyMs: number, cost: number) => {
    used += cost;
    await db.run(`INSERT INTO api_calls (id, run_id, task_id, operation, method, path, status, latency_ms, total_credits, credits_used, credits_remaining, at)
      VALUES (?, ?, ?, ?, 'POST', '/v1/x', 200, ?, ?, ?, ?, ?)`, ++callId, runId, taskId, operation, latencyMs, TOTAL, used, TOTAL - used, new Date(sentMs + latencyMs).toISOString());
  };
  for (let run = 1; run <= 4; run++) {
    const start = Date.parse(`2026-11-0${run}T01:00:00.000Z`);
    const before = used;
    const leads = run === 4 ? 4 : LEADS_CALLS;
    for (let c = 0; c < leads; c++) await call(run, 1 + (c % 3), 'similar-companies', start + 1000 + c * SEND_GAP_MS, 1000 - c * 80, 1);
    if (run === 1 || run === 3) for (let c = 0; c < POSTS_CALLS; c++) await call(run, 4 + (c % 3), 'post-details', start + 5000 + c * SEND_GAP_MS, 50, 2);
    if (run === 4) {
      await db.run(`INSERT INTO runs (id, jobs, started_at, status, pid, host, tasks_total, calls) VALUES (4, '["leads","posts"]', ?, 'running', 999999, 'gone-host', 6, 0)`,
        new Date(start).toISOString());
      continue;
    }
    await db.run(`INSERT INTO runs (id, jobs, started_at, ended_at, status, exit_code, credits_at_start, credits_at_end, credits_spent, tasks_total, tasks_done, calls, job_rates)
      VALUES (?, '["leads","posts"]', ?, ?, 'completed', 0, ?, ?, ?, 6, 6, ?, ?)`, run, new Date(start).toISOString(), new Date(start + 60_000).toISOString(),
      TOTAL - before, TOTAL - used, used - before, callId, JSON.stringify({ leads: RATE, posts: RATE }));
  }
  // A renamed member in every answer of post-details where it ran; logo null once, in run 2 only.
  for (const run of [1, 3]) {
    await db.run(`INSERT INTO answer_drift (run_id, operation, path, kind, count, seen) VALUES (?, 'post-details', 'author.network_url', 'renamed', ?, ?)`, run, POSTS_CALLS, POSTS_CALLS);
  }
  await db.run(`INSERT INTO answer_drift (run_id, operation, path, kind, count, seen) VALUES (2, 'similar-companies', 'data.logo', 'null', 1, ?)`, LEADS_CALLS);
}

forEachEngine('report of runs that skipped, bunched and died', (engine) => {
  it('draws drift with gaps, pace from send times, and the killed run the headline counts', async () => {
    const ws = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    const db = await engine.open(ws.dir);
    await db.create();
    await writeRuns(db);
    const { figures } = await gatherFigures({ db: db.locator, now: NOW });
    const specs = Object.fromEntries(chartSpecs(figures).map((s) => [s.id, s]));

    // Drift: a gap on the nights post-details had no answer; 0% where similar-companies answered without the member
    // drifting, but a gap for the killed run, which never wrote its drift.
    const lines = (specs.drift!.option.series as Array<{ name: string; data: Array<number | null>; connectNulls: boolean }>);
    const line = (name: string) => lines.find((l) => l.name === name)!;
    expect(line('post-details author.network_url (renamed)')).toMatchObject({ data: [100, null, 100, null], connectNulls: false });
    expect(line('similar-companies data.logo (null)').data).toEqual([0, 9.09, 0, null]);
    // Every point drawn is in the table (figures.drift, as --json prints it).
    for (const series of figures.drift) {
      const drawn = line(`${series.operation} ${series.path} (${series.kind})`).data;
      const tabled = [1, 2, 3, 4].map((id) => series.byRun.find((r) => r.runId === id)?.percent ?? null);
      expect(tabled, series.path).toEqual(drawn);
    }

    // Pace: sends spaced by the gate are at most its rate, though the answers arrived bunched.
    const leads = figures.pace.filter((p) => p.job === 'leads' && p.runId <= 3);
    expect(leads).toHaveLength(3);
    for (const p of leads) {
      expect(p.callsPerMinute!).toBeLessThanOrEqual(RATE);
      expect(p.callsPerMinute!).toBeCloseTo((LEADS_CALLS - 1) / ((LEADS_CALLS - 1) * SEND_GAP_MS / 60_000), 0);
    }

    // The killed run: its bar, the spend the headline counts for it, and marked as unfinished.
    expect(figures.headline.lastRun).toMatchObject({ id: 4, unfinished: true });
    const killed = figures.nights.find((n) => n.runId === 4)!;
    expect(killed).toMatchObject({ status: 'running', unfinished: true, creditsSpent: figures.headline.creditsSpentLastRun });
    expect(killed.creditsSpent).toBeGreaterThan(0);
    const bars = (specs.credits!.option.series as Array<{ type: string; data: number[] }>).filter((s) => s.type === 'bar');
    expect(bars.reduce((n, s) => n + s.data[3]!, 0)).toBe(killed.creditsSpent);
    expect(figures.nights.reduce((n, r) => n + (r.creditsSpent ?? 0), 0)).toBe(figures.headline.creditsSpentAllRuns);
    expect((specs.credits!.option.xAxis as { data: string[] }).data[3]).toBe('2026-11-04 (unfinished)');
    expect(specs.credits!.alt).toContain(`4 runs in the last 30 days spent ${figures.headline.creditsSpentAllRuns} credits`);
    expect(specs.credits!.alt).toContain('run #4 stopped without finishing');
  });

  it('measures the pace from the send times exactly, to the millisecond `at` holds (the same figure on both engines)', async () => {
    const ws = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    const db = await engine.open(ws.dir);
    await db.create();
    await db.run(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, input_line, status, attempts, created_at, updated_at, run_id)
      VALUES (1, 'leads', 'similar-companies', 'k', 1, '{}', 2, 'done', 1, '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z', 1)`);
    await db.run(`INSERT INTO runs (id, jobs, started_at, status, tasks_total, calls) VALUES (1, '["leads"]', '2026-11-01T01:00:00.000Z', 'completed', 1, 2)`);
    // Sent 1 ms apart: SQLite's julianday() is a day count in a double, off by up to 0.05 ms at such dates.
    for (const [id, at] of [[1, '2026-11-01T01:00:01.000Z'], [2, '2026-11-01T01:00:01.001Z']] as const) {
      await db.run(`INSERT INTO api_calls (id, run_id, task_id, operation, method, path, status, latency_ms, at) VALUES (?, 1, 1, 'similar-companies', 'POST', '/v1/x', 200, 0, ?)`, id, at);
    }
    const { figures } = await gatherFigures({ db: db.locator, now: NOW });
    expect(figures.pace.map((p) => p.callsPerMinute)).toEqual([60_000]);
  });

  it('says each stored status as English in the headline', async () => {
    const ws = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    const db = await engine.open(ws.dir);
    await db.create();
    await db.run(`INSERT INTO runs (id, jobs, started_at, ended_at, status, exit_code, credits_spent, tasks_total, tasks_deferred)
      VALUES (61, '["posts"]', '2026-11-04T01:00:00.000Z', '2026-11-04T01:30:00.000Z', 'stopped_credits', 3, 12, 40, 28)`);
    const written = await writeReport({ db: db.locator, outFile: join(ws.dir, 'report.html'), now: NOW });
    const html = readFileSync(written.path, 'utf8');
    expect(html).toContain('Run #61 stopped on credits, exit code');
    expect(html).not.toMatch(/Run #61 stopped credits/);
  });
});
