import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type net from 'node:net';
import pg from 'pg';
import { openPgStore, PG_STORE_DEFAULTS, usingPgStore, type PgStore } from '../../src/store/pg/open.ts';
import { cuttableProxy, type CuttableProxy } from './cuttable-proxy.ts';
import { withPgReadSnapshot } from '../../src/store/pg/read-snapshot.ts';
import { DatabaseError } from '../../src/store/errors.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';
import { PASSWORD_ROLE } from './pg-cluster.ts';
import { makeWorkspace, runCli } from '../support/run-helpers.ts';

const opened: PgStore[] = [];
async function open(url: string, options?: Parameters<typeof openPgStore>[1]): Promise<PgStore> {
  const store = await openPgStore(url, options);
  opened.push(store);
  return store;
}
afterAll(async () => {
  await Promise.all(opened.map((s) => s.close()));
});

async function scalar<T>(url: string, sql: string): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return Object.values(((await client.query(sql)).rows[0] ?? {}) as object)[0] as T;
  } finally {
    await client.end();
  }
}

/** A new migrated database behind a proxy that can hold statements (a server that has gone silent). */
async function migratedBehindProxy(prefix: string): Promise<CuttableProxy> {
  const url = await newPgDatabase(prefix);
  await (await openPgStore(url)).close();
  return cuttableProxy(url);
}

/**
 * Holds `waiting`'s statement, then `bounded`'s, sent after it and so silent for less: once `bounded` has ended (its
 * error is returned), `waiting` must still wait; let through, its answer is returned.
 */
async function heldPastAnotherBound<T>(proxy: CuttableProxy, waiting: () => Promise<T>, waitingText: string, bounded: () => Promise<unknown>, boundedText: string) {
  const first = proxy.pauseOnSight(waitingText);
  const long = waiting();
  const letThrough = await first;
  const second = proxy.pauseOnSight(boundedText);
  const short = bounded().then(() => null, (err: unknown) => err);
  await second;
  const ended = await short;
  expect(ended).not.toBeNull();
  expect(await Promise.race([long.then(() => 'answered', () => 'ended'), Promise.resolve('waiting')])).toBe('waiting');
  letThrough();
  return { waited: await long, bounded: ended };
}

describe.skipIf(!pgClusterUrl)(`openPgStore${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('applies the migrations once, even when four workers open a new database at the same moment', async () => {
    const url = await newPgDatabase('open_race');
    const stores = await Promise.all([1, 2, 3, 4].map(() => open(url)));
    expect(stores).toHaveLength(4);
    expect(await scalar<number>(url, 'SELECT count(*)::int FROM public.__drizzle_migrations')).toBeGreaterThanOrEqual(2);
    expect(await scalar<number>(url, "SELECT count(*)::int FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'tasks'")).toBe(1);
    expect(await scalar<string>(url, "SELECT value FROM netingest_meta WHERE key = 'canonical_urls'")).toBe('www');
    // Opening again changes nothing.
    const applied = await scalar<number>(url, 'SELECT count(*)::int FROM public.__drizzle_migrations');
    await open(url);
    expect(await scalar<number>(url, 'SELECT count(*)::int FROM public.__drizzle_migrations')).toBe(applied);
  });

  it('configures the pool: statement timeout, application_name, UTC', async () => {
    const url = await newPgDatabase('open_opts');
    const store = await open(url, { statementTimeoutMs: 1_234 });
    const row = (await store.pool.query("SELECT current_setting('statement_timeout') AS t, current_setting('application_name') AS a, current_setting('TimeZone') AS z")).rows[0];
    expect(row).toEqual({ t: '1234ms', a: 'netingest', z: 'UTC' });
    await expect(store.pool.query('SELECT pg_sleep(5)')).rejects.toThrow(/statement timeout/);
  });

  it('keeps its tables in public and reads values in the default styles, whatever the database or role sets', async () => {
    const url = await newPgDatabase('open_settings');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query('CREATE SCHEMA other');
      const database = `"${new URL(url).pathname.slice(1)}"`;
      for (const setting of ['search_path = other', "datestyle = 'SQL, DMY'", "intervalstyle = 'sql_standard'", 'extra_float_digits = 0',
        "bytea_output = 'escape'", "default_transaction_isolation = 'serializable'", 'standard_conforming_strings = off']) {
        await admin.query(`ALTER DATABASE ${database} SET ${setting}`);
      }
    } finally {
      await admin.end();
    }
    const store = await open(url);
    expect((await store.pool.query('SELECT count(*)::int AS n FROM public.tasks')).rows[0].n).toBe(0);
    expect(await scalar<number>(url, "SELECT count(*)::int FROM information_schema.tables WHERE table_schema = 'other'")).toBe(0);
    const row = (await store.pool.query(`SELECT timestamptz '2026-11-29 14:03:36.744Z' AS at, 0.1::float8 + 0.2::float8 AS sum,
      current_setting('transaction_isolation') AS isolation, current_setting('IntervalStyle') AS intervals, '\\x00ff'::bytea AS bytes,
      'a\\b' AS backslash`)).rows[0];
    expect(row.at.toISOString()).toBe('2026-11-29T14:03:36.744Z');
    expect(row.sum).toBe(0.1 + 0.2);
    expect(row).toMatchObject({ isolation: 'read committed', intervals: 'postgres', bytes: Buffer.from([0, 255]), backslash: 'a\\b' });
    // The URL's own options (a hosted server's, the user's) go with ours, which win the settings they name.
    const withOptions = await open(`${url}?options=${encodeURIComponent('-c work_mem=8MB -c TimeZone=Europe/Paris -c DateStyle=German')}&application_name=x`);
    expect((await withOptions.pool.query("SELECT current_setting('work_mem') AS w, current_setting('TimeZone') AS z, current_setting('DateStyle') AS d")).rows[0])
      .toEqual({ w: '8MB', z: 'UTC', d: 'ISO, MDY' });
  });

  it('refuses, before writing anything, a database not encoded UTF8: text of some answers could not be stored', async () => {
    const admin = new pg.Client({ connectionString: pgClusterUrl! });
    await admin.connect();
    const database = `latin1_${process.pid}`;
    await admin.query(`CREATE DATABASE ${database} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`).finally(() => admin.end());
    const url = new URL(pgClusterUrl!);
    url.pathname = `/${database}`;
    const error = await openPgStore(url.toString()).then(() => null, (err: unknown) => err);
    expect(error).toMatchObject({ code: 'DB_OPEN_FAILED', message: expect.stringMatching(/is encoded LATIN1: .*only UTF8 stores; create the database with ENCODING 'UTF8'/) });
    expect(await scalar<number>(url.toString(), "SELECT count(*)::int FROM information_schema.tables WHERE table_schema = 'public'")).toBe(0);
  });

  it('a database the server runs read-only: says so and where to point --db (DB_READONLY)', async () => {
    const url = await newPgDatabase('open_read_only');
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`ALTER DATABASE "${new URL(url).pathname.slice(1)}" SET default_transaction_read_only = on`).finally(() => admin.end());
    const error = await openPgStore(url).then(() => null, (err: unknown) => err);
    expect(error).toBeInstanceOf(DatabaseError);
    expect(error).toMatchObject({ code: 'DB_READONLY', message: expect.stringMatching(/in a read-only transaction \[25006\]\): the server runs it read-only \(a standby, or default_transaction_read_only.*give --db the primary/) });
  });

  it("counts an extension's objects as no program's: only pg_stat_statements' views, migrated; another program's tables besides, refused naming them", async () => {
    const withExtension = async (prefix: string, sql: string) => {
      const url = await newPgDatabase(prefix);
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      // CREATE EXTENSION needs no shared_preload_libraries (only collecting does): two views in public.
      await admin.query(`CREATE EXTENSION pg_stat_statements; ${sql}`).finally(() => admin.end());
      return url;
    };
    const views = "SELECT count(*)::int FROM pg_views WHERE schemaname = 'public' AND viewname LIKE 'pg_stat_statements%'";
    const url = await withExtension('open_extension', '');
    expect(await scalar<number>(url, views)).toBe(2);
    await open(url);
    expect(await scalar<number>(url, "SELECT count(*)::int FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'tasks'")).toBe(1);
    expect(await scalar<number>(url, views)).toBe(2);

    const tables = ['customers', 'invoices', 'items', 'orders', 'payments', 'refunds'].map((t) => `CREATE TABLE ${t} (id int);`).join(' ');
    const foreign = await withExtension('open_foreign', `${tables} CREATE VIEW customer_names AS SELECT id FROM customers`);
    for (const readOnly of [false, true]) {
      const error = await openPgStore(foreign, { readOnly }).then(() => null, (err: unknown) => err);
      expect(error).toMatchObject({
        code: 'DB_NOT_NETINGEST',
        message: expect.stringMatching(/ holds tables of another program in schema public \(customer_names, customers, invoices, items, orders and 2 more\) but no netingest schema; choose another database$/),
      });
    }
    expect(await scalar<number>(foreign, "SELECT count(*)::int FROM information_schema.tables WHERE table_schema = 'public' AND table_name = 'tasks'")).toBe(0);
  });

  it('has the kernel probe a silent connection (keepalive), so a server cut off without a FIN or RST is found', async () => {
    const store = await open(await newPgDatabase('open_keepalive'));
    const client = await store.pool.connect();
    try {
      const { localPort, remotePort } = (client as unknown as { connection: { stream: net.Socket } }).connection.stream;
      // /proc/net/tcp's "tr:tm->when" of this socket: timer 02 is keepalive's, its time left in clock ticks (1/100 s).
      // Found by both ends and ESTABLISHED (01): an earlier socket on the same local port may linger in TIME_WAIT (03).
      const hex = (n: number | undefined) => `:${n!.toString(16).toUpperCase().padStart(4, '0')}`;
      const line = readFileSync('/proc/net/tcp', 'utf8').split('\n').map((l) => l.trim().split(/\s+/))
        .find((f) => f[1]?.endsWith(hex(localPort)) && f[2]?.endsWith(hex(remotePort)) && f[3] === '01');
      const [timer, ticksLeft] = (line?.[5] ?? 'none:0').split(':');
      expect(timer).toBe('02');
      expect(parseInt(ticksLeft!, 16)).toBeLessThanOrEqual(PG_STORE_DEFAULTS.keepAliveIdleMs / 10);
    } finally {
      client.release();
    }
  });

  it('ends a writer\'s connection that owes an answer the server never sends (cut off silently): DB_CONNECTION_LOST, no hang', async () => {
    const proxy = await migratedBehindProxy('open_silent');
    const store = await openPgStore(proxy.url, { statementTimeoutMs: 200, answerGraceMs: 400 });
    try {
      // The statement reaches the proxy, which holds it: the socket lives, the server never answers.
      const held = proxy.pauseOnSight('SELECT 4242');
      const answer = usingPgStore(store, ({ pool }) => pool.query('SELECT 4242'));
      await held;
      await expect(answer).rejects.toMatchObject({
        code: 'DB_CONNECTION_LOST',
        message: expect.stringMatching(/^lost the connection to database postgres:\/\/.* \(no answer from the server for 1 s \[ETIMEDOUT\]\)/),
      });
    } finally {
      await store.close();
      await proxy.cut();
    }
  });

  it('in pipeline mode (the writer\'s) too; a live server\'s own statement timeout comes first and is not a lost connection', async () => {
    const proxy = await migratedBehindProxy('open_silent_pipeline');
    const store = await open(proxy.url, { statementTimeoutMs: 200, answerGraceMs: 400 });
    await expect(store.pool.query('SELECT pg_sleep(5)')).rejects.toMatchObject({ code: '57014' });
    const client = await store.pool.connect();
    (client as unknown as { pipeline: boolean }).pipeline = true;
    const held = proxy.pauseOnSight('SELECT 4343');
    const answers = [client.query('SELECT 4343'), client.query('SELECT 4344')].map((q) => q.then(() => 'answered', (err: { code?: string }) => err.code));
    await held;
    expect(await Promise.all(answers)).toEqual(['ETIMEDOUT', 'ETIMEDOUT']);
    client.release(new Error('ended'));
    await proxy.cut();
  });

  it('a reader\'s connection too, but not inside a snapshot that lifts the statement timeout (an export\'s long sort)', async () => {
    const proxy = await migratedBehindProxy('open_silent_reader');
    const store = await open(proxy.url, { readOnly: true, statementTimeoutMs: 200, answerGraceMs: 400 });
    const { waited, bounded } = await heldPastAnotherBound(proxy,
      () => withPgReadSnapshot(store.pool, ({ client }) => client.query('SELECT 5151 AS n'), { statementTimeoutMs: 0 }), 'SELECT 5151',
      () => store.pool.query('SELECT 5252'), 'SELECT 5252');
    expect(bounded).toMatchObject({ code: 'ETIMEDOUT', message: 'no answer from the server for 1 s' });
    expect(waited.rows).toEqual([{ n: 5151 }]);
    await proxy.cut();
  });

  it('no bound where the URL sets statement_timeout=0, which node-postgres lets win over the pool\'s', async () => {
    const proxy = await migratedBehindProxy('open_silent_url');
    const unbounded = await open(`${proxy.url}?statement_timeout=0`, { statementTimeoutMs: 200, answerGraceMs: 400 });
    const bounded = await open(proxy.url, { statementTimeoutMs: 200, answerGraceMs: 400 });
    const held = await heldPastAnotherBound(proxy, () => unbounded.pool.query('SELECT 6161 AS n'), 'SELECT 6161', () => bounded.pool.query('SELECT 6262'), 'SELECT 6262');
    expect(held.bounded).toMatchObject({ code: 'ETIMEDOUT' });
    expect(held.waited.rows).toEqual([{ n: 6161 }]);
    await proxy.cut();
  });

  it('a read snapshot\'s statement timeout holds inside it alone: the pooled connection keeps the pool\'s after', async () => {
    const url = await newPgDatabase('open_snapshot_timeout');
    const store = await open(url, { statementTimeoutMs: 1_234 });
    const setting = async (q: pg.Pool | pg.ClientBase) => (await q.query("SELECT current_setting('statement_timeout') AS t")).rows[0].t as string;
    expect(await withPgReadSnapshot(store.pool, (s) => setting(s.client), { statementTimeoutMs: 0 })).toBe('0');
    expect(await withPgReadSnapshot(store.pool, (s) => setting(s.client), { statementTimeoutMs: 60_000 })).toBe('1min');
    expect(await setting(store.pool)).toBe('1234ms');
  });

  it('looks up a password the URL does not give in ~/.pgpass (PGPASSFILE), without node-postgres\'s deprecation warning; says when none is found', async () => {
    const database = `pw_${process.pid}`;
    const admin = new pg.Client({ connectionString: pgClusterUrl! });
    await admin.connect();
    try {
      await admin.query(`DO $$ BEGIN CREATE ROLE ${PASSWORD_ROLE} LOGIN PASSWORD 'pa:ss'; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
      await admin.query(`CREATE DATABASE ${database} OWNER ${PASSWORD_ROLE}`);
    } finally {
      await admin.end();
    }
    const url = new URL(pgClusterUrl!);
    url.username = PASSWORD_ROLE;
    url.pathname = `/${database}`;
    const ws = await makeWorkspace();
    const passwords = join(ws.dir, 'pgpass');
    writeFileSync(passwords, `127.0.0.1:*:${database}:${PASSWORD_ROLE}:pa\\:ss\n`, { mode: 0o600 });
    const none = await runCli(['status', '--db', url.toString()], { cwd: ws.dir, env: { PGPASSFILE: join(ws.dir, 'none'), PGPASSWORD: undefined } });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^netingest: cannot open database .*: the server asks for a password and none was given: put it in the URL, in ~\/\.pgpass/);
    // Signed in: the database is reached, and it holds no dataset yet.
    const found = await runCli(['status', '--db', url.toString()], { cwd: ws.dir, env: { PGPASSFILE: passwords, PGPASSWORD: undefined } });
    expect(found.stderr).toMatch(/^netingest: no netingest dataset in /);
    expect(found.stderr).not.toMatch(/DeprecationWarning|pgpass/);
  });

  it('names the database without its password when it cannot be opened', async () => {
    const url = new URL(pgClusterUrl!);
    url.password = 's3cret-pw';
    url.pathname = '/no_such_database';
    const err = await openPgStore(url.toString()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatabaseError);
    expect((err as DatabaseError).code).toBe('DB_OPEN_FAILED');
    expect((err as Error).message).toContain('no_such_database');
    expect((err as Error).message).toContain('***');
    expect(JSON.stringify(err) + String(err) + (err as Error).stack).not.toContain('s3cret-pw');
  });

  it('sslmode=require: TLS asked for as node-postgres applies it, in one line of error, without its warning on stderr', async () => {
    // Spawned: node-postgres warns once per process. The test cluster speaks no TLS, so the open fails, and says why.
    const url = `${await newPgDatabase('sslmode')}?sslmode=require`;
    const ws = await makeWorkspace();
    try {
      const { code, stderr } = await runCli(['status', '--db', url], { cwd: ws.dir });
      expect(code).toBe(1);
      expect(stderr).toBe(`netingest: cannot open database ${url}: The server does not support SSL connections [DB_OPEN_FAILED]\n`);
    } finally {
      await ws.cleanup();
    }
  });

});
