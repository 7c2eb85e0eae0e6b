/**
 * A real PostgreSQL server for the tests: the machine's own binaries (Debian's `postgresql` package), a new
 * cluster in a temporary folder, listening on a loopback port only. The server refuses to run as root, so as
 * root it runs as the `postgres` user through runuser. fsync is off: a test cluster is thrown away anyway.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface PgCluster {
  /** `postgres://netingest@127.0.0.1:<port>/postgres`: the superuser on the maintenance database. */
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Stops the server as `pg_ctl restart -m fast` does (SIGINT), waits `downMs`, and starts it again on its data. */
  restart(downMs?: number): Promise<void>;
}

const SUPERUSER = 'netingest';

/** The folder holding initdb and postgres, newest major version first; null when none is installed. */
export function findPgBinaries(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0]!, 'bin') : null;
}

/** Why the PostgreSQL tests cannot run here, or null when they can. */
export function pgUnavailableReason(): string | null {
  if (!findPgBinaries()) return 'no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)';
  if (process.getuid?.() === 0) {
    try {
      execFileSync('id', ['-u', 'postgres'], { stdio: 'ignore' });
    } catch {
      return 'running as root and there is no `postgres` user to run the server as';
    }
  }
  return null;
}

function asServerUser(bin: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitUntilAccepting(url: string, child: ChildProcess, log: () => string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`postgres exited with ${child.exitCode}:\n${log()}`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
    try {
      await client.connect();
      await client.end();
      return;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw new Error(`postgres did not accept connections in ${timeoutMs} ms: ${String(err)}\n${log()}`, { cause: err });
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

function signalPostmaster(data: string, signal: NodeJS.Signals): boolean {
  try {
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops a cluster once this process is gone, however it ended (SIGKILL, a crash, a bench whose output went to `head`):
 * a shell waits on a pipe only this process holds, whose end comes with its exit, then shuts the server down fast
 * (SIGINT; SIGKILL after 10 s) and deletes `dir`. Before, each such end left a server running and its folder behind.
 * Detached, so that a terminal's ^C does not end it first. `stop()` kills it before stopping the server itself.
 */
export function startReaper(pidFile: string, dir: string): ChildProcess {
  const script = `read -r _
pid=$(head -n 1 "$1" 2>/dev/null)
if [ -n "$pid" ] && kill -INT "$pid" 2>/dev/null; then
  i=0
  while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  kill -KILL "$pid" 2>/dev/null
fi
rm -rf "$2"`;
  const reaper = spawn('sh', ['-c', script, 'netingest-pg-reaper', pidFile, dir], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  // Neither the shell nor its pipe keeps this process alive: the pipe's end at exit is the signal.
  reaper.unref();
  (reaper.stdin as unknown as { unref(): void }).unref();
  return reaper;
}

/** The cluster's one role that must give a password (none exists until a test creates it). */
export const PASSWORD_ROLE = 'netingest_pw';

/** Creates and starts a throwaway cluster; `stop()` shuts it down and deletes its folder. */
export async function startPgCluster(options: { startTimeoutMs?: number; settings?: string[] } = {}): Promise<PgCluster> {
  const bin = findPgBinaries();
  if (!bin) throw new Error(pgUnavailableReason() ?? 'no PostgreSQL binaries');
  const dir = mkdtempSync(join(tmpdir(), 'netingest-pg-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const [initCmd, initArgs] = asServerUser(join(bin, 'initdb'), ['-D', data, '-U', SUPERUSER, '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  execFileSync(initCmd, initArgs, { stdio: 'pipe' });
  // One role signs in with a password (SCRAM), as on a real server; every other is trusted.
  const hba = join(data, 'pg_hba.conf');
  writeFileSync(hba, `host all ${PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n${readFileSync(hba, 'utf8')}`);

  const port = await freePort();
  const settings = ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`, '-c', 'fsync=off',
    '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200', ...(options.settings ?? []).flatMap((s) => ['-c', s])];
  const [cmd, args] = asServerUser(join(bin, 'postgres'), ['-D', data, '-p', String(port), ...settings]);
  let output = '';
  const serve = () => {
    const started = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    started.stderr?.on('data', (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-4_000);
    });
    return started;
  };
  let child = serve();
  const reaper = startReaper(join(data, 'postmaster.pid'), dir);
  const url = `postgres://${SUPERUSER}@127.0.0.1:${port}/postgres`;
  const restart = async (downMs = 0) => {
    const exited = new Promise((r) => child.once('exit', r));
    if (!signalPostmaster(data, 'SIGINT')) child.kill('SIGINT');
    await exited;
    await new Promise((r) => setTimeout(r, downMs));
    child = serve();
    await waitUntilAccepting(url, child, () => output, options.startTimeoutMs ?? 30_000);
  };
  const stop = async () => {
    reaper.kill('SIGKILL');
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      // runuser does not pass SIGINT on, so the postmaster itself is told: SIGINT is its "fast shutdown".
      if (!signalPostmaster(data, 'SIGINT')) child.kill('SIGINT');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000).unref())]);
      if (child.exitCode === null) {
        signalPostmaster(data, 'SIGKILL');
        child.kill('SIGKILL');
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitUntilAccepting(url, child, () => output, options.startTimeoutMs ?? 30_000);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, port, stop, restart };
}

/**
 * How a test database is copied: FILE_COPY (PostgreSQL 15+) copies the template's files, where the default (WAL_LOG)
 * writes each of its blocks to the WAL: 57 against 140-215 ms of server CPU a database, ~9% of `npm test`'s CPU.
 */
async function copyStrategy(pool: pg.Pool): Promise<string> {
  const { rows } = await pool.query<{ v: string }>('SHOW server_version_num');
  return Number(rows[0]?.v) >= 150000 ? ' STRATEGY FILE_COPY' : '';
}

/**
 * The connection that creates the test databases, one a process and cluster: a connection costs the server a
 * backend's start (~30 ms of CPU on a slow machine), and the suite creates ~190 databases. Idle, it lets the process end.
 */
const creators = new Map<string, { pool: pg.Pool; strategy: Promise<string> }>();

function creatorOf(clusterUrl: string): { pool: pg.Pool; strategy: Promise<string> } {
  let creator = creators.get(clusterUrl);
  if (!creator) {
    const pool = new pg.Pool({ connectionString: clusterUrl, max: 1, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
    // An idle connection whose cluster stopped (the suite's at its end, a bench's): ended without a word.
    pool.on('error', () => undefined);
    creator = { pool, strategy: copyStrategy(pool) };
    // A cluster that could not be asked is asked again by the next call.
    creator.strategy.catch(() => creators.delete(clusterUrl));
    creators.set(clusterUrl, creator);
  }
  return creator;
}

/**
 * A new database on the cluster for one test file; its URL. Empty, or a copy of `template` (a database of the
 * cluster no session is connected to).
 */
export async function createTestDatabase(clusterUrl: string, prefix = 'test', template?: string): Promise<string> {
  const name = `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 10)}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  const { pool, strategy } = creatorOf(clusterUrl);
  await pool.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}${await strategy}`);
  const url = new URL(clusterUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
