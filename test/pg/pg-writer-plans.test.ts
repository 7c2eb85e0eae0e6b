/**
 * The run writer's reads and set deletes find rows by their keys even on a table that grew past its statistics: a
 * new dataset's first run, before autovacuum's first ANALYZE. A prepared statement's plan is cached after a few runs;
 * one cached while post_media was small read the whole table for every group (seen: 18-20 ms a statement at 22,000
 * rows), and so did the foreign key's check of each media row's post. The plans the writer's connection holds are
 * read back with EXPLAIN EXECUTE after the table grew.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { openPgStore, type PgStore } from '../../src/store/pg/open.ts';
import { createPgGroupCommit } from '../../src/store/pg/pg-group-commit.ts';
import { withPgClient } from '../../src/store/pg/transaction.ts';
import { writeAsRunWriter } from './run-writer-group.ts';
import type { OutcomeOp } from '../../src/store/outcome-ops.ts';
import { successOp } from '../support/store-helpers.ts';
import { postRequest, postResponse } from '../support/db-fixtures.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const AT = '2026-11-02T08:00:00.000Z';
const activity = (i: number) => `activity-70000000000${1000000 + i}`;

/** Two post answers (tasks `first` and the next), each with its media. */
function twoAnswers(first: number): OutcomeOp[] {
  return [first, first + 1].map((taskId) => successOp({
    taskId, request: { ...postRequest, postUrl: `https://network.com/posts/p_${activity(taskId)}` }, response: postResponse({ PostId: activity(taskId) }), at: AT,
    call: { runId: 1, taskId, operation: 'post-details', method: 'GET', path: `/p/${taskId}`, status: 200, errorCode: null, latencyMs: 1, totalCredits: 100, creditsUsed: 1, creditsRemaining: 99, at: AT },
  }));
}

/** The plan node types of EXPLAIN's JSON, all levels. */
function nodeTypes(plan: { 'Node Type': string; Plans?: unknown[] }): string[] {
  return [plan['Node Type'], ...(plan.Plans ?? []).flatMap((p) => nodeTypes(p as typeof plan))];
}

describe.skipIf(!pgClusterUrl)(`the PostgreSQL writer's plans${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let store: PgStore;

  beforeAll(async () => {
    store = await openPgStore(await newMigratedPgDatabase('writer-plans'));
    // The statistics stay those of the empty tables, as before autovacuum's first pass over a new dataset.
    await store.pool.query('ALTER TABLE posts SET (autovacuum_enabled = false)');
    await store.pool.query('ALTER TABLE post_media SET (autovacuum_enabled = false)');
    await store.pool.query(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, status, attempts, created_at, updated_at)
      SELECT i, 'j', 'post-details', 'k' || i, 1, '{}', 'pending', 0, $1, $1 FROM generate_series(1, 40) i`, [AT]);
  });
  afterAll(async () => {
    await store?.close();
  });

  it('after 20,000 media rows came in, the cached reads and deletes of post_media still go by its key', async () => {
    // Without it the bulk INSERT below took 7.8 s, not 0.4: each row's foreign key check read every post.
    const groups = createPgGroupCommit(1);
    await withPgClient(store.pool, async (client: pg.PoolClient) => {
      // Groups of the same size send the same statements: past five runs, their plan is cached, made on the
      // statistics of a small table (autovacuum's first pass came early).
      for (let first = 1; first <= 20; first += 2) {
        await writeAsRunWriter(groups, client, twoAnswers(first));
        if (first === 3) await store.pool.query('ANALYZE posts, post_media');
      }
      await client.query(`INSERT INTO posts (post_id, url, first_seen_at, updated_at) SELECT 'other-' || i, 'https://www.network.com/posts/other-' || i, $1, $1
        FROM generate_series(1, 10000) i`, [AT]);
      await client.query(`INSERT INTO post_media (post_id, position, url) SELECT 'other-' || i, p, 'https://media.example/' || i || '/' || p
        FROM generate_series(1, 10000) i CROSS JOIN generate_series(0, 1) p`);
      const { rows } = await client.query<{ name: string; statement: string }>(
        `SELECT name, statement FROM pg_prepared_statements WHERE statement LIKE 'SELECT * FROM post_media%' OR statement LIKE 'DELETE FROM post_media%'`);
      expect(rows.map((r) => r.statement.split(' WHERE')[0])).toEqual(expect.arrayContaining(['SELECT * FROM post_media', 'DELETE FROM post_media']));
      for (const { name, statement } of rows) {
        const params = (statement.match(/\$\d+/g) ?? []).map(() => `'other-1'`);
        const explained = await client.query<{ 'QUERY PLAN': [{ Plan: { 'Node Type': string } }] }>(`EXPLAIN (FORMAT JSON) EXECUTE "${name}"(${params.join(', ')})`);
        expect({ statement, nodes: nodeTypes(explained.rows[0]!['QUERY PLAN'][0].Plan) }).not.toMatchObject({ nodes: expect.arrayContaining(['Seq Scan']) });
      }
    });
  });
});
