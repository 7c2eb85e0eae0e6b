/**
 * The writer's settle of a task rewrites no index of `tasks` on PostgreSQL (a HOT update): no index there names a
 * column the settle changes (the (job, status) index is SQLite's only, store/tables.ts), and the table's pages keep
 * room for the new versions (fillfactor, migrations/postgres/0009). An index naming status again, or full pages,
 * would make every settle rewrite all of them: these counts would fall to nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPgStore, type PgStore } from '../../src/store/pg/open.ts';
import { createPgGroupCommit } from '../../src/store/pg/pg-group-commit.ts';
import { writeAsRunWriter } from './run-writer-group.ts';
import { withPgClient } from '../../src/store/pg/transaction.ts';
import type { OutcomeOp } from '../../src/store/outcome-ops.ts';
import { successOp } from '../support/store-helpers.ts';
import { postRequest, postResponse } from '../support/db-fixtures.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const AT = '2026-11-02T08:00:00.000Z';
const TASKS = 400;
const url = (i: number) => `https://www.network.com/posts/some-author_a-title-of-some-length-activity-70000000000${1000000 + i}-abcd`;

function success(taskId: number): OutcomeOp {
  return successOp({
    taskId, request: { ...postRequest, postUrl: url(taskId) }, response: postResponse({ PostId: `activity-70000000000${1000000 + taskId}` }), at: AT,
    call: { runId: 1, taskId, operation: 'post-details', method: 'GET', path: `/p/${taskId}`, status: 200, errorCode: null, latencyMs: 1, totalCredits: 100, creditsUsed: taskId, creditsRemaining: 100, at: AT },
  });
}

describe.skipIf(!pgClusterUrl)(`the PostgreSQL writer's task settles${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let store: PgStore;

  beforeAll(async () => {
    store = await openPgStore(await newMigratedPgDatabase('writer-hot'));
    // Planned as the ledger plans them: a full job's rows, densely, before any settle.
    await store.pool.query(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, input_line, status, attempts, created_at, updated_at, run_id)
      SELECT g, 'j', 'post-details', u, 1, jsonb_build_object('postUrl', u), g, 'pending', 0, $1, $1, 1
      FROM generate_series(1, ${TASKS}) g, LATERAL (SELECT format($2, 1000000 + g) AS u) x`, [AT, url(0).replace('1000000', '%s')]);
  });
  afterAll(async () => {
    await store?.close();
  });

  it('are HOT updates: no index of tasks rewritten', async () => {
    const groups = createPgGroupCommit(1);
    // One session writes every group and flushes its own statistics: a backend sends its counts at most once a
    // second (or 10 s after going idle), and pg_stat_force_next_flush() reaches only the session that calls it.
    await withPgClient(store.pool, async (client) => {
      for (let first = 1; first <= TASKS; first += 16) {
        const ops = Array.from({ length: Math.min(16, TASKS - first + 1) }, (_, i) => success(first + i));
        await writeAsRunWriter(groups, client, ops);
      }
      await client.query('SELECT pg_stat_force_next_flush()');
      await client.query('SELECT 1');
    });
    expect((await store.pool.query(`SELECT count(*)::int AS n FROM tasks WHERE status = 'done'`)).rows[0].n).toBe(TASKS);
    const { rows } = await store.pool.query<{ upd: string; hot: string }>(`SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE relname = 'tasks'`);
    expect(Number(rows[0]!.upd)).toBe(TASKS);
    // Most: a page whose room ran out takes the rest once its dead versions are pruned, which waits on other
    // sessions' snapshots (84% here alone, 73% in a full loaded run, 90-98% in the bench); 37% with full pages
    // and none with an index on status.
    expect(Number(rows[0]!.hot)).toBeGreaterThanOrEqual(TASKS * 0.5);
  });
});
