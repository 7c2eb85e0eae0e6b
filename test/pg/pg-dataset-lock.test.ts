import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import pg from 'pg';
import { holdExclusive, holdShared, lockHolders } from '../../src/store/pg/dataset-lock.ts';
import { LockedError } from '../../src/store/run-lock.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

const pools: pg.Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
});
function pool(url: string): pg.Pool {
  const p = new pg.Pool({ connectionString: url, max: 4 });
  // An idle pooled connection the server ends (idle_session_timeout below) is dropped, not a crash.
  p.on('error', () => undefined);
  pools.push(p);
  return p;
}

describe.skipIf(!pgClusterUrl)(`the PostgreSQL dataset lock${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('lets workers share it, refuses reprocess while one holds it, and refuses workers while reprocess holds it', async () => {
    const url = await newPgDatabase('dataset_lock');
    const a = pool(url);
    const b = pool(url);
    const w1 = await holdShared(a, 'the dataset');
    const w2 = await holdShared(b, 'the dataset');
    expect(await lockHolders(a)).toEqual(new Set([w1.backendPid, w2.backendPid]));
    await expect(holdExclusive(b, 'the dataset', 'netingest reprocess')).rejects.toBeInstanceOf(LockedError);
    await w1.release();
    await expect(holdExclusive(a, 'the dataset', 'netingest reprocess')).rejects.toThrow(/in use by a running `netingest run`/);
    await w2.release();
    await w2.release();
    const rewrite = await holdExclusive(a, 'the dataset', 'netingest reprocess');
    const refused = await holdShared(b, 'the dataset').catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(LockedError);
    expect(String((refused as Error).message)).toMatch(/being rewritten by `netingest reprocess`/);
    expect(await lockHolders(b)).toEqual(new Set([rewrite.backendPid]));
    await rewrite.release();
    expect(await lockHolders(a)).toEqual(new Set());
    // Nothing leaked: every connection went back to its pool.
    expect(a.totalCount - a.idleCount).toBe(0);
    expect(b.totalCount - b.idleCount).toBe(0);
  });

  it('is let go by the server when its holder is killed with SIGKILL', async () => {
    const url = await newPgDatabase('dataset_lock_kill');
    const holder = spawn(process.execPath, ['-e', `
      const pg = require('pg');
      const c = new pg.Client({ connectionString: process.argv[1] });
      c.connect().then(() => c.query("SELECT pg_advisory_lock_shared(${0x6e657464617461n}::bigint)")).then(() => console.log('held'));
      setInterval(() => {}, 1000);
    `, url], { stdio: ['ignore', 'pipe', 'inherit'], cwd: process.cwd() });
    try {
      await once(holder.stdout!, 'data');
      const p = pool(url);
      expect((await lockHolders(p)).size).toBe(1);
      await expect(holdExclusive(p, 'the dataset', 'netingest prune')).rejects.toBeInstanceOf(LockedError);
      holder.kill('SIGKILL');
      await once(holder, 'exit');
      // The server ends the session once the socket closes; poll rather than sleep a guessed time.
      for (let i = 0; i < 200 && (await lockHolders(p)).size > 0; i += 1) await new Promise((r) => setTimeout(r, 50));
      const rewrite = await holdExclusive(p, 'the dataset', 'netingest prune');
      await rewrite.release();
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('keeps its session through a server idle_session_timeout, which would end an idle holder and its hold', async () => {
    const url = await newPgDatabase('dataset_lock_idle');
    const admin = pool(url);
    const version = Number((await admin.query<{ v: string }>('SHOW server_version_num')).rows[0]!.v);
    if (version < 140000) return; // no idle_session_timeout before PostgreSQL 14
    const db = (await admin.query<{ d: string }>('SELECT current_database() AS d')).rows[0]!.d;
    await admin.query(`ALTER DATABASE "${db}" SET idle_session_timeout = '300ms'`);
    const p = pool(url);
    const held = await holdShared(p, 'the dataset');
    const lost: Error[] = [];
    held.onLost((err) => lost.push(err));
    // Idle for several timeouts: a client polled every 100 ms would notice a dead session well within this.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(lost).toEqual([]);
    expect(await lockHolders(admin)).toEqual(new Set([held.backendPid]));
    await held.release();
  });
});
