/**
 * A run killed after hundreds of thousands of paid calls: `status` (and the next run's start, which closes it as
 * abandoned) replays every paid answer's counters to measure its spend. The replay reads them in pages, so a
 * process whose heap could not hold them all still gives the run's figures.
 */
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/open.ts';
import { runCli, useWorkspaces } from '../support/run-helpers.ts';

const CALLS = 300_000;
const newWorkspace = useWorkspaces();

describe('an abandoned run of many calls', () => {
  it('is measured by status within a 40 MB heap', async () => {
    const ws = await newWorkspace();
    const database = openDatabase(ws.db);
    try {
      // A run still marked running whose process is gone (no run lock): status measures it from its calls.
      database.sqlite.exec(`INSERT INTO runs (jobs, started_at, status, pid, host) VALUES ('["big"]', '2026-11-30T01:00:00.000Z', 'running', 2147483646, 'gone-host')`);
      database.sqlite.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${CALLS})
        INSERT INTO api_calls (run_id, operation, method, path, status, latency_ms, total_credits, credits_used, credits_remaining, at)
        SELECT 1, 'post-details', 'POST', '/v1/api/post-details', 200, 50, 10000000, i, 10000000 - i, '2026-11-30T01:30:00.000Z' FROM n`);
    } finally {
      database.close();
    }
    // Every row held at once took ~100 MB of heap (exit 134, heap out of memory).
    const ended = await runCli(['status', '--db', ws.db], { cwd: ws.dir, env: { NODE_OPTIONS: '--max-old-space-size=40' } });
    expect(ended.stderr).toBe('');
    expect(ended.code).toBe(0);
    expect(ended.stdout).toMatch(/Run 1 stopped without finishing/);
    expect(ended.stdout).toMatch(new RegExp(`#1 \\S+ unfinished .* ${CALLS} calls, ${CALLS} credits`));
  }, 120_000);
});
