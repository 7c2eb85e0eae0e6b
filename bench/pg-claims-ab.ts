/**
 * The task claims of two checkouts side by side (issue #27 item 4): each side claims a job's due tasks 64 at a
 * time going forward, as a run does, settles them and gives their inputs back, in turns with the other side,
 * each on its own database of one throwaway cluster with a second job in its ledger (so adopting has one to
 * probe). Per side: the CPU of the backend its claims ran on (/proc: utime + stime, 10 ms ticks) and of this
 * process, per task claimed. Not part of `npm run bench`: a measuring tool.
 * Run: `A=/path/to/other/checkout npx tsx bench/pg-claims-ab.ts` (`TASKS`=20000 a side, `ROUNDS`=4).
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { createTestDatabase, startPgCluster } from '../test/pg/pg-cluster.ts';
import type { createTaskClaims as CreateTaskClaims } from '../src/store/pg/coordination/task-claims.ts';
import type { openPgStore as OpenPgStore } from '../src/store/pg/open.ts';
import type { holdShared as HoldShared } from '../src/store/pg/dataset-lock.ts';

const TASKS = Number(process.env['TASKS'] ?? 20_000);
const ROUNDS = Number(process.env['ROUNDS'] ?? 4);
const JOB = 'claimed';
const CLAIM = 64;

/** CPU (us) of process `pid` so far, from /proc (USER_HZ 100). */
function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** `count` pending tasks of `job`, one to three pages an input (as test/pg/coordination-fixtures.ts plans them). */
async function planTasks(pool: pg.Pool, job: string, count: number): Promise<void> {
  const rows: Array<[string, number]> = [];
  for (let input = 0; rows.length < count; input++) {
    for (let page = 1; page <= (input % 3) + 1 && rows.length < count; page++) rows.push([`in-${String(input).padStart(5, '0')}`, page]);
  }
  await pool.query(`INSERT INTO tasks (job, operation, input_key, page, request_json, created_at, updated_at)
    SELECT $1, 'post-details', k, p, jsonb_build_object('url', k, 'page', p), now(), now() FROM unnest($2::text[], $3::int[]) AS u(k, p)`,
  [job, rows.map((r) => r[0]), rows.map((r) => r[1])]);
}

const load = async <T>(root: string, path: string) => (await import(pathToFileURL(join(root, path)).href)) as T;

const cluster = await startPgCluster();
try {
  const sides = await Promise.all(['A', 'B'].map(async (tag) => {
    const root = resolve(tag === 'A' ? (process.env['A'] ?? '.') : '.');
    const { createTaskClaims } = await load<{ createTaskClaims: typeof CreateTaskClaims }>(root, 'src/store/pg/coordination/task-claims.ts');
    const { openPgStore } = await load<{ openPgStore: typeof OpenPgStore }>(root, 'src/store/pg/open.ts');
    const { holdShared } = await load<{ holdShared: typeof HoldShared }>(root, 'src/store/pg/dataset-lock.ts');
    const url = await createTestDatabase(cluster.url, `claims_${tag.toLowerCase()}`);
    const store = await openPgStore(url);
    await planTasks(store.pool, 'other', 300);
    await planTasks(store.pool, JOB, TASKS);
    await store.pool.query('ANALYZE tasks');
    await store.close();
    const holdPool = new pg.Pool({ connectionString: url, max: 1 });
    holdPool.on('error', () => undefined);
    const hold = await holdShared(holdPool, tag);
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    pool.on('error', () => undefined);
    const backend = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const claims = createTaskClaims(pool, { workerId: `w-${tag}`, leaseMs: 60_000, holderPid: hold.backendPid });
    return { tag, pool, holdPool, hold, backend, claims, after: 0, claimed: 0, serverUs: 0, clientUs: 0, claimUs: [] as number[] };
  }));
  const filter = { job: JOB, runId: null, freshSince: '2000-01-01T00:00:00Z', refresh: false };
  const perRound = Math.floor(TASKS / CLAIM / ROUNDS);
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of sides) Object.assign(s, { claimed: 0, serverUs: 0, clientUs: 0, claimUs: [] });
    for (let i = 0; i < perRound; i++) {
      // A and B swap places every claim: each pair runs in the same moments.
      for (const side of i % 2 === 0 ? sides : [...sides].reverse()) {
        const server = cpuOf(side.backend);
        const client = process.cpuUsage();
        const started = performance.now();
        const rows = await side.claims.claim({ ...filter, afterId: side.after }, CLAIM);
        side.claimUs.push((performance.now() - started) * 1000);
        side.after = Math.max(side.after, ...rows.map((r) => r.id));
        await side.pool.query(`UPDATE tasks SET status = 'done', completed_at = clock_timestamp(), updated_at = clock_timestamp() WHERE id = ANY($1::bigint[])`,
          [rows.map((r) => r.id)]);
        await side.claims.release(JOB, [...new Set(rows.map((r) => r.inputKey))]);
        const used = process.cpuUsage(client);
        side.clientUs += used.user + used.system;
        side.serverUs += cpuOf(side.backend) - server;
        side.claimed += rows.length;
      }
    }
    const figures = sides.map((s) => `${s.tag}: server ${(s.serverUs / s.claimed).toFixed(1)} us a task, client ${(s.clientUs / s.claimed).toFixed(1)}, claim median ${
      [...s.claimUs].sort((a, b) => a - b)[Math.floor(s.claimUs.length / 2)]!.toFixed(0)} us (${s.claimed} tasks)`);
    console.log(`round ${round + 1} (load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}): ${figures.join('; ')}`);
  }
  for (const s of sides) {
    await s.hold.release();
    await s.pool.end();
    await s.holdPool.end();
  }
} finally {
  await cluster.stop();
}
