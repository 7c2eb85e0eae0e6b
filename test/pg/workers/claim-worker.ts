/**
 * A test worker sharing a job through task claims, as `netingest run` will: claim inputs, call their pages in
 * order (a row in `calls` stands for the paid request), settle each page, give the input back. It records every
 * lease it holds (`lease_log`) so the test can check that nobody else called a task while that lease lived.
 * Ends when no task of the job is due any more.
 */
import pg from 'pg';
import { createTaskClaims, type ClaimedTask } from '../../../src/store/pg/coordination/task-claims.ts';

const settings = JSON.parse(process.argv[2]!) as {
  url: string; workerId: string; job: string; leaseMs: number; maxTasks: number; callMs: number; freshSince: string;
  /** Who made the calls in the test's records: the worker id, or another name for a restart under the same id. */
  label?: string;
};
const label = settings.label ?? settings.workerId;
const pool = new pg.Pool({ connectionString: settings.url, max: 8 });
const claims = createTaskClaims(pool, { workerId: settings.workerId, leaseMs: settings.leaseMs });
const filter = { job: settings.job, runId: null, freshSince: settings.freshSince, refresh: false };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function logLeases(units: Array<{ inputKey: string; leaseUntil: string }>): Promise<void> {
  if (units.length === 0) return;
  await pool.query(`INSERT INTO lease_log (worker_id, input_key, lease_until) SELECT $1, k, u FROM unnest($2::text[], $3::timestamptz[]) AS x(k, u)`,
    [label, units.map((u) => u.inputKey), units.map((u) => u.leaseUntil)]);
}

async function work(pages: ClaimedTask[]): Promise<void> {
  for (const task of pages) {
    const call = await pool.query(`INSERT INTO calls (task_id, worker_id, input_key, page) VALUES ($1, $2, $3, $4) RETURNING id`,
      [task.id, label, task.inputKey, task.page]);
    await sleep(settings.callMs);
    // Settled with its call marked, in one statement: a kill leaves both or neither.
    await pool.query(`WITH settled AS (UPDATE tasks SET status = 'done', attempts = attempts + 1, completed_at = clock_timestamp(),
      updated_at = clock_timestamp() WHERE id = $1) UPDATE calls SET settled = true WHERE id = $2`, [task.id, call.rows[0].id]);
  }
  await claims.release(settings.job, [pages[0]!.inputKey]);
}

// Start together: the test releases every worker at once, so each one's share does not hang on its start-up time.
process.stdout.write('ready\n');
while ((await pool.query('SELECT 1 FROM go')).rowCount === 0) await sleep(20);

const renewal = claims.keepRenewed(
  (r) => void logLeases(r.held).catch(() => undefined),
  (err) => process.stderr.write(`renewal failed: ${String(err)}\n`),
);
for (;;) {
  const tasks = await claims.claim(filter, settings.maxTasks);
  if (tasks.length === 0) {
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM tasks WHERE job = $1 AND status <> 'done'`, [settings.job]);
    if (rows[0].n === 0) break;
    await sleep(20);
    continue;
  }
  const byInput = new Map<string, ClaimedTask[]>();
  for (const t of tasks) byInput.set(t.inputKey, [...(byInput.get(t.inputKey) ?? []), t]);
  await logLeases([...byInput.values()].map((pages) => ({ inputKey: pages[0]!.inputKey, leaseUntil: pages[0]!.leaseUntil })));
  await Promise.all([...byInput.values()].map(work));
}
renewal.stop();
await pool.end();
