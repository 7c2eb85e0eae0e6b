/**
 * Two runs working one account at once (workers on PostgreSQL): the account's counters between two answers of
 * one run hold the other's calls too. `status` (and the closing of an abandoned run) must count each run's own
 * credits, which add up to what was billed, on both engines.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { forEachEngine, type TestEngine } from './engines.ts';
import { openDatabase } from '../../src/store/open.ts';
import { openPgStore } from '../../src/store/pg/open.ts';
import { statusReport } from '../../src/runner/status-report.ts';

const dir = mkdtempSync(join(tmpdir(), 'netingest-interleaved-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const CALLS = 20;
const COST = 3;

/**
 * Run 3 finished earlier and learned the cost (3 calls of 3, ending at credits_used 100); runs 1 and 2, both still
 * marked running, then took turns: 20 paid calls of 3 credits, 60 billed.
 */
function plant(): Array<[string, unknown[]]> {
  const out: Array<[string, unknown[]]> = [];
  const started = '2026-01-01T00:00:00.000Z';
  out.push([`INSERT INTO runs (id, jobs, started_at, ended_at, status, pid, host, credits_spent, calls)
    VALUES (3, '["posts"]', '2025-12-31T00:00:00.000Z', '2025-12-31T00:01:00.000Z', 'completed', 1, 'elsewhere', 9, 3)`, []]);
  for (const used of [94, 97, 100]) {
    out.push([
      `INSERT INTO api_calls (run_id, operation, method, path, status, latency_ms, total_credits, credits_used, credits_remaining, at)
        VALUES (3, 'post-details', 'GET', '/post-details', 200, 10, 10000, ?, ?, '2025-12-31T00:00:30.000Z')`,
      [used, 10_000 - used],
    ]);
  }
  for (const id of [1, 2]) {
    out.push([`INSERT INTO runs (id, jobs, started_at, status, pid, host) VALUES (?, '["posts"]', ?, 'running', 1, 'elsewhere')`, [id, started]]);
  }
  for (let i = 0; i < CALLS; i++) {
    const used = 100 + COST * (i + 1);
    out.push([
      `INSERT INTO api_calls (run_id, operation, method, path, status, latency_ms, total_credits, credits_used, credits_remaining, at)
        VALUES (?, 'post-details', 'GET', '/post-details', 200, 10, 10000, ?, ?, ?)`,
      [(i % 2) + 1, used, 10_000 - used, new Date(Date.parse(started) + (i + 1) * 1000).toISOString()],
    ]);
  }
  return out;
}

async function planted(engine: TestEngine, name: string): Promise<string> {
  const { locator } = await engine.open(dir, `${name}.db`);
  if (engine.name === 'sqlite') {
    const database = openDatabase(locator);
    for (const [sql, params] of plant()) database.sqlite.prepare(sql).run(...params);
    database.close();
  } else {
    const store = await openPgStore(locator);
    for (const [sql, params] of plant()) {
      let n = 0;
      await store.pool.query(sql.replace(/\?/g, () => `$${++n}`), params);
    }
    await store.close();
  }
  return locator;
}

forEachEngine('status of runs whose paid calls interleave', (engine) => {
  it("counts each run's own credits, which add up to what was billed", async () => {
    const db = await planted(engine, 'interleaved');
    const report = await statusReport({ db, runs: 10 });
    const spent = new Map(report.runs.map((r) => [r.id, (r as { creditsSpent?: number | null }).creditsSpent]));
    expect(spent.get(1)).toBe((CALLS / 2) * COST);
    expect(spent.get(2)).toBe((CALLS / 2) * COST);
    expect(report.creditsSpentAllRuns).toBe(9 + CALLS * COST);
  });
});
