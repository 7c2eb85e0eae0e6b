/**
 * `status`'s credit figures from the api_calls rows alone. The credits used between runs and counted by none: a step
 * between runs one after the other, none between workers whose runs overlap (a tester's three workers on PostgreSQL
 * were told of 787 such credits where the sandbox billed every one to a run: a worker stopped early reset the count's
 * starting point). The last known counters: the highest of the last run, whatever order its answers committed in.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/store/open.ts';
import { readSync } from '../../src/store/read-steps.ts';
import { statusReads } from '../../src/store/status.ts';

let dir: string;
let db: Database;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'netingest-uncounted-'));
  db = openDatabase(join(dir, 'a.db'));
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Stores paid calls in this order: [run id, the account's credits_used after it] (each costs 1 credit). */
function calls(list: Array<[number, number]>): void {
  const insert = db.sqlite.prepare(`INSERT INTO api_calls (run_id, operation, method, path, status, total_credits, credits_used, credits_remaining, at)
    VALUES (?, 'post-details', 'GET', '/p', 200, 1000, ?, 1000 - ?, '2026-11-02T08:00:00.000Z')`);
  for (const [run, used] of list) insert.run(run, used, used);
}

const uncounted = () => readSync(db.sqlite, statusReads()).creditsUncountedBetweenRuns;

describe('credits used between runs and counted by none', () => {
  it('runs one after the other: the calls missing between them', () => {
    // Run 2's first answer is the 7th credit: 5 and 6 were paid and never stored (a kill).
    calls([[1, 1], [1, 2], [1, 3], [1, 4], [2, 7], [2, 8], [2, 9]]);
    expect(uncounted()).toBe(2);
  });

  it('workers side by side, one stopped early, then a run after them: none', () => {
    // Runs 1 and 2 interleave; run 2 stops at 6, run 1 goes on alone to 12; run 3 follows with the 13th.
    calls([[1, 1], [2, 2], [1, 3], [2, 4], [1, 5], [2, 6], [1, 7], [1, 8], [1, 9], [1, 10], [1, 11], [1, 12], [3, 13], [3, 14]]);
    expect(uncounted()).toBe(0);
  });

  it('a plan renewed between runs (the count went down): none', () => {
    calls([[1, 5], [1, 6], [2, 1], [2, 2]]);
    expect(uncounted()).toBe(0);
  });
});

describe('the last known counters', () => {
  it('are the last run\'s highest, not its last row: answers commit out of order at concurrency above 1', () => {
    // A clean run at concurrency 8 committed the answer that made the 1,345th credit before the 1,343rd.
    calls([[1, 1340], [1, 1341], [1, 1342], [1, 1345], [1, 1344], [1, 1343]]);
    const status = readSync(db.sqlite, statusReads());
    expect(status.lastCounters).toMatchObject({ creditsUsed: 1345, creditsRemaining: 1000 - 1345 });
  });

  it('after a plan renewed between runs: the last run\'s, though lower', () => {
    calls([[1, 900], [1, 901], [2, 1], [2, 2]]);
    expect(readSync(db.sqlite, statusReads()).lastCounters).toMatchObject({ creditsUsed: 2 });
  });
});
