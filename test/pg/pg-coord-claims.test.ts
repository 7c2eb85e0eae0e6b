import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { createTaskClaims } from '../../src/store/pg/coordination/task-claims.ts';
import { coordinationTestBed, planTasks, startWorker, waitFor, type WorkerProcess } from './coordination-fixtures.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';

const JOB = 'shared-job';
/** What a lease row's `job` holds: the operation of the input leased (one lease per lookup, whichever job asks it). */
const OPERATION = 'post-details';
const TASKS = 500;
const MAX_TASKS = 20;
/** A claim of MAX_TASKS rows brings the rest of its last input: at most two more pages (inputs have 1 to 3). */
const MOST_CLAIMED = MAX_TASKS + 2;
const FRESH_SINCE = '2000-01-01T00:00:00Z';

const bed = coordinationTestBed();
const workers = bed.workers;

async function jobDatabase(): Promise<{ url: string; pool: pg.Pool }> {
  const { url, pool } = await bed.database('claims');
  await pool.query(`CREATE TABLE calls (id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, task_id bigint NOT NULL,
    worker_id text NOT NULL, input_key text NOT NULL, page int NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp(),
    settled boolean NOT NULL DEFAULT false)`);
  await pool.query(`CREATE TABLE lease_log (worker_id text NOT NULL, input_key text NOT NULL, lease_until timestamptz NOT NULL)`);
  await pool.query(`CREATE TABLE go (go int)`);
  return { url, pool };
}

/** Starts `count` claim workers and lets them go together once all are up. */
async function startWorkers(url: string, pool: pg.Pool, count: number, leaseMs: number): Promise<WorkerProcess[]> {
  const started = Array.from({ length: count }, (_, i) =>
    startWorker('claim-worker.ts', { url, workerId: `w${i}`, job: JOB, leaseMs, maxTasks: MAX_TASKS, callMs: 3, freshSince: FRESH_SINCE }));
  workers.push(...started);
  await waitFor(async () => started.every((w) => w.stdout().includes('ready') || w.child.exitCode !== null), 60_000, 'workers to start');
  await pool.query('INSERT INTO go VALUES (1)');
  return started;
}

interface PlanNode { 'Relation Name'?: string; 'Actual Rows'?: number; 'Actual Loops'?: number; 'Rows Removed by Filter'?: number; Plans?: PlanNode[] }

/** The rows the plan's scans of `tasks` read: those they returned and those their filters dropped, over all loops. */
function tasksRowsRead(node: PlanNode): number {
  const own = node['Relation Name'] === 'tasks' ? ((node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0)) * (node['Actual Loops'] ?? 1) : 0;
  return own + (node.Plans ?? []).reduce((n, child) => n + tasksRowsRead(child), 0);
}

async function expectExit(w: WorkerProcess, code: number | string): Promise<void> {
  const got = await w.exited;
  expect(got, w.stderr()).toBe(code);
}

/**
 * Calls of one input by a second worker that came while the first one's lease on it lived (by what the first
 * logged: a lease it held at least until then).
 */
async function callsUnderAnothersLease(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM calls later
    WHERE EXISTS (SELECT 1 FROM calls earlier JOIN lease_log l ON l.worker_id = earlier.worker_id AND l.input_key = earlier.input_key
      WHERE earlier.input_key = later.input_key AND earlier.worker_id <> later.worker_id AND earlier.id < later.id
        AND l.lease_until > later.at)`);
  return rows[0].n;
}

/** Pages of one input that a worker called out of order. */
async function pagesOutOfOrder(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM (
    SELECT page, lag(page) OVER (PARTITION BY input_key, worker_id ORDER BY id) AS before FROM calls) x WHERE page <= before`);
  return rows[0].n;
}

async function settledCount(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query(`SELECT count(*)::int AS n FROM tasks WHERE job = $1 AND status = 'done' AND attempts >= 1`, [JOB]);
  return rows[0].n;
}

describe.skipIf(!pgClusterUrl)(`task claims on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('claims whole inputs of due tasks in ledger order, never one under a live lease', async () => {
    const { pool } = await jobDatabase();
    await planTasks(pool, JOB, 12);
    // Settled recently: not due. Settled before freshSince, failed retryable: due. Failed for good: only with refresh.
    await pool.query(`UPDATE tasks SET status = 'done', completed_at = now() WHERE input_key = 'in-00000'`);
    await pool.query(`UPDATE tasks SET status = 'done', completed_at = '1999-01-01' WHERE input_key = 'in-00001'`);
    await pool.query(`UPDATE tasks SET status = 'failed', retryable = 0 WHERE input_key = 'in-00002'`);
    await pool.query(`UPDATE tasks SET status = 'failed', retryable = 1 WHERE input_key = 'in-00003'`);
    const a = createTaskClaims(pool, { workerId: 'a', leaseMs: 60_000 });
    const b = createTaskClaims(pool, { workerId: 'b', leaseMs: 60_000 });
    const filter = { job: JOB, runId: null, freshSince: FRESH_SINCE, refresh: false };

    // Four rows asked for: in-00001's two pages, in-00003's one and in-00004's first; that input comes whole.
    const first = await a.claim(filter, 4);
    expect(first.map((t) => `${t.inputKey}/${t.page}`)).toEqual(['in-00001/1', 'in-00001/2', 'in-00003/1', 'in-00004/1', 'in-00004/2']);
    const second = await b.claim(filter, 100);
    expect(second.map((t) => `${t.inputKey}/${t.page}`)).toEqual(['in-00005/1', 'in-00005/2', 'in-00005/3']);
    expect(await a.claim(filter, 100)).toEqual([]);

    // Released with a page still due (given up): the input is free again, for anyone.
    await a.release(JOB, ['in-00001']);
    expect((await b.claim(filter, 100)).map((t) => t.inputKey)).toEqual(['in-00001', 'in-00001']);
    // --refresh makes the failed-for-good input due; its lease is nobody's yet.
    expect((await a.claim({ ...filter, refresh: true }, 100)).map((t) => t.inputKey)).toEqual(['in-00002', 'in-00002', 'in-00002']);
  });

  it('a claim reads about the tasks it takes, not every due one left in its job, when other jobs share the ledger', async () => {
    // As in a run after another job's (whose name sorts after this one's): each claim read all 1,000, then 936, 744...
    const { url, pool } = await jobDatabase();
    const u = (job: string) => `'https://www.network.com/posts/p_${job}-activity-7000000000000' || lpad(i::text, 6, '0')`;
    // An earlier job's 5,000 lookups, answered (settled once: a new version of each row), then this job's 1,000 planned.
    await pool.query(`INSERT INTO tasks (job, operation, input_key, page, request_json, input_line, run_id, created_at, updated_at)
      SELECT 'warm', 'post-details', ${u('e')}, 1, jsonb_build_object('postUrl', ${u('e')}), i, 1, now(), now() FROM generate_series(1, 5000) i`);
    await pool.query(`UPDATE tasks SET status = 'done', attempts = 1, completed_at = now(), updated_at = now()`);
    await pool.query(`INSERT INTO tasks (job, operation, input_key, page, request_json, input_line, run_id, created_at, updated_at)
      SELECT $1, 'post-details', ${u('o')}, 1, jsonb_build_object('postUrl', ${u('o')}), i, 2, now(), now() FROM generate_series(1, 1000) i`, [JOB]);
    await pool.query('ANALYZE tasks');
    // The claims' one connection explains each statement it runs to this client, with the rows each node read.
    const plans: string[] = [];
    const explained = new pg.Pool({ connectionString: url, max: 1 });
    explained.on('connect', (client) => void client.on('notice', (n) => plans.push(n.message ?? '')));
    try {
      await explained.query(`LOAD 'auto_explain'`);
      for (const set of ['log_min_duration = 0', 'log_analyze = on', 'log_format = json', 'log_level = notice']) await explained.query(`SET auto_explain.${set}`);
      const claims = createTaskClaims(explained, { workerId: 'a', leaseMs: 60_000 });
      const filter = { job: JOB, runId: null, freshSince: new Date(Date.now() - 7 * 86_400_000).toISOString(), refresh: false, plannedSince: 2 };
      let afterId = 0;
      for (let i = 0; i < 5; i++) {
        const got = await claims.claim({ ...filter, afterId }, 64);
        expect(got).toHaveLength(64);
        afterId = Math.max(...got.map((t) => t.id));
      }
    } finally {
      await explained.end();
    }
    const claimPlans = plans.filter((p) => p.includes('worker_task_leases') && p.includes('"CTE Name": "candidates"'));
    expect(claimPlans).toHaveLength(5);
    for (const text of claimPlans) {
      const plan = JSON.parse(text.slice(text.indexOf('{'))) as { Plan: PlanNode };
      // Its 64 tasks, read to claim them and again to return them.
      expect(tasksRowsRead(plan.Plan)).toBeLessThan(200);
    }
  });

  it("claims the tasks a later run planned though that run has ended, never those only an earlier run planned", async () => {
    const { pool } = await jobDatabase();
    await planTasks(pool, JOB, 6);
    const run = async (status: string) =>
      Number((await pool.query(`INSERT INTO runs (jobs, started_at, status) VALUES ('[]', now(), $1) RETURNING id`, [status])).rows[0].id);
    // An earlier run planned in-00000 (since removed from the input); this run planned the rest, then a later
    // worker planned them again (re-stamping them) and stopped on its credits cap.
    const earlier = await run('completed');
    const mine = await run('running');
    const later = await run('stopped_credits');
    await pool.query(`UPDATE tasks SET run_id = CASE WHEN input_key = 'in-00000' THEN $1::bigint ELSE $2::bigint END`, [earlier, later]);
    const claims = createTaskClaims(pool, { workerId: 'a', leaseMs: 60_000 });
    const claimed = await claims.claim({ job: JOB, runId: null, freshSince: FRESH_SINCE, refresh: false, plannedSince: mine }, 100);
    expect([...new Set(claimed.map((t) => t.inputKey))]).toEqual(['in-00001', 'in-00002']);
  });

  it('skips inputs another claim is taking, and leaves a lease its snapshot missed to its holder', async () => {
    const { url, pool } = await jobDatabase();
    await planTasks(pool, JOB, 6);
    const b = createTaskClaims(pool, { workerId: 'b', leaseMs: 60_000 });
    const filter = { job: JOB, runId: null, freshSince: FRESH_SINCE, refresh: false };
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      // Another worker's claim holds in-00000's row: b takes the next input at once instead of waiting for it.
      await other.query('BEGIN');
      await other.query(`SELECT id FROM tasks WHERE input_key = 'in-00000' FOR UPDATE`);
      const timeout = new Promise<'waited'>((r) => setTimeout(() => r('waited'), 10_000).unref());
      const skipped = await Promise.race([b.claim(filter, 1), timeout]);
      await other.query('ROLLBACK');
      expect(skipped === 'waited' ? skipped : skipped.map((t) => t.inputKey)).toEqual(['in-00001', 'in-00001']);
      await b.release(JOB, ['in-00001']);

      // Another worker's lease on in-00000, committed while b's claim runs: b's snapshot does not show it, the
      // lease row does (b's insert waits for it), and b leaves the input to its holder.
      await other.query('BEGIN');
      await other.query(`INSERT INTO worker_task_leases (job, input_key, worker_id, lease_until) VALUES ($1, 'in-00000', 'x', now() + interval '1 minute')`, [OPERATION]);
      const claiming = b.claim(filter, 1);
      await waitFor(async () => (await pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH %candidates AS MATERIALIZED%'`)).rows[0].n > 0, 30_000, 'b to wait for the lease row');
      await other.query('COMMIT');
      expect(await claiming).toEqual([]);
      expect((await pool.query(`SELECT worker_id FROM worker_task_leases WHERE input_key = 'in-00000'`)).rows).toEqual([{ worker_id: 'x' }]);
    } finally {
      await other.end();
    }
  });

  it('a release waiting on a renewal of the same lease still deletes it', async () => {
    // Seen once in the four-worker case below: a lease left behind after every worker had ended.
    const { url, pool } = await jobDatabase();
    await planTasks(pool, JOB, 2);
    const a = createTaskClaims(pool, { workerId: 'a', leaseMs: 60_000 });
    expect((await a.claim({ job: JOB, runId: null, freshSince: FRESH_SINCE, refresh: false }, 1)).map((t) => t.inputKey)).toEqual(['in-00000']);
    const renewal = new pg.Client({ connectionString: url });
    await renewal.connect();
    try {
      // The worker's own renewal, its UPDATE not yet committed when the release starts: the release waits for it.
      await renewal.query('BEGIN');
      await renewal.query(`UPDATE worker_task_leases SET lease_until = lease_until + interval '1 second' WHERE input_key = 'in-00000'`);
      const releasing = a.release(JOB, ['in-00000']);
      await waitFor(async () => (await pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DELETE FROM worker_task_leases%'`)).rows[0].n > 0, 30_000, 'the release to wait for the renewal');
      await renewal.query('COMMIT');
      await releasing;
    } finally {
      await renewal.end();
    }
    expect((await pool.query(`SELECT count(*)::int AS n FROM worker_task_leases`)).rows[0].n).toBe(0);
  });

  it('a renewed lease keeps the input; one left to run out lets another worker take it', async () => {
    const { pool } = await jobDatabase();
    await planTasks(pool, JOB, 3);
    // A lease no busy CPU outlives: time passes by the test bringing the lease's end nearer (elapse), so what b may
    // take is decided by the order of claims, renewals and elapses, not by how soon a renewal comes.
    const leaseMs = 600_000;
    const a = createTaskClaims(pool, { workerId: 'a', leaseMs });
    const b = createTaskClaims(pool, { workerId: 'b', leaseMs });
    const filter = { job: JOB, runId: null, freshSince: FRESH_SINCE, refresh: false };
    const claimed = await a.claim(filter, 1);
    expect(claimed.map((t) => t.inputKey)).toEqual(['in-00000']);
    const leaseEnd = async () => (await pool.query(`SELECT lease_until FROM worker_task_leases WHERE input_key = 'in-00000'`)).rows[0].lease_until as Date;
    /** As if `ms` passed on the server's clock for in-00000's lease: its end, and its claim, come that much nearer. */
    const elapse = (ms: number) => pool.query(`UPDATE worker_task_leases SET lease_until = lease_until - $1::double precision * interval '1 millisecond',
      claimed_at = claimed_at - $1::double precision * interval '1 millisecond' WHERE input_key = 'in-00000'`, [ms]);
    const bTakes = async () => {
      const got = (await b.claim(filter, 100)).map((t) => t.inputKey);
      await b.release(JOB, ['in-00001']);
      return got;
    };
    let heldUntil = await leaseEnd();
    expect(await bTakes()).toEqual(['in-00001', 'in-00001']);
    // Renewed each time three quarters of the lease have gone: by the second, unrenewed, it would have ended.
    for (let i = 0; i < 3; i++) {
      await elapse((leaseMs * 3) / 4);
      const renewal = await a.renew();
      expect(renewal.held.map((h) => h.inputKey)).toEqual(['in-00000']);
      const renewedUntil = await leaseEnd();
      // A whole lease from the renewal: past the end it had before the elapse, not only the quarter left.
      expect(renewedUntil.getTime()).toBeGreaterThan(heldUntil.getTime());
      heldUntil = renewedUntil;
      expect(await bTakes()).toEqual(['in-00001', 'in-00001']);
    }
    // a restarted under the same id does not renew what its dead self held: the lease still runs out.
    const restarted = createTaskClaims(pool, { workerId: 'a', leaseMs });
    expect((await restarted.renew()).held).toEqual([]);
    expect((await leaseEnd()).getTime()).toBe(heldUntil.getTime());
    // a stops renewing (as a killed worker does): b gets the input once the lease is over, not before.
    await elapse((leaseMs * 3) / 4);
    expect(await bTakes()).toEqual(['in-00001', 'in-00001']);
    await elapse(leaseMs / 4);
    heldUntil = await leaseEnd();
    expect((await b.claim(filter, 100)).map((t) => t.inputKey)).toEqual(['in-00000', 'in-00001', 'in-00001']);
    const bClaimedAt = (await pool.query(`SELECT claimed_at FROM worker_task_leases WHERE input_key = 'in-00000' AND worker_id = 'b'`)).rows[0].claimed_at as Date;
    expect(bClaimedAt.getTime()).toBeGreaterThanOrEqual(heldUntil.getTime());
    // a's renewal now finds the lease gone: it is told, and does not take it back.
    expect((await a.renew()).held).toEqual([]);
  });

  it('four worker processes settle 500 tasks, each called once, inputs whole and in page order', async () => {
    const { url, pool } = await jobDatabase();
    await planTasks(pool, JOB, TASKS);
    const started = await startWorkers(url, pool, 4, 10_000);
    for (const w of started) await expectExit(w, 0);

    expect(await settledCount(pool)).toBe(TASKS);
    const calls = (await pool.query(`SELECT count(*)::int AS n, count(DISTINCT task_id)::int AS tasks FROM calls`)).rows[0];
    expect(calls).toEqual({ n: TASKS, tasks: TASKS });
    const split = await pool.query(`SELECT input_key FROM calls GROUP BY input_key HAVING count(DISTINCT worker_id) > 1`);
    expect(split.rows).toEqual([]);
    expect(await pagesOutOfOrder(pool)).toBe(0);
    expect(await callsUnderAnothersLease(pool)).toBe(0);
    const { rows } = await pool.query(`SELECT worker_id, count(*)::int AS n FROM calls GROUP BY 1`);
    expect(rows.length, JSON.stringify(rows)).toBeGreaterThanOrEqual(2);
    expect((await pool.query(`SELECT count(*)::int AS n FROM worker_task_leases`)).rows[0].n).toBe(0);
  }, 90_000);

  it('a worker killed mid-way and restarted loses only its in-flight calls: its inputs go to the others once its lease ends', async () => {
    const { url, pool } = await jobDatabase();
    await planTasks(pool, JOB, TASKS);
    const leaseMs = 1_000;
    const [victim, ...others] = await startWorkers(url, pool, 4, leaseMs);
    const callsOf = async (w: string) => (await pool.query(`SELECT count(*)::int AS n FROM calls WHERE worker_id = $1`, [w])).rows[0].n as number;
    await waitFor(async () => (await callsOf('w0')) >= 50 || victim!.child.exitCode !== null, 60_000, 'w0 to be working');
    victim!.child.kill('SIGKILL');
    expect(await victim!.exited).toBe('SIGKILL');
    const settledAtKill = await settledCount(pool);
    expect(settledAtKill).toBeLessThan(TASKS);
    // Restarted under the same worker id (a CronJob's pod name, say): it must not keep its dead self's leases.
    const restarted = startWorker('claim-worker.ts', { url, workerId: 'w0', label: 'w0-restarted', job: JOB, leaseMs, maxTasks: MAX_TASKS, callMs: 3, freshSince: FRESH_SINCE });
    workers.push(restarted);
    for (const w of [...others, restarted]) await expectExit(w, 0);

    expect(await settledCount(pool)).toBe(TASKS);
    expect((await pool.query(`SELECT count(DISTINCT task_id)::int AS n FROM calls`)).rows[0].n).toBe(TASKS);
    // Called twice: only the calls w0 had in flight when it died (called, not settled), each once more by a
    // survivor after w0's lease ended. At most what one claim holds.
    const inFlight = (await pool.query(`SELECT task_id::int FROM calls WHERE worker_id = 'w0' AND NOT settled`)).rows.map((r) => r.task_id as number);
    expect(inFlight.length).toBeLessThanOrEqual(MOST_CLAIMED);
    const repeats = (await pool.query(`SELECT task_id::int, array_agg(worker_id ORDER BY id) AS by FROM calls GROUP BY task_id HAVING count(*) > 1`)).rows as Array<{ task_id: number; by: string[] }>;
    for (const r of repeats) {
      expect(inFlight).toContain(r.task_id);
      expect(r.by).toHaveLength(2);
      expect(r.by[0]).toBe('w0');
    }
    expect(repeats.length).toBe(inFlight.length);
    expect(await callsUnderAnothersLease(pool)).toBe(0);
    expect(await pagesOutOfOrder(pool)).toBe(0);
  }, 90_000);
});
