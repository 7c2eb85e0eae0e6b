/**
 * Upgrading a PostgreSQL dataset is refused while a worker holds it: an earlier release's run on the old schema would
 * fail its next write ("cached plan must not change result type") and lose the answer it paid for. Workers of this
 * release starting at once on an old dataset still all open it (one migrates, the others wait), and one opening it
 * just as the upgrade commits waits for the upgrade to let go rather than being refused.
 */
import { afterAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { openStore } from '../../src/store/open-store.ts';
import { knownMigrations } from '../../src/store/migration-state.ts';
import { PG_MIGRATIONS_FOLDER } from '../../src/store/pg/open.ts';
import { holdExclusive, holdShared, MIGRATION_LOCK_KEY } from '../../src/store/pg/dataset-lock.ts';
import { EXIT } from '../../src/cli/exit-codes.ts';
import { inProcess } from '../support/run-helpers.ts';
import { newMigratedPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const pools: pg.Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});

function poolOf(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  pools.push(pool);
  return pool;
}

const LAST_COLUMNS = `SELECT count(*)::int AS n FROM information_schema.columns WHERE table_name = 'account_balance' AND column_name = 'credits_counted_from'`;
const RECORDS = 'SELECT count(DISTINCT hash)::int AS n FROM __drizzle_migrations';
const count = async (pool: pg.Pool, sql: string) => (await pool.query<{ n: number }>(sql)).rows[0]!.n;

/** A dataset of the release before the last migration (its change undone, its record gone), and a pool on it. */
async function olderDataset(): Promise<{ url: string; pool: pg.Pool }> {
  const url = await newMigratedPgDatabase('upgrade_worker');
  const pool = poolOf(url);
  await pool.query('ALTER TABLE account_balance DROP COLUMN credits_counted_from');
  await pool.query('DELETE FROM __drizzle_migrations WHERE created_at = (SELECT max(created_at) FROM __drizzle_migrations)');
  return { url, pool };
}

/** Opens `url` as a worker of this release does, and lets it go at once; the error's code when refused. */
async function openAsWorker(url: string): Promise<string> {
  try {
    const run = await (await openStore(url)).openRun({});
    await run.hold.release();
    await run.close();
    return 'opened';
  } catch (err) {
    return String((err as { code?: unknown }).code ?? err);
  }
}

describe.skipIf(!pgClusterUrl)(`upgrading a dataset a worker holds${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it.concurrent("is refused while a worker (an earlier release's run) holds it: LOCKED, naming what to do, nothing changed; upgraded once it ends", async () => {
    const { url, pool } = await olderDataset();
    const latest = knownMigrations(PG_MIGRATIONS_FOLDER).length;
    // The earlier release's run: its hold is this build's (same key), taken the same way.
    const olderRun = await holdShared(poolOf(url), 'the older run');
    expect(await openAsWorker(url)).toBe('LOCKED');
    const pruned = await inProcess(['prune', '--db', url]);
    expect(pruned.code).toBe(EXIT.locked);
    expect(pruned.stderr).toContain('stop the running netingest workers, or wait for them to finish, then run again: the next run upgrades it in place');
    expect(pruned.stderr).toContain(`${olderRun.backendPid}`);
    expect(pruned.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(await count(pool, LAST_COLUMNS)).toBe(0);
    expect(await count(pool, RECORDS)).toBe(latest - 1);
    await olderRun.release();
    expect(await openAsWorker(url)).toBe('opened');
    expect(await count(pool, LAST_COLUMNS)).toBe(1);
    expect(await count(pool, RECORDS)).toBe(latest);
  });

  it.concurrent('lets several workers of this release open an older dataset at once: one upgrades it, none is refused', async () => {
    const { url, pool } = await olderDataset();
    expect(await Promise.all(Array.from({ length: 4 }, () => openAsWorker(url)))).toEqual(Array(4).fill('opened'));
    expect(await count(pool, LAST_COLUMNS)).toBe(1);
    expect(await count(pool, RECORDS)).toBe(knownMigrations(PG_MIGRATIONS_FOLDER).length);
  });

  it.concurrent('a worker finding the dataset upgraded while the upgrade still holds it waits for it to let go, rather than being refused', async () => {
    const url = await newMigratedPgDatabase('upgrade_worker');
    const pool = poolOf(url);
    // An upgrade just committed, as the migrator holds it: the migration lock, and the dataset lock exclusive.
    const migrator = await pool.connect();
    await migrator.query('SELECT pg_advisory_lock($1::bigint)', [MIGRATION_LOCK_KEY.toString()]);
    const upgrade = await holdExclusive(pool, 'the upgrade', 'upgrade');
    const worker = openAsWorker(url);
    // The worker waits on the migration lock (its lock not granted yet), then opens once both are let go.
    for (let end = Date.now() + 30_000; ; await new Promise((r) => setTimeout(r, 20))) {
      const waiting = await count(pool, `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`);
      if (waiting > 0) break;
      expect(await Promise.race([worker, Promise.resolve('waiting')])).toBe('waiting');
      if (Date.now() > end) throw new Error('the worker never waited for the upgrade');
    }
    await upgrade.release();
    await migrator.query('SELECT pg_advisory_unlock($1::bigint)', [MIGRATION_LOCK_KEY.toString()]);
    migrator.release();
    expect(await worker).toBe('opened');
  });
});
