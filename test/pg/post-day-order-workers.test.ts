/**
 * Two workers' writers learning the posts' day order at once on one PostgreSQL dataset take turns instead of
 * deadlocking. Seen in a two-worker run: one group had filled the ambiguous days and waited to keep its proof in
 * netingest_meta, whose row the other had locked (its first read of the kept order) before filling the same days;
 * the server ended one group as a deadlock, and its run stopped. Here the two transactions are driven step by step in
 * that order, through the same read steps the writer runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openPgStore, type PgStore } from '../../src/store/pg/open.ts';
import { postedOnOf, provenOrders } from '../../src/store/ingest/post-date-order.ts';
import { readPg } from '../../src/store/read-steps.ts';
import { waitFor } from './coordination-fixtures.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const AT = '2026-11-02T08:00:00.000Z';

describe.skipIf(!pgClusterUrl)(`two workers learning the day order${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  let store: PgStore;
  let url: string;

  beforeAll(async () => {
    url = await newMigratedPgDatabase('day-order-workers');
    store = await openPgStore(url);
    // A post stored before either proof: its day is ambiguous (3 April or 4 March), so not filled yet.
    await store.pool.query(`INSERT INTO posts (post_id, url, posted_raw, first_seen_at, updated_at) VALUES ('p1', 'https://www.network.com/posts/p1', '03-04-2026', $1, $1)`, [AT]);
  });
  afterAll(async () => {
    await store?.close();
  });

  it('the second waits for the first to commit, and both commit', async () => {
    const a = new pg.Client({ connectionString: url });
    const b = new pg.Client({ connectionString: url });
    await a.connect();
    await b.connect();
    try {
      await a.query('BEGIN');
      await b.query('BEGIN');
      // B reads the kept order first: nothing kept, so it keeps what the posts prove (nothing).
      const seenByB = await readPg({ client: b }, provenOrders());
      // A brings a post that proves day-first ('25-04-2026'): the ambiguous days are filled, then the proof kept.
      const learning = readPg({ client: a }, postedOnOf({ dmy: false, mdy: false }, '25-04-2026'));
      learning.catch(() => undefined);
      // Once A waits on B (for its turn, or for the row B keeps), B brings the same proof.
      await waitFor(async () => (await store.pool.query(`SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted`)).rows[0].n > 0, 10_000, 'the first worker waiting');
      expect(await readPg({ client: b }, postedOnOf(seenByB, '25-04-2026'))).toBe('2026-04-25');
      await b.query('COMMIT');
      expect(await learning).toBe('2026-04-25');
      await a.query('COMMIT');
    } finally {
      await a.end();
      await b.end();
    }
    const meta = await store.pool.query<{ key: string; value: string }>(`SELECT key, value FROM netingest_meta WHERE key LIKE 'posts_prove_%' ORDER BY key`);
    expect(meta.rows).toEqual([{ key: 'posts_prove_dmy', value: '1' }, { key: 'posts_prove_mdy', value: '0' }]);
    const filled = await store.pool.query<{ posted_on: string }>(`SELECT posted_on::text FROM posts WHERE post_id = 'p1'`);
    expect(filled.rows[0]!.posted_on).toBe('2026-04-03');
  });
});
