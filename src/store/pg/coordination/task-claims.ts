/**
 * Workers lease a job's inputs: one worker calls an input's pages in order; a lookup another job answered is not paid
 * twice (ADOPT). A dead worker's leases free at once (its dataset lock goes), a stalled one's when they run out.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { LOCK_HOLDERS_SQL } from '../dataset-lock.ts';
import { retryingConflicts, withPgClient } from '../transaction.ts';
import { namedQuery, pipelineTransaction } from '../pg-pipeline.ts';
import { dueRule, JOB_NAMES_SQL, type DueRule, type TaskRow } from '../../ledger.ts';

export const TASK_CLAIM_DEFAULTS = {
  /** How long a claim holds without renewal: a stalled worker's inputs wait this long before others take them. */
  leaseMs: 60_000,
  /** Renewals per lease period (keepRenewed): two may be missed, a busy event loop late, before the lease ends. */
  renewalsPerLease: 3,
  /** A claim that meets another's in a deadlock (both taking the same input) is tried again this many times. */
  deadlockRetries: 3,
} as const;

/** A worker id unique to this process: host, pid and a random part (a restarted worker is another worker). */
export function newWorkerId(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

export interface TaskClaimOptions {
  /** Unique among the workers of the database: newWorkerId(). */
  workerId: string;
  leaseMs?: number;
  /**
   * The session holding the dataset lock for this worker (DatasetHold.backendPid): its leases live, and it claims,
   * only while that session holds the lock. Without it, leases count by their time alone.
   */
  holderPid?: number | null;
}

/** Which tasks of a job are due: the ledger's RunnableFilter, with the planning run optional. */
export interface ClaimFilter extends DueRule {
  /** Only tasks this run planned (the ledger's rule); null for tasks planned by any run. */
  runId: number | null;
  /** A failed task is due only if it failed before this instant (ISO): a run leaves its own failures to the next, as on SQLite. */
  failedBefore?: string | null;
  /**
   * The claiming run's id: only tasks last stamped by it, a later run or one still going, so an input removed since is
   * not called. A later run counts though ended: it re-stamped these tasks, and its stop must not hide them.
   */
  plannedSince?: number | null;
  /**
   * When given, only inputs with a due task after this ledger id: claims go forward, not rereading the tasks settled
   * behind them. An input's pages come whole whatever their ids.
   */
  afterId?: number | null;
}

/** A claimed task, as the ledger's TaskRow (request_json as its text), with its lease. */
export interface ClaimedTask extends TaskRow {
  /** When the lease on its input ends unless renewed (the server's clock, ISO). */
  leaseUntil: string;
}

/** A lease's end and the server's time as it answered, in milliseconds since the epoch (MS_SINCE_EPOCH). */
type LeaseTimes = { leaseUntilMs: number; serverNowMs: number };

/** What a renewal found: the inputs still held, each with the new end of its lease. */
export type Renewal = { held: Array<{ job: string; inputKey: string; leaseUntil: string }> };

/** The placeholders a statement gives the due rule's values at (claimDue): one per ClaimFilter value but afterId. */
type DuePlaceholders = Record<Exclude<keyof ClaimFilter, 'afterId'>, string>;

/** A job's due tasks on alias `t` (the ledger's dueRule plus failedBefore), at the placeholders the using statement numbers. */
export function claimDue(p: DuePlaceholders): string {
  return `t.job = ${p.job} AND (${p.runId}::bigint IS NULL OR t.run_id = ${p.runId}::bigint)
  AND (${p.plannedSince}::bigint IS NULL OR t.run_id >= ${p.plannedSince}::bigint OR t.run_id IN (SELECT r.id FROM runs r WHERE r.status = 'running')) AND ${dueRule({
    at: 't.', refresh: `${p.refresh}::boolean`, freshSince: `${p.freshSince}::timestamptz`, failedBefore: `${p.failedBefore}::timestamptz`,
  })}`;
}

/** The claim's due rule: $1 job, $2 runId, $3 freshSince, $4 refresh, $8 failedBefore, $9 plannedSince. */
const CLAIM_DUE = claimDue({ job: '$1', runId: '$2', freshSince: '$3', refresh: '$4', failedBefore: '$8', plannedSince: '$9' });

/**
 * Sessions holding the dataset lock, with their start (null for another role's, hidden by the server: the pid alone
 * counts). Read via pg_stat_get_activity(pid): the view builds a row per session of the cluster. As a CTE it runs only
 * when a lease not run out needs judging.
 */
const HOLDERS = `SELECT k.pid, a.backend_start FROM (${LOCK_HOLDERS_SQL}) k LEFT JOIN LATERAL pg_stat_get_activity(k.pid) a ON true`;

/** This worker's session ($1) among the holders, with its start as text (every microsecond kept): read once. */
const OWN_HOLDER = `SELECT h.backend_start::text AS start FROM (${HOLDERS}) h WHERE h.pid = $1::integer`;

/**
 * A live lease's session matches by backend_start too, as a later session may reuse the pid. One claimed since this
 * statement began is live whatever `holders` says: its worker may have locked after pg_locks was read.
 */
const LEASE_LIVE = `(l.lease_until > clock_timestamp() AND (l.backend_pid IS NULL OR l.claimed_at >= now()
  OR EXISTS (SELECT 1 FROM holders h WHERE h.pid = l.backend_pid
    AND (h.backend_start IS NULL OR l.backend_start IS NULL OR h.backend_start = l.backend_start))))`;

/**
 * Whether another worker than the one whose lock session is `ownPid` holds a live lease on task `t`'s input (a
 * statement's `holders` CTE: LEASE_HOLDERS): that worker is calling it, so a stopping worker leaves it to it.
 */
export const heldByOtherWorker = (ownPid: string) => `EXISTS (SELECT 1 FROM worker_task_leases l WHERE l.job = t.operation
  AND l.input_key = t.input_key AND l.backend_pid IS DISTINCT FROM ${ownPid}::integer AND ${LEASE_LIVE})`;

/** The `holders` CTE heldByOtherWorker reads. */
export const LEASE_HOLDERS = `holders AS MATERIALIZED (${HOLDERS})`;

/** Whole ms since the epoch as float8 (exact below 2^53): node-postgres reads it with parseFloat, not its costly date parser. */
const MS_SINCE_EPOCH = (time: string) => `floor(extract(epoch FROM ${time}) * 1000)::float8`;

/**
 * Leases inputs in key order so two claims wait rather than deadlock; ON CONFLICT sees the latest row, so an older
 * snapshot leaves a live lease alone. A worker whose own session ($10, started $12) is gone claims nothing (LOCK_LOST):
 * it held the lock at its first claim (OWN_HOLDER) and keeps it while it lives, so pg_locks is not read each claim.
 */
const CLAIM = `WITH holders AS MATERIALIZED (${HOLDERS}),
  candidates AS MATERIALIZED (
    SELECT t.id, t.input_key, t.operation FROM tasks t
    WHERE ${CLAIM_DUE} AND t.id > $11::bigint
      AND ($10::integer IS NULL OR EXISTS (SELECT 1 FROM pg_stat_get_activity($10::integer) a WHERE a.backend_start IS NOT DISTINCT FROM $12::timestamptz))
      AND NOT EXISTS (SELECT 1 FROM worker_task_leases l WHERE l.job = t.operation AND l.input_key = t.input_key AND ${LEASE_LIVE})
    ORDER BY t.id LIMIT $5
    FOR UPDATE OF t SKIP LOCKED
  ), leased AS (
    INSERT INTO worker_task_leases AS l (job, input_key, worker_id, lease_until, claimed_at, backend_pid, backend_start)
    SELECT c.operation, c.input_key, $6::text, clock_timestamp() + $7::double precision * interval '1 millisecond', clock_timestamp(),
      $10::integer, $12::timestamptz
    FROM (SELECT DISTINCT operation, input_key FROM candidates) c ORDER BY c.operation, c.input_key
    ON CONFLICT (job, input_key) DO UPDATE SET worker_id = excluded.worker_id, lease_until = excluded.lease_until,
      claimed_at = excluded.claimed_at, backend_pid = excluded.backend_pid, backend_start = excluded.backend_start
    WHERE NOT ${LEASE_LIVE}
    RETURNING l.job AS operation, l.input_key, l.lease_until
  )
  SELECT t.id, t.job, t.operation, t.input_key AS "inputKey", t.page, t.request_json::text AS "requestJson", t.status,
    ${MS_SINCE_EPOCH('leased.lease_until')} AS "leaseUntilMs", ${MS_SINCE_EPOCH('clock_timestamp()')} AS "serverNowMs"
  FROM leased CROSS JOIN LATERAL (SELECT * FROM tasks t WHERE t.input_key = leased.input_key AND t.operation = leased.operation AND ${CLAIM_DUE} OFFSET 0) t
  ORDER BY t.id`;

/**
 * The claim's one plan, made for no value: planned for its values, it took job and id for independent, and in a job
 * whose tasks come after another's read and sorted every due task left at each claim (n^2/64 rows over a job of n).
 */
const ONE_PLAN = 'SET LOCAL plan_cache_mode = force_generic_plan';

/**
 * Only the inputs this process claimed: a worker restarted under the same id must not keep its dead self's leases.
 * Rows are locked in key order first, as claims and give-backs (RELEASE) lock them: in claim order, a renewal and a
 * give-back running side by side deadlocked, and the one the server cancelled failed the job or stopped the run.
 */
const RENEW = `WITH mine AS MATERIALIZED (
    SELECT w.job, w.input_key FROM worker_task_leases w JOIN unnest($3::text[], $4::text[]) AS h(job, input_key)
      ON w.job = h.job AND w.input_key = h.input_key
    WHERE w.worker_id = $1 AND w.lease_until > clock_timestamp()
    ORDER BY w.job, w.input_key FOR UPDATE OF w
  )
  UPDATE worker_task_leases l SET lease_until = clock_timestamp() + $2::double precision * interval '1 millisecond'
  FROM mine WHERE l.job = mine.job AND l.input_key = mine.input_key AND l.worker_id = $1 AND l.lease_until > clock_timestamp()
  RETURNING l.job, l.input_key AS "inputKey", ${MS_SINCE_EPOCH('l.lease_until')} AS "leaseUntilMs", ${MS_SINCE_EPOCH('clock_timestamp()')} AS "serverNowMs"`;

/**
 * One key probe per input (LATERAL, fenced by OFFSET 0): with `input_key = ANY($3)` alone, the plan read every lease
 * of the operation, dead ones too, as the table churns faster than its statistics. Rows are locked as found, in key
 * order as claims take them, then deleted by key, not ctid: a renewal committed while the release waited made a
 * version the statement's snapshot cannot see, so a delete by its ctid found nothing and left the lease behind.
 */
const RELEASE = `DELETE FROM worker_task_leases l USING (SELECT x.input_key FROM (SELECT input_key FROM unnest($3::text[]) AS u(input_key) ORDER BY 1) k
    CROSS JOIN LATERAL (SELECT w.input_key FROM worker_task_leases w WHERE w.job = $2 AND w.input_key = k.input_key AND w.worker_id = $1 OFFSET 0 FOR UPDATE) x) found
  WHERE l.job = $2 AND l.input_key = found.input_key AND l.worker_id = $1`;

/**
 * Settles the claimed tasks ($1, of job $3) that another job asking the same lookup (operation, input, page, request)
 * answered at or after $2, as that answer; returns their ids. Each probes the unique index once per other job (names by
 * a skip-scan, JOB_NAMES_SQL): a join read every answered task, and `job = ANY(...)` could take the (job, status) index.
 */
const ADOPT = `WITH jobs AS MATERIALIZED (SELECT n.job FROM (${JOB_NAMES_SQL}) n WHERE n.job <> $3::text
  ), found AS (
    SELECT t.id, a.status, a.completed_at, a.last_error FROM tasks t
    CROSS JOIN LATERAL (SELECT s.status, s.completed_at, s.last_error
      FROM jobs n
      CROSS JOIN LATERAL (SELECT * FROM tasks s WHERE s.job = n.job AND s.input_key = t.input_key AND s.page = t.page OFFSET 0) s
      WHERE s.job <> t.job AND s.operation = t.operation AND s.request_json = t.request_json
        AND s.status IN ('done', 'not_found') AND s.completed_at >= $2::timestamptz
      ORDER BY s.completed_at DESC LIMIT 1) a
    WHERE t.id = ANY($1::bigint[])
  )
  UPDATE tasks AS t SET status = f.status, completed_at = f.completed_at, last_error = f.last_error,
    last_error_code = NULL, retryable = NULL, updated_at = clock_timestamp()
  FROM found f WHERE t.id = ANY($1::bigint[]) AND t.id = f.id
  RETURNING t.id`;

/** Task claims of one worker. */
export function createTaskClaims(pool: pg.Pool, options: TaskClaimOptions) {
  const { workerId } = options;
  const holderPid = options.holderPid ?? null;
  const leaseMs = options.leaseMs ?? TASK_CLAIM_DEFAULTS.leaseMs;
  /**
   * Inputs this process holds, by `job \0 input_key`, with their lease row's operation and its end on the monotonic
   * clock, counted from the send: never after the server's end, whatever the wall clocks say.
   */
  const held = new Map<string, { operation: string; inputKey: string; endsAtMono: number }>();
  const endOf = (sentAtMono: number, r: LeaseTimes) => sentAtMono + (r.leaseUntilMs - r.serverNowMs);

  /** This worker's session's start, once seen holding the lock (text null: hidden, the pid alone counts). */
  let holderStart: { text: string | null } | null = null;

  /** Whether this worker's session holds the dataset lock, read once: it keeps it while it lives. */
  async function ownHolder(): Promise<{ text: string | null } | null> {
    if (holderPid === null || holderStart) return holderStart;
    const { rows } = await pool.query<{ start: string | null }>(namedQuery(OWN_HOLDER, [holderPid]));
    if (rows.length > 0) holderStart = { text: rows[0]!.start };
    return holderStart;
  }

  async function claimOnce(filter: ClaimFilter, maxTasks: number): Promise<ClaimedTask[]> {
    // Not holding the lock at the first claim: the run is stopping (LOCK_LOST), and its inputs are the others'.
    const own = await ownHolder();
    if (holderPid !== null && own === null) return [];
    // Ids start at 1: from the start is after 0, so the id bound is always there for the statement's one plan.
    const params = [filter.job, filter.runId, filter.freshSince, filter.refresh, maxTasks, workerId, leaseMs, filter.failedBefore ?? null, filter.plannedSince ?? null, holderPid,
      filter.afterId ?? 0, own?.text ?? null];
    const sentAtMono = performance.now();
    type Claimed = pg.QueryResult<Omit<ClaimedTask, 'leaseUntil'> & LeaseTimes & { id: string | number }>;
    const { rows } = (await withPgClient(pool, (c) => pipelineTransaction(c, [ONE_PLAN, { text: CLAIM, values: params }])))[1] as Claimed;
    for (const r of rows) held.set(`${r.job}\0${r.inputKey}`, { operation: r.operation, inputKey: r.inputKey, endsAtMono: endOf(sentAtMono, r) });
    const claimed = rows.map(({ serverNowMs: _now, leaseUntilMs, ...r }) => ({ ...r, id: Number(r.id), leaseUntil: new Date(leaseUntilMs).toISOString() }));
    if (claimed.length === 0) return claimed;
    // An answer another job stored since is taken, and an input left with nothing to call is given back.
    const adopted = new Set((await pool.query<{ id: string }>(namedQuery(ADOPT, [claimed.map((t) => t.id), filter.freshSince, filter.job]))).rows.map((r) => Number(r.id)));
    if (adopted.size === 0) return claimed;
    const left = claimed.filter((t) => !adopted.has(t.id));
    const done = [...new Set(claimed.filter((t) => adopted.has(t.id)).map((t) => t.inputKey))].filter((k) => !left.some((t) => t.inputKey === k));
    await release(filter.job, done);
    return left;
  }

  async function release(job: string, inputKeys: readonly string[]): Promise<void> {
    if (inputKeys.length === 0) return;
    const byOperation = new Map<string, string[]>();
    for (const k of inputKeys) {
      const operation = held.get(`${job}\0${k}`)?.operation;
      if (operation === undefined) continue;
      (byOperation.get(operation) ?? byOperation.set(operation, []).get(operation)!).push(k);
      held.delete(`${job}\0${k}`);
    }
    for (const [operation, keys] of byOperation) await pool.query(namedQuery(RELEASE, [workerId, operation, keys]));
  }

  async function renew(): Promise<Renewal> {
    if (held.size === 0) return { held: [] };
    const mine = [...held];
    const sentAtMono = performance.now();
    const { rows } = await pool.query<{ job: string; inputKey: string } & LeaseTimes>(namedQuery(RENEW,
      [workerId, leaseMs, mine.map(([, h]) => h.operation), mine.map(([, h]) => h.inputKey)]));
    const renewed = new Map(rows.map((r) => [`${r.job}\0${r.inputKey}`, r]));
    for (const [key, h] of mine) {
      const r = renewed.get(`${h.operation}\0${h.inputKey}`);
      // A lease that ran out is lost (another worker may hold it now): forget it, unless given back and claimed
      // again while the renewal ran: that newer lease is a row the renewal's snapshot could not see.
      if (r) h.endsAtMono = endOf(sentAtMono, r);
      else if (held.get(key) === h) held.delete(key);
    }
    return { held: rows.map((r) => ({ job: r.job, inputKey: r.inputKey, leaseUntil: new Date(r.leaseUntilMs).toISOString() })) };
  }

  return {
    /** Leases the inputs of up to `maxTasks` due tasks, in ledger order, with all their due pages (so maybe a few more). */
    claim: (filter: ClaimFilter, maxTasks: number) => retryingConflicts(TASK_CLAIM_DEFAULTS.deadlockRetries, () => claimOnce(filter, maxTasks)),
    /** Extends this process's live leases; one that ran out is dropped, not taken back (another worker may hold it). */
    renew,
    /**
     * Asked before each call: a worker frozen (SIGSTOP) past its lease sees it ended on the monotonic clock; one only
     * looking ended (late renewal, busy event loop) is renewed first: only the server's end stops the run.
     */
    async holds(job: string, inputKey: string): Promise<boolean> {
      const live = () => {
        const h = held.get(`${job}\0${inputKey}`);
        return h !== undefined && performance.now() < h.endsAtMono;
      };
      if (live()) return true;
      await renew();
      return live();
    },
    /** Gives back leases once their pages are settled; one not given back just runs out, as settled pages are not due. */
    release,
    /** Renews every lease/3 until stopped; a failed renewal goes to `onError` and the next tries again. */
    keepRenewed(onRenewal?: (renewal: Renewal) => void, onError?: (err: unknown) => void): { stop(): void } {
      const timer = setInterval(() => {
        renew().then(onRenewal, onError ?? (() => undefined));
      }, leaseMs / TASK_CLAIM_DEFAULTS.renewalsPerLease).unref();
      return { stop: () => clearInterval(timer) };
    },
  };
}
