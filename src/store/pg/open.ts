/** Opens the dataset on PostgreSQL; migrations run under an advisory lock, so workers opening one new database at once do not race. */
import { join } from 'node:path';
import pg from 'pg';
import pgPass from 'pgpass';
import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { PACKAGE_ROOT } from '../../package-root.ts';
import { DatabaseError, DatabaseTooNewError } from '../errors.ts';
import { UsageError } from '../../errors.ts';
import { DRIZZLE_MIGRATIONS_TABLE, RECORD_SCHEMA_VERSION_SQL, schemaVersionOf } from '../migration-state.ts';
import { redactDatabaseUrl } from './database-url.ts';
import { withPgClient } from './transaction.ts';
import { watchAnswers } from './answer-watchdog.ts';
import { schemaUpgraded } from '../../schema-upgrade-notice.ts';
import { LockedError } from '../run-lock.ts';
import { MIGRATION_LOCK_KEY, withDatasetUpgrade } from './dataset-lock.ts';

/** The generated PostgreSQL migrations, in the package (checkout or installed). */
export const PG_MIGRATIONS_FOLDER = join(PACKAGE_ROOT, 'migrations', 'postgres');

/** Everything netingest keeps (tables, views, functions, the migrations record) is in this one schema. */
export const PG_SCHEMA = 'public';

/** Options of openPgStore(), each PG_STORE_DEFAULTS' when not given. */
type PgStoreOptions = { statementTimeoutMs?: number; maxConnections?: number; readOnly?: boolean; answerGraceMs?: number };

export const PG_STORE_DEFAULTS = {
  /** A statement running longer is cancelled by the server. */
  statementTimeoutMs: 60_000,
  /** Connections the pool opens at most. */
  maxConnections: 10,
  /** How long connecting may take before it fails. */
  connectTimeoutMs: 10_000,
  /** How long an idle pooled connection is kept. */
  idleTimeoutMs: 30_000,
  /** Silence on a connection before the kernel's keepalive probes start (their interval and count are the system's). */
  keepAliveIdleMs: 10_000,
  /** Shown in pg_stat_activity. */
  applicationName: 'netingest',
  /** For readers: nothing migrated or written (read-only roles may open it); a missing or mismatched schema refused. */
  readOnly: false,
  /** Silence past statementTimeoutMs (when a live server cancels and says so) that ends a connection (answer-watchdog.ts). */
  answerGraceMs: 30_000,
} as const;

export interface PgStore {
  pool: pg.Pool;
  /** The URL with its password hidden: the only form to show. */
  shownUrl: string;
  close(): Promise<void>;
}

/** Every session's settings, whatever the role or database sets (ALTER ROLE/DATABASE ... SET). */
const SESSION_SETTINGS: Readonly<Record<string, string>> = {
  TimeZone: 'UTC', // as SQLite's times
  // netingest's own locks (migration, rate gate, credit budget) are to be waited for: statement_timeout bounds it.
  lock_timeout: '0',
  search_path: PG_SCHEMA, // statements name tables unqualified
  // node-postgres reads dates, intervals and floats only in the default styles ('SQL, DMY' stored a run as of 1970).
  DateStyle: 'ISO, MDY',
  IntervalStyle: 'postgres',
  extra_float_digits: '1',
  bytea_output: 'hex',
  default_transaction_isolation: 'read committed', // claims and writers are built on it (snapshots set their own)
  standard_conforming_strings: 'on', // a backslash in a literal (a job name `changes` quotes) is a character
};

/**
 * idle_session_timeout off: it would end a session idle between a slow run's statements (the dataset lock's too),
 * stopping the run with its calls in flight paid for nothing. Not a startup option, which servers before 14 refuse.
 */
const IDLE_SESSIONS_KEPT = `SELECT CASE WHEN current_setting('server_version_num')::int >= 140000
  THEN set_config('idle_session_timeout', '0', false) END`;

/**
 * The pool's connections, watched (answer-watchdog.ts). A missing password is looked up in ~/.pgpass (PGPASSFILE), as
 * libpq does: node-postgres 8's lookup warns in every nightly log that pg 9 will stop, and finding none says only
 * "client password must be a string".
 */
class DatasetClient extends pg.Client {
  constructor(config?: pg.ClientConfig & { answerGraceMs?: number }) {
    super(config);
    // As node-postgres resolved it: a statement_timeout in the URL wins over the pool's.
    const timeoutMs = Number((this as unknown as { connectionParameters: { statement_timeout?: unknown } }).connectionParameters.statement_timeout) || 0;
    if (timeoutMs > 0 && config?.answerGraceMs !== undefined) watchAnswers(this, timeoutMs, config.answerGraceMs);
    // A function is asked only when the server asks for a password. The pool does not end a client that failed to
    // connect: destroyed here, its socket does not wait for the server's timeout.
    if (!this.password) {
      (this as { password?: unknown }).password = (params: unknown) =>
        fromPasswordFile(params).catch((err: unknown) => {
          setImmediate(() => this.connection.stream.destroy());
          throw err;
        });
    }
  }
}

const fromPasswordFile = (params: unknown) =>
  new Promise<string>((resolve, reject) => {
    pgPass(params, (password) => {
      if (password !== undefined) resolve(password);
      else reject(new Error('the server asks for a password and none was given: put it in the URL, in ~/.pgpass (or the file PGPASSFILE names) or in PGPASSWORD'));
    });
  });

/** Opens (migrating when needed) the PostgreSQL dataset at `url`. */
export async function openPgStore(url: string, options: PgStoreOptions = {}): Promise<PgStore> {
  const opts = { ...PG_STORE_DEFAULTS, ...options };
  const shownUrl = redactDatabaseUrl(url);
  const pool = new pg.Pool({
    Client: DatasetClient,
    ...connectionOf(url),
    ...{ answerGraceMs: opts.answerGraceMs }, // the pool passes its options on to each new DatasetClient
    max: opts.maxConnections,
    connectionTimeoutMillis: opts.connectTimeoutMs,
    idleTimeoutMillis: opts.idleTimeoutMs,
    statement_timeout: opts.statementTimeoutMs,
    application_name: opts.applicationName,
    // An idle connection (the dataset lock's) to a server cut off without a FIN or RST ends when the probes go
    // unanswered (ETIMEDOUT, so DB_CONNECTION_LOST); one owing an answer ends sooner (answer-watchdog.ts).
    keepAlive: true,
    keepAliveInitialDelayMillis: opts.keepAliveIdleMs,
    // Awaited before the pool hands the connection out.
    onConnect: (client) => client.query(IDLE_SESSIONS_KEPT),
  });
  // A client's error (server restart, session ended) must not crash the process as an unhandled 'error', idle or
  // checked out: the next query on it fails and says why. The pool's own listener covers only idle clients.
  pool.on('error', () => undefined);
  pool.on('connect', (client) => client.on('error', () => undefined));
  try {
    await withPgClient(pool, (client) => (opts.readOnly ? checkReadable(client, shownUrl) : migrateLocked(client, shownUrl)));
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw toPgOpenError(err, shownUrl, passwordOf(url));
  }
  return {
    pool,
    shownUrl,
    async close() {
      if (!pool.ending) await pool.end();
    },
  };
}

/** The dataset for reading: no migration (a read-only role may open it); two connections, the snapshot's and one to cancel its statement. */
export function openPgForReading(url: string): Promise<PgStore> {
  return openPgStore(url, { readOnly: true, maxConnections: 2 });
}

async function migrateLocked(client: pg.PoolClient, shownUrl: string): Promise<void> {
  await refuseNonUtf8(client, shownUrl);
  // Up to date, as nearly every open finds it: no lock, no migrator (9 round trips). A migrator applies all it applies
  // in one transaction, which this read sees whole or not at all; a newer build's is refused here.
  if ((await checkSchemaState(client, shownUrl)) === 0) return;
  // Session-level lock: held across the migrator's own transaction, released below or when the session ends.
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY.toString()]);
  try {
    // Read again under the lock: another process may have migrated meanwhile (null: an empty schema, a new dataset).
    const pending = await checkSchemaState(client, shownUrl);
    if (pending === 0) return;
    // Never under a running worker (an earlier release's would lose its next write): refused while one holds the dataset.
    await withDatasetUpgrade(client, `database ${shownUrl}`, async () => {
      await migrate(drizzle(client), { migrationsFolder: PG_MIGRATIONS_FOLDER, migrationsSchema: PG_SCHEMA, migrationsTable: DRIZZLE_MIGRATIONS_TABLE });
      await client.query(RECORD_SCHEMA_VERSION_SQL.postgres, [schemaVersionOf(readMigrationFiles({ migrationsFolder: PG_MIGRATIONS_FOLDER }))]);
    });
    if (pending !== null) schemaUpgraded(shownUrl);
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY.toString()]).catch(() => undefined);
  }
}

/**
 * Another encoding (LATIN1, SQL_ASCII) refuses some answers' text (names, posts, emoji): a run would pay for answers it
 * cannot store, every night. Writers only: readers may read a dataset an earlier release filled there.
 */
async function refuseNonUtf8(client: pg.PoolClient, shownUrl: string): Promise<void> {
  const encoding = (await client.query<{ e: string }>("SELECT current_setting('server_encoding') AS e")).rows[0]!.e;
  if (encoding === 'UTF8') return;
  throw new DatabaseError(
    'DB_OPEN_FAILED',
    shownUrl,
    `database ${shownUrl} is encoded ${encoding}: answers hold text in any language, which only UTF8 stores; create the ` +
      `database with ENCODING 'UTF8' (CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0) and run there (pg_dump moves a dataset)`,
  );
}

/** A reader's check: the schema is this build's, exactly (an older one is upgraded by a command that writes). */
async function checkReadable(client: pg.PoolClient, shownUrl: string): Promise<void> {
  const pending = await checkSchemaState(client, shownUrl);
  if (pending === null) throw new UsageError(`no netingest dataset in ${shownUrl}: nothing has run yet (see --db)`, 'DB_NOT_FOUND');
  if (pending > 0) {
    throw new DatabaseError('DB_NEEDS_MIGRATION', shownUrl, `${shownUrl} holds a dataset of an older netingest: the next 'netingest run' on it upgrades it in place`);
  }
}

/**
 * The schema's tables and views, as information_schema.tables lists them but read from pg_class: that view's plan
 * reads a dozen catalogs (7 ms of a new session). An extension's own (pg_stat_statements' views) are not another
 * program's: pg_depend's 'e' row, found by its index on (classid, objid), marks them.
 */
const SCHEMA_RELATIONS_SQL = `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'f')
    AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')`;

/** Objects a refusal names: enough for the user to recognise the program, a line however many there are. */
const NAMED_OBJECTS = 5;

function notNetingestError(shownUrl: string, names: string[]): DatabaseError {
  const sorted = names.sort();
  const more = sorted.length > NAMED_OBJECTS ? ` and ${sorted.length - NAMED_OBJECTS} more` : '';
  const found = `${sorted.slice(0, NAMED_OBJECTS).join(', ')}${more}`;
  return new DatabaseError('DB_NOT_NETINGEST', shownUrl,
    `${shownUrl} holds tables of another program in schema ${PG_SCHEMA} (${found}) but no netingest schema; choose another database`);
}

/** Refuses another program's tables and a database a newer netingest migrated, before any change; migrations pending (null: empty schema). */
async function checkSchemaState(client: pg.PoolClient, shownUrl: string): Promise<number | null> {
  const names = new Set((await client.query<{ name: string }>(SCHEMA_RELATIONS_SQL, [PG_SCHEMA])).rows.map((r) => r.name));
  if (names.size === 0) return null;
  if (!names.has(DRIZZLE_MIGRATIONS_TABLE)) throw notNetingestError(shownUrl, [...names]);
  const known = new Set(readMigrationFiles({ migrationsFolder: PG_MIGRATIONS_FOLDER }).map((m) => m.hash));
  const applied = await client.query<{ hash: string; created_at: string }>(
    `SELECT hash, created_at FROM "${PG_SCHEMA}"."${DRIZZLE_MIGRATIONS_TABLE}" ORDER BY created_at`,
  );
  const unknown = applied.rows.filter((r) => !known.has(r.hash)).map((r) => ({ hash: r.hash, createdAt: Number(r.created_at) }));
  if (unknown.length > 0) throw new DatabaseTooNewError(shownUrl, unknown);
  return known.size - new Set(applied.rows.map((r) => r.hash)).size; // each applied one counted once: all are known
}

/**
 * node-postgres applies sslmode=require and prefer as verify-full anyway, with a nine-line warning in every nightly
 * log: named verify-full, the same checks go silently. uselibpqcompat=true (libpq's meanings) is left as written.
 */
function sslModeAsApplied(url: string): string {
  if (/[?&]uselibpqcompat=true(&|#|$)/.test(url)) return url;
  return url.replace(/([?&]sslmode=)(require|prefer)(?=&|#|$)/, '$1verify-full');
}

/**
 * node-postgres lets the URL's parameters win, so an `options` in the URL (a hosted server's `endpoint=...`, the user's
 * -c settings) would drop SESSION_SETTINGS whole: it goes first instead, and each of ours after it wins.
 */
function connectionOf(url: string): { connectionString: string; options: string } {
  const ours = Object.entries(SESSION_SETTINGS).map(([name, value]) => `-c ${name}=${value.replaceAll(' ', '\\ ')}`);
  let theirs: string | null = null;
  const connectionString = sslModeAsApplied(url).replace(/([?&])options=([^&#]*)(&?)/, (_, separator: string, value: string, and: string) => {
    theirs = new URLSearchParams(`options=${value}`).get('options');
    return and ? separator : '';
  });
  return { connectionString, options: [theirs ?? '', ...ours].join(' ').trim() };
}

/** A failure to reach or prepare the database, naming it by its shown URL; the password never appears. */
export function toPgOpenError(err: unknown, shownUrl: string, password: string | null = null): unknown {
  if (err instanceof DatabaseError || err instanceof UsageError || err instanceof LockedError) return err;
  // drizzle's migrator wraps the server's error in its own ("Failed query: CREATE SCHEMA ..."): the cause says why.
  const server = serverErrorOf(err);
  const code = server?.code ?? '';
  const raw = server?.message ?? (err instanceof Error ? err.message : String(err));
  // The driver's own messages do not quote the password; this makes sure none ever does.
  const message = password ? raw.split(password).join('***') : raw;
  const detail = code ? `${message} [${code}]` : message;
  if (code === '42501') {
    return new DatabaseError(
      'DB_READONLY',
      shownUrl,
      `database ${shownUrl}: the role cannot create netingest's tables (${detail}): it needs CREATE on the database and ` +
        `USAGE and CREATE on schema public, or to own the database; see docs/postgres.md, "The role that writes"`,
    );
  }
  return pgReadOnlyError(err, shownUrl) ?? new DatabaseError('DB_OPEN_FAILED', shownUrl, `cannot open database ${shownUrl}: ${detail}`);
}

/**
 * A write the server refused as read-only (SQLSTATE 25006) as DB_READONLY naming the dataset, else null: every
 * command that writes (opening, run, reprocess, prune) says it in these words, whether it failed migrating or later.
 */
export function pgReadOnlyError(err: unknown, shownUrl: string): DatabaseError | null {
  const server = err instanceof DatabaseError ? null : serverErrorOf(err);
  if (server?.code !== '25006') return null;
  return new DatabaseError(
    'DB_READONLY',
    shownUrl,
    `database ${shownUrl} cannot be written (${server.message} [${server.code}]): the server runs it read-only (a standby, or ` +
      'default_transaction_read_only set for the role or database); give --db the primary, or turn the setting off',
    { cause: err },
  );
}

/** Socket errors of a server that went away or cannot be reached (node's codes). */
const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** node-postgres's own words for a connection that ended under it (these errors carry no code). */
const ENDED = /^Connection terminated|^Client has encountered a connection error|^Client was closed and is not queryable/;

/**
 * A server gone away (restart, crash, network cut) as a DB_CONNECTION_LOST naming the dataset, else null: SQLSTATE
 * class 08 or 57P01-57P03 (session ended, server starting up), a socket error, or the driver's connection ended.
 */
export function connectionLostError(err: unknown, shownUrl: string): DatabaseError | null {
  if (err instanceof DatabaseError) return null;
  const code = serverErrorOf(err)?.code ?? '';
  const message = err instanceof Error ? err.message : String(err);
  const lost = code.startsWith('08') || /^57P0[123]$/.test(code) || UNREACHABLE.has(code) || (code === '' && ENDED.test(message));
  if (!lost) return null;
  // node-postgres's own words ("Client has encountered a connection error and is not queryable") say nothing more.
  const said = code ? `${message} [${code}]` : ENDED.test(message) ? 'the connection was closed' : message;
  return new DatabaseError(
    'DB_CONNECTION_LOST',
    shownUrl,
    `lost the connection to database ${shownUrl} (${said}): the server ended the session (a restart, a stop, pg_terminate_backend) or cannot be reached; run the command again once it is back (what was committed before stays)`,
    { cause: err },
  );
}

/** `fn` on `store`, closed after: a server gone meanwhile is a DB_CONNECTION_LOST naming the dataset. */
export async function usingPgStore<T>(store: PgStore, fn: (store: PgStore) => Promise<T>): Promise<T> {
  try {
    return await fn(store);
  } catch (err) {
    throw connectionLostError(err, store.shownUrl) ?? err;
  } finally {
    await store.close();
  }
}

/**
 * The server's refusal of a written value, else null: SQLSTATE 21 (a row changed twice), 22 (out of range, bad bytes),
 * 23 (a constraint), 54 (an index entry too big). GroupCommitWriter.refusedAlone then stores the answer apart.
 */
export function pgRefusal(err: unknown): string | null {
  const server = err instanceof DatabaseError ? null : serverErrorOf(err);
  if (!server || !/^(21|22|23|54)[0-9A-Z]{3}$/.test(server.code)) return null;
  return `${server.message} [${server.code}]`;
}

/** The PostgreSQL error behind `err` (itself, or the cause a wrapper such as drizzle's keeps), or null. */
export function serverErrorOf(err: unknown): { code: string; message: string } | null {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 3; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') return { code, message: e.message };
  }
  return null;
}

function passwordOf(url: string): string | null {
  try {
    const parsed = new URL(url);
    return parsed.password ? decodeURIComponent(parsed.password) : parsed.searchParams.get('password');
  } catch {
    return null;
  }
}
