/**
 * Where PostgreSQL's time goes per stored answer (issue #27 item 4): one run of `N` post lookups (after 1,000
 * untimed) into a throwaway cluster with pg_stat_statements, printing the client's CPU (this process, and how long its
 * main thread waited for a CPU), the server's CPU (the cluster's processes, from /proc), the pg client's queries
 * (round trips) and the server's statements grouped by what sent them, with the costliest. Not part of
 * `npm run bench`: a measuring tool.
 * Run: `npx tsx bench/pg-profile.ts` (N=3000 by default; `N=10000 npx tsx bench/pg-profile.ts`; `CPU_PROF=file.cpuprofile`
 * writes a V8 profile of the timed run alone, `HEAP_PROF=file.heapprofile` a sampled profile of what it allocates (garbage included), `TOP=30` lists more statements, `CONCURRENCY=32` the job's concurrency (16), `EXPERIMENT_SQL='...'` runs SQL on
 * the dataset between the warm-up and the timed run: an index or storage setting tried before it is migrated; `WARM=10000` the
 * untimed warm-up's lookups (1,000); `LITE=1` the same runs on a SQLite file instead (no server figures), to compare;
 * `PG_SETTINGS='log_connections=on;...'` adds server settings; `NO_COUNT=1` leaves the pg client unwrapped, so the client CPU is the run's alone; `BY_PROCESS=1` lists the server's CPU
 * by cluster process, each backend named by what its sessions were seen running).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { runJobs } from '../src/runner/run-jobs.ts';
import { startSandboxProcess } from '../test/soak/sandbox-process.ts';
import { makeJob, postUrl, writeUrlCsv } from '../test/soak/inputs.ts';
import { createTestDatabase, startPgCluster } from '../test/pg/pg-cluster.ts';
import { PIPELINE_TOKEN } from './pipeline.bench.ts';
import { clusterCpuMs, mainThreadSchedMs, postmasterOf, threadCpuMs } from './cpu-meter.ts';
import { startProcessSampler } from './pg-process-cpu.ts';

const N = Number(process.env['N'] ?? 3000);


/** Counts the pg client's queries by their first words while `counting`, and its round trips (`trips`). */
const queries = new Map<string, number>();
const waited = new Map<string, number>();
let counting = false;
/** Queries a client sends in one synchronous turn go out together (the writer pipelines a group's): one round trip. */
let trips = 0;
const inBurst = new WeakSet<object>();
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
(pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function (this: pg.Client, ...args: unknown[]) {
  const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
  if (!counting || process.env['NO_COUNT'] || typeof text !== 'string') return query.apply(this, args);
  if (!inBurst.has(this)) {
    trips += 1;
    inBurst.add(this);
    queueMicrotask(() => inBurst.delete(this));
  }
  const label = text.replace(/\s+/g, ' ').slice(0, 70);
  queries.set(label, (queries.get(label) ?? 0) + 1);
  const started = performance.now();
  const result = query.apply(this, args);
  // How long each kind of query keeps its caller waiting (from the call to its answer, queueing on the client included).
  if (result instanceof Promise) void result.finally(() => waited.set(label, (waited.get(label) ?? 0) + performance.now() - started)).catch(() => undefined);
  return result;
};

/** What sent a statement, by the tables it names. */
function senderOf(q: string): string {
  if (/pg_advisory_xact_lock/.test(q)) return 'advisory lock waits (credit budget, rate gate)';
  if (/rate_slots/.test(q)) return 'rate gate';
  if (/credit_|account_balance/.test(q)) return 'credit budget';
  if (/worker_task_leases|WITH RECURSIVE names/.test(q)) return 'claims, leases, adopting';
  if (/^(BEGIN|COMMIT)/.test(q)) return 'BEGIN/COMMIT';
  if (/raw_responses|posts|post_media|changes|api_calls|answer_anomalies|UPDATE tasks AS t/.test(q)) return 'writer';
  return 'other';
}

const cluster = await startPgCluster({ settings: [...(process.env['PG_EXPLAIN'] ? [`auto_explain.log_min_duration=${process.env['PG_EXPLAIN_MS'] ?? 2}`, 'auto_explain.log_analyze=on', 'auto_explain.log_nested_statements=on', 'logging_collector=on', `log_directory=${process.env['PG_EXPLAIN']}`] : []), `shared_preload_libraries=pg_stat_statements${process.env['PG_EXPLAIN'] ? ',auto_explain' : ''}`, 'pg_stat_statements.track=all', 'pg_stat_statements.track_planning=on', ...(process.env['PG_SETTINGS']?.split(';').filter(Boolean) ?? [])] });
const postmaster = postmasterOf(cluster.port);
const sandbox = await startSandboxProcess(['--quiet', '--token', PIPELINE_TOKEN, '--credits', '1000000000']);
const dir = mkdtempSync(join(tmpdir(), 'netingest-pg-profile-'));
const admin = new pg.Client({ connectionString: cluster.url });
admin.on('error', () => undefined);
try {
  const dbUrl = await createTestDatabase(cluster.url, 'profile');
  const db = new URL(dbUrl).pathname.slice(1);
  await admin.connect();
  // In the maintenance database: a netingest dataset refuses tables it did not make.
  await admin.query('CREATE EXTENSION pg_stat_statements');
  const run = async (tag: string, n: number) => {
    await writeUrlCsv(join(dir, `${tag}.csv`), 'post_url', n, (i) => postUrl(tag, i));
    const job = makeJob({ name: tag, operation: 'post-details', input: { csv: `${tag}.csv`, column: 'post_url' }, rate: { requestsPerMinute: 1e9, concurrency: Number(process.env['CONCURRENCY'] ?? 16) } }, dir);
    const summary = await runJobs({ dbPath: process.env['LITE'] ? join(dir, `${tag}.db`) : dbUrl, jobs: [job], api: { baseUrl: sandbox.url, token: PIPELINE_TOKEN } });
    if (summary.status !== 'completed') throw new Error(`run ended ${summary.status}`);
  };
  await run('warm', Number(process.env['WARM'] ?? 1000));
  if (process.env['EXPERIMENT_SQL']) {
    const c = new pg.Client({ connectionString: dbUrl });
    await c.connect();
    await c.query(process.env['EXPERIMENT_SQL']);
    await c.end();
  }
  await admin.query('SELECT pg_stat_statements_reset()');
  counting = true;
  const profiler = process.env['CPU_PROF'] ? new Session() : null;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  // What the timed run allocates, by the function that allocated it (sampled every 8 KB; GC is the run's largest item).
  const heap = process.env['HEAP_PROF'] ? new Session() : null;
  if (heap) {
    heap.connect();
    await heap.post('HeapProfiler.startSampling', { samplingInterval: 8192, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  }
  const sampler = process.env['BY_PROCESS'] ? await startProcessSampler(postmaster, cluster.url, senderOf) : null;
  const threads = threadCpuMs();
  const sched = mainThreadSchedMs();
  const cpu = process.cpuUsage();
  const server = clusterCpuMs(postmaster);
  const start = performance.now();
  await run('main', N);
  const wallMs = performance.now() - start;
  const client = process.cpuUsage(cpu);
  const schedAfter = mainThreadSchedMs();
  const byThread = [...threadCpuMs()].map(([id, ms]) => [id, ms - (threads.get(id) ?? 0)] as const).filter(([, ms]) => ms > 0);
  const serverMs = clusterCpuMs(postmaster) - server;
  counting = false;
  const byProcess = await sampler?.stop();
  if (profiler) writeFileSync(process.env['CPU_PROF']!, JSON.stringify((await profiler.post('Profiler.stop')).profile));
  if (heap) writeFileSync(process.env['HEAP_PROF']!, JSON.stringify((await heap.post('HeapProfiler.stopSampling')).profile));
  console.log(`${N} answers in ${wallMs.toFixed(0)} ms: ${((N / wallMs) * 1000).toFixed(1)}/s; per answer: client CPU ${((client.user + client.system) / N).toFixed(0)} us (system ${(client.system / N).toFixed(0)}), `
    + `server CPU ${((serverMs * 1000) / N).toFixed(0)} us, round trips ${(trips / N).toFixed(2)}`);
  // The main thread against the rest (V8's compilers and GC): a run's optimizing compiles go on for thousands of answers.
  const main = byThread.find(([id]) => id === process.pid)?.[1] ?? 0;
  console.log(`client CPU per answer by thread (us): main ${((main * 1000) / N).toFixed(0)}, others ${byThread.filter(([id]) => id !== process.pid).map(([, ms]) => ((ms * 1000) / N).toFixed(0)).join(' ')}`);
  const share = (ms: number) => `${((ms / wallMs) * 100).toFixed(1)}%`;
  console.log(`the main thread over the run: on a CPU ${share(schedAfter.onCpu - sched.onCpu)}, runnable and waiting for one ${share(schedAfter.waiting - sched.waiting)}`);
  if (byProcess) {
    console.log('server CPU per answer by process (us; a backend by the senders of the statements it was seen running):');
    for (const [name, ms] of [...byProcess].sort((a, b) => b[1] - a[1])) console.log(`  ${((ms * 1000) / N).toFixed(1).padStart(7)}  ${name}`);
  }
  for (const [label, n] of [...queries].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`  ${(n / N).toFixed(3)}/answer  ${label}`);
  console.log('queries by the time their callers waited for them (ms in all, per query):');
  const byKind = new Map<string, { n: number; ms: number }>();
  for (const [label, ms] of waited) {
    const kind = label.slice(0, 60);
    const k = byKind.get(kind) ?? { n: 0, ms: 0 };
    k.n += queries.get(label) ?? 0;
    k.ms += ms;
    byKind.set(kind, k);
  }
  for (const [kind, k] of [...byKind].sort((a, b) => b[1].ms - a[1].ms).slice(0, 12)) console.log(`  ${k.ms.toFixed(0).padStart(7)} ms ${(k.ms / k.n).toFixed(2).padStart(7)} ms/query  ${kind}`);
  const { rows } = await admin.query<{ calls: string; ms: number; planMs: number; q: string }>(`SELECT calls, total_exec_time + total_plan_time AS ms, total_plan_time AS "planMs", query AS q
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY ms DESC`, [db]);
  const bySender = new Map<string, { calls: number; ms: number }>();
  for (const r of rows) {
    const s = bySender.get(senderOf(r.q)) ?? { calls: 0, ms: 0 };
    s.calls += Number(r.calls);
    s.ms += r.ms;
    bySender.set(senderOf(r.q), s);
  }
  console.log('server statements per answer, and their exec + plan time:');
  for (const [sender, s] of [...bySender].sort((a, b) => b[1].ms - a[1].ms)) console.log(`  ${(s.calls / N).toFixed(2)}  ${((s.ms * 1000) / N).toFixed(0).padStart(5)} us  ${sender}`);
  // Statements of one shape but another row count are apart in pg_stat_statements: together here, by their start.
  const byHead = new Map<string, { calls: number; ms: number; planMs: number }>();
  for (const r of rows) {
    const head = r.q.replace(/\s+/g, ' ').slice(0, 60);
    const s = byHead.get(head) ?? { calls: 0, ms: 0, planMs: 0 };
    s.calls += Number(r.calls);
    s.ms += r.ms;
    s.planMs += r.planMs;
    byHead.set(head, s);
  }
  console.log('statements by their first 60 characters, per answer (calls, exec + plan us, of which plan):');
  for (const [head, s] of [...byHead].sort((a, b) => b[1].ms - a[1].ms).slice(0, Number(process.env['TOP'] ?? 12))) {
    console.log(`  ${(s.calls / N).toFixed(2).padStart(6)} ${((s.ms * 1000) / N).toFixed(0).padStart(5)} ${((s.planMs * 1000) / N).toFixed(0).padStart(5)}  ${head}`);
  }
  // HOT updates rewrite no index: the settle's share of them says whether `tasks`'s indexes and fillfactor allow it.
  const stats = new pg.Client({ connectionString: dbUrl });
  await stats.connect();
  try {
    const { rows: tables } = await stats.query<{ relname: string; upd: string; hot: string }>(`SELECT relname, n_tup_upd AS upd, n_tup_hot_upd AS hot
      FROM pg_stat_user_tables WHERE relname IN ('tasks', 'worker_task_leases', 'credit_reservations', 'rate_slots') ORDER BY relname`);
    console.log(`updates (HOT of all, both runs): ${tables.map((t) => `${t.relname} ${t.hot}/${t.upd}`).join(', ')}`);
  } finally {
    await stats.end();
  }
  console.log('costliest statements (calls, exec + plan ms):');
  for (const r of rows.slice(0, Number(process.env['TOP'] ?? 12))) console.log(`  ${r.calls.padStart(6)} ${r.ms.toFixed(0).padStart(6)}  ${r.q.replace(/\s+/g, ' ').slice(0, 100)}`);
} finally {
  await admin.end().catch(() => undefined);
  await sandbox.stop();
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
