/**
 * The PostgreSQL writer's round trips per group commit do not grow with the group: a group of 40 answers (their
 * posts, media sets, raw bodies, api_calls rows, tasks settled, failed attempts) is sent in as many
 * queries as a group of 2: two, the history's reads and then the rest; and the run's writer sends a group in two
 * bursts, its rows going behind its reads without waiting for them. The round
 * trips are counted on the connection the group is written on (a wrapped client): queries sent in one synchronous
 * turn go out together (the writer pipelines its statements), so each such burst is one round trip.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type pg from 'pg';
import { openPgStore, type PgStore } from '../../src/store/pg/open.ts';
import { createPgGroupCommit } from '../../src/store/pg/pg-group-commit.ts';
import { writeAsRunWriter } from './run-writer-group.ts';
import { withPgClient } from '../../src/store/pg/transaction.ts';
import type { OutcomeOp } from '../../src/store/outcome-ops.ts';
import type { ApiCallRow } from '../../src/store/api-calls.ts';
import { requestKeyOf } from '../../src/operations/index.ts';
import { readOperationAnswer, successOp } from '../support/store-helpers.ts';
import { postRequest, postResponse } from '../support/db-fixtures.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const AT = '2026-11-02T08:00:00.000Z';
const activity = (i: number) => `activity-70000000000${1000000 + i}`;

function call(taskId: number, status: number): ApiCallRow {
  return { runId: 1, taskId, operation: 'post-details', method: 'GET', path: `/p/${taskId}`, status, errorCode: null, latencyMs: 1, totalCredits: 100, creditsUsed: taskId, creditsRemaining: 100 - taskId, at: AT };
}

/** Per task: an answer (post, media, raw body, api_calls row, task done), and every third task a failure too. */
function group(firstTask: number, count: number): OutcomeOp[] {
  return Array.from({ length: count }, (_, i): OutcomeOp[] => {
    const taskId = firstTask + i;
    const request = { ...postRequest, postUrl: `https://network.com/posts/p_${activity(taskId)}` };
    const success = successOp({ taskId, request, response: postResponse({ PostId: activity(taskId) }), call: call(taskId, 200), at: AT });
    return taskId % 3 === 0 ? [{ kind: 'attempt_failed', call: call(taskId, 500) }, success] : [success];
  }).flat();
}

describe.skipIf(!pgClusterUrl)(`the PostgreSQL writer's round trips${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let store: PgStore;

  beforeAll(async () => {
    store = await openPgStore(await newMigratedPgDatabase('writer-round-trips'));
    for (let id = 1; id <= 100; id++) {
      await store.pool.query(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, status, attempts, created_at, updated_at)
        VALUES ($1, 'j', 'post-details', $2, 1, '{}', 'pending', 0, $3, $3)`, [id, `k${id}`, AT]);
    }
  });
  afterAll(async () => {
    await store?.close();
  });

  /** One run's writer of groups. */
  const groups = createPgGroupCommit(1);

  /** `client` with its round trips counted in `count.queries`: the queries sent in one synchronous turn count once. */
  function counted(client: pg.PoolClient, count: { queries: number }): pg.PoolClient {
    let burst = false;
    const sent = () => {
      if (burst) return;
      burst = true;
      count.queries++;
      queueMicrotask(() => (burst = false));
    };
    return new Proxy(client, {
      get(target, prop) {
        if (prop === 'query') return (...args: unknown[]) => (sent(), (target.query as (...a: unknown[]) => unknown)(...args));
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    }) as pg.PoolClient;
  }

  /** Writes `ops` as the run's writer writes a group, in its own transaction, on a client whose queries are counted (BEGIN and COMMIT too); the count. */
  async function queriesOf(ops: OutcomeOp[]): Promise<number> {
    const count = { queries: 0 };
    await withPgClient(store.pool, (client) => writeAsRunWriter(groups, counted(client, count), ops));
    return count.queries;
  }

  it('a group of 40 answers takes as many queries as a group of 2, and all of it is stored', async () => {
    // The dataset's day order is read once per writer, by its first group: a group before both, so neither pays it.
    await queriesOf(group(1, 1));
    const small = await queriesOf(group(2, 2));
    const large = await queriesOf(group(4, 40));
    expect(large).toBe(small);
    // BEGIN with what the history holds for the group's posts and their media (one read per table, folded into one
    // query), the rows behind them (the raw bodies' ids come back), then COMMIT with the history's rows; committed.
    expect(large).toBe(3);
    expect(await queriesOf(group(44, 40))).toBe(3);
    const open = await store.pool.connect();
    try {
      expect((await open.query<{ n: string }>('SELECT count(*) AS n FROM raw_responses')).rows[0]!.n).toBe('83');
    } finally {
      open.release();
    }
    const count = async (sql: string) => Number((await store.pool.query<{ n: string }>(sql)).rows[0]!.n);
    expect(await count(`SELECT count(*) AS n FROM tasks WHERE status = 'done'`)).toBe(83);
    expect(await count('SELECT count(*) AS n FROM raw_responses')).toBe(83);
    expect(await count('SELECT count(*) AS n FROM api_calls')).toBe(83 + 27);
    expect(await count('SELECT count(*) AS n FROM posts')).toBe(83);
    expect(await count('SELECT count(DISTINCT post_id) AS n FROM post_media')).toBe(83);
  });

  it('the run writer\'s group goes in three sends, its rows before its reads are answered, and its reads see the group before', async () => {
    const count = { queries: 0 };
    const first = groups.plan(group(84, 5));
    const second = groups.plan(group(89, 5));
    const readBack = groups.plan(group(84, 1));
    await withPgClient(store.pool, async (client) => {
      const c = counted(client, count);
      (client as unknown as { pipeline: boolean }).pipeline = true;
      try {
        // BEGIN and the reads, then the rows before the reads are answered: the server writes them meanwhile.
        const started = groups.start(c, first);
        const read = await started.reads;
        expect(count.queries).toBe(2);
        expect(read.map((rows) => rows.length)).toEqual([0, 0]);
        const { committed } = await started.commit(read);
        // The second group starts as the first's COMMIT is sent, before it is answered.
        const next = groups.start(c, second);
        await committed;
        await (await next.commit(await next.reads)).committed;
        // A group after them reads what the first wrote: its post and its media.
        const again = groups.start(c, readBack);
        const seen = await again.reads;
        expect(seen[0]!.length).toBe(1);
        expect(seen[1]!.length).toBeGreaterThan(0);
        await (await again.commit(seen)).committed;
      } finally {
        (client as unknown as { pipeline: boolean }).pipeline = false;
      }
    });
    // Per group: the reads, the rows, then the history's rows with COMMIT.
    expect(count.queries).toBe(9);
    const posts = await store.pool.query<{ n: string }>('SELECT count(*) AS n FROM posts');
    expect(Number(posts.rows[0]!.n)).toBe(93);
    const added = await store.pool.query<{ n: string }>(`SELECT count(*) AS n FROM changes WHERE entity = 'post' AND change = 'added' AND task_id BETWEEN 84 AND 93`);
    expect(Number(added.rows[0]!.n)).toBe(10);
  });

  it('a group whose answer reads back a post the group wrote, before anything else was read: one BEGIN, ahead of the flushed rows', async () => {
    await queriesOf(group(94, 1)); // the dataset's day order read, as by an earlier group: this one reads nothing first
    const asked = { ...postRequest, postUrl: 'https://network.com/pulse/an-article' };
    const response = postResponse({ PostId: activity(95) });
    const { answer, setAside } = readOperationAnswer('post-details', response);
    // Task 96's answer names task 95's post: it is read back, so the batch holding that post is flushed first.
    const readBack: OutcomeOp = {
      kind: 'success', taskId: 96, operation: 'post-details', requestKey: requestKeyOf(asked), request: asked, body: JSON.stringify(response), answer, setAside, call: call(96, 200), attempts: 1, at: AT,
    };
    const notices: string[] = [];
    await withPgClient(store.pool, async (client) => {
      const onNotice = (n: { message?: string }) => notices.push(n.message ?? '');
      client.on('notice', onNotice);
      try {
        await writeAsRunWriter(groups, client, [...group(95, 1), readBack]);
      } finally {
        client.off('notice', onNotice);
      }
    });
    // A BEGIN per flushed statement drew 'there is already a transaction in progress' from the server.
    expect(notices).toEqual([]);
    const { rows } = await store.pool.query<{ url: string }>('SELECT url FROM posts WHERE post_id = $1', [activity(95)]);
    expect(rows.map((r) => r.url)).toEqual([`https://www.network.com/posts/p_${activity(95)}`]);
    const anomalies = await store.pool.query<{ kind: string }>(`SELECT a.kind FROM answer_anomalies a WHERE a.task_id = 96`);
    expect(anomalies.rows.map((r) => r.kind)).toEqual(['other_post']);
  });
});
