/**
 * Several workers sharing one job's tasks on PostgreSQL: each claims due tasks under a lease, renews it while it
 * works, and gives it back once the input is settled. A worker that dies (SIGKILL, a lost host) loses only its
 * in-flight calls: its inputs become claimable again at once, since the server drops its session and with it its
 * hold on the dataset lock (dataset-lock.ts), which each lease names; a worker alive but stalled keeps its inputs
 * until its lease runs out.
 *
 * A lease covers one input (job, input_key): all its due pages go to one worker, which calls them in order, as
 * the ledger's id order does on SQLite. Pages the paging adds later fall under the same lease.
 *
 * One lookup is one paid call whichever job asks (issue #28 item 2): a lease is taken on the input of the
 * operation (`worker_task_leases.job` holds the operation's name, shared by every job asking it), so two
 * workers on two jobs asking the same lookup never call it at once; and a claimed task that another job has
 * answered freshly meanwhile takes that answer (as ledger.ts's adoptSharedAnswers does before a run) instead
 * of being called.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { LOCK_HOLDERS_SQL } from '../dataset-lock.ts';
import { namedQuery } from '../pg-statements.ts';
import { JOB_NAMES_SQL } from '../../job-names.ts';
import { dueRule, type DueRule, type TaskRow } from '../../ledger.ts';

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
   * The backend pid of the session holding the dataset lock for this worker (DatasetHold.backendPid): its
   * leases live only while that session holds the lock, and it claims nothing once it no longer does. Without
   * it, leases count by their time alone.
   */
  holderPid?: number | null;
}

/** Which tasks of a job are due: the ledger's RunnableFilter, with the planning run optional. */
export interface ClaimFilter extends DueRule {
  /** Only tasks this run planned (the ledger's rule); null for tasks planned by any run. */
  runId: number | null;
  /**
   * When given, a failed task is due only if it failed before this instant (ISO): a run does not take back the
   * tasks it failed itself (the next run retries them), as paging the ledger forward never does on SQLite.
   */
  failedBefore?: string | null;
  /**
   * When given (the claiming run's id), only tasks last planned (or settled) by that run, by a later one, or by a
   * run still going: an input removed from the job's input since an earlier run planned it is not called, as on
   * SQLite where a run works only the tasks it planned. A later run counts though it has ended: it re-stamped
   * the tasks this run planned too, and a worker that stopped (its credits cap, say) must not take them away
   * from the workers still going.
   */
  plannedSince?: number | null;
  /**
   * When given, only inputs with a due task after this ledger id: a worker's claims go forward through the job,
   * so each reads what lies ahead of its last claim, not again the tasks settled behind it. Its pages come whole
   * whatever their ids.
   */
  afterId?: number | null;
}

/** A claimed task, as the ledger's TaskRow (request_json as its text), with its lease. */
export interface ClaimedTask extends TaskRow {
  /** When the lease on its input ends unless renewed (the server's clock, ISO). */
  leaseUntil: string;
}

/** A lease's end and the server's time as it answered, in milliseconds since the epoch (MS_SINCE_EPOCH). */
interface LeaseTimes {
  leaseUntilMs: number;
  serverNowMs: number;
}

/** What a renewal found: the inputs still held, each with the new end of its lease. */
export interface Renewal {
  held: Array<{ job: string; inputKey: string; leaseUntil: string }>;
}

/** The placeholders a statement gives the due rule's values at (claimDue): one per ClaimFilter value but afterId. */
type DuePlaceholders = Record<Exclude<keyof ClaimFilter, 'afterId'>, string>;

/**
 * A job's due tasks on table alias `t` (the ledger's dueRule, a failed task only when last tried before
 * failedBefore), its values at the placeholders of the statement that uses it (each numbers its own parameters).
 */
export function claimDue(p: DuePlaceholders): string {
  return `t.job = ${p.job} AND (${p.runId}::bigint IS NULL OR t.run_id = ${p.runId}::bigint)
  AND (${p.plannedSince}::bigint IS NULL OR t.run_id >= ${p.plannedSince}::bigint OR t.run_id IN (SELECT r.id FROM runs r WHERE r.status = 'running')) AND ${dueRule({
    at: 't.', refresh: `${p.refresh}::boolean`, freshSince: `${p.freshSince}::timestamptz`, failedBefore: `${p.failedBefore}::timestamptz`,
  })}`;
}

/** The claim's due rule: $1 job, $2 runId, $3 freshSince, $4 refresh, $8 failedBefore, $9 plannedSince. */
const CLAIM_DUE = claimDue({ job: '$1', runId: '$2', freshSince: '$3', refresh: '$4', failedBefore: '$8', plannedSince: '$9' });

/**
 * The sessions holding the dataset lock when the claim reads pg_locks, once per statement, with their start
 * (null for another role's session, which the server hides: then the pid alone counts, as in worker-runs.ts).
 * Each holder's start is asked of pg_stat_get_activity(pid), the function under pg_stat_activity: joined to the
 * view, the server built a row for every session on the cluster each claim (0.85-0.96 ms against 0.38-0.57 a
 * read with four holders on an idle test cluster). The claim reads them only to judge a lease found live by its
 * time (a CTE is computed when first read): an input given back has no lease row, so most claims never read them.
 */
const HOLDERS = `SELECT k.pid, a.backend_start FROM (${LOCK_HOLDERS_SQL}) k LEFT JOIN LATERAL pg_stat_get_activity(k.pid) a ON true`;

/**
 * This worker's session ($1) as a holder of the dataset lock, with its start (as text: every microsecond kept):
 * read once, before its first claim.
 */
const OWN_HOLDER = `SELECT h.backend_start::text AS start FROM (${HOLDERS}) h WHERE h.pid = $1::integer`;

/**
 * Whether the lease `l` is live: not run out, and its session (if it names one) among `holders`, the same session
 * (backend_start) and not a later one given the same pid. A lease claimed after this statement began is left
 * alone whatever `holders` says: its worker may have taken the lock after pg_locks was read (`claimed_at` is
 * later than the lock it was claimed under, `now()` earlier than the read).
 */
const LEASE_LIVE = `(l.lease_until > clock_timestamp() AND (l.backend_pid IS NULL OR l.claimed_at >= now()
  OR EXISTS (SELECT 1 FROM holders h WHERE h.pid = l.backend_pid
    AND (h.backend_start IS NULL OR l.backend_start IS NULL OR h.backend_start = l.backend_start))))`;

/**
 * A time as whole milliseconds since the epoch (float8: exact below 2^53), which node-postgres reads with parseFloat:
 * a timestamptz went through its date parser (regular expressions and a Date a value), two a claimed task, ~5 us an
 * answer of the run's CPU profile. Truncated to the millisecond as that parser did.
 */
const MS_SINCE_EPOCH = (time: string) => `floor(extract(epoch FROM ${time}) * 1000)::float8`;

/**
 * One statement: lock up to $5 due tasks nobody is claiming right now (SKIP LOCKED) whose input has no live
 * lease, lease their inputs, and return every due page of the inputs leased. The lease insert is the arbiter:
 * a claim whose snapshot predates another worker's commit still finds that worker's live lease on conflict
 * (ON CONFLICT sees the latest row), and leaves that input alone. Inputs are leased in key order so that two
 * claims taking the same inputs wait for each other instead of deadlocking. A worker whose own session ($10,
 * started at $12) is gone claims nothing: its run is stopping (LOCK_LOST), and others take its inputs. That
 * session held the lock at the worker's first claim (OWN_HOLDER) and keeps it while it lives (a session lock,
 * let go only as the run ends), so the server's record of it by pid (pg_stat_get_activity) is enough here:
 * reading pg_locks each claim was 0.12-0.35 ms of a 1.1-1.4 ms claim of 64 (auto_explain, pg-profile).
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

/** Only the inputs this process claimed: a worker restarted under the same id must not keep its dead self's leases alive. */
const RENEW = `UPDATE worker_task_leases l SET lease_until = clock_timestamp() + $2::double precision * interval '1 millisecond'
  FROM unnest($3::text[], $4::text[]) AS h(job, input_key)
  WHERE l.job = h.job AND l.input_key = h.input_key AND l.worker_id = $1 AND l.lease_until > clock_timestamp()
  RETURNING l.job, l.input_key AS "inputKey", ${MS_SINCE_EPOCH('l.lease_until')} AS "leaseUntilMs", ${MS_SINCE_EPOCH('clock_timestamp()')} AS "serverNowMs"`;

/**
 * One probe of the key per input given back (LATERAL, fenced by OFFSET 0): with `input_key = ANY($3)`, or joined
 * to the keys, the plan read every lease of the operation by the key's first column alone, dead ones too (the
 * table churns faster than its statistics follow), and filtered them: 0.8-8.6 ms a release of ~60, now 0.25-0.5.
 * Each row is locked as found (in key order, as claims take them) and deleted by that version's ctid: a renewal
 * committed in between cannot make it miss the row.
 */
const RELEASE = `DELETE FROM worker_task_leases l USING (SELECT x.ctid FROM (SELECT input_key FROM unnest($3::text[]) AS u(input_key) ORDER BY 1) k
    CROSS JOIN LATERAL (SELECT w.ctid FROM worker_task_leases w WHERE w.job = $2 AND w.input_key = k.input_key AND w.worker_id = $1 OFFSET 0 FOR UPDATE) x) found
  WHERE l.ctid = found.ctid`;

/**
 * Settles the claimed tasks ($1, of job $3) that another job asking the same lookup (same operation, input, page
 * and request) answered at or after $2 (freshSince), as that answer; returns their ids. The claiming job is not
 * among the names probed: a probe of its own tasks found the task itself, half of the probes with one other job
 * (0.5 ms an adopt of 64, auto_explain), all of them with none. The other jobs' names come
 * from a skip-scan of the job index (job-names.ts), and each claimed task probes the unique index once per other
 * job (LATERAL): a join over the jobs' answered tasks read every one of them, each claim, so a job's claims
 * cost grew with its size (6.4 ms a claim of 64 at 2,400 answered tasks). Each probe is an equality on all three
 * columns of the unique index, job by job (a LATERAL per name): with `job = ANY(...)` the planner sometimes took
 * the (job, status) index instead and read every answered task of the jobs per claimed task (28-70 ms a claim of
 * 64), and with the names joined to the tasks it scanned the table.
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
   * The inputs this process holds, by `job \0 input_key`, each with the end of its lease on this process's
   * monotonic clock: the server's lease_until less the server's time when it answered, counted from when the
   * statement was sent (never later than the server's end, whatever the hosts' wall clocks say).
   */
  const held = new Map<string, { job: string; inputKey: string; endsAtMono: number }>();
  /** A lease's key: its operation (the lease row's `job`: see the head of this file) and input. */
  const heldKey = (operation: string, inputKey: string) => `${operation}\0${inputKey}`;
  /** The operation of each claimed input, by `job \0 input_key`: what its lease is held under. */
  const operationOf = new Map<string, string>();
  const endOf = (sentAtMono: number, r: LeaseTimes) => sentAtMono + (r.leaseUntilMs - r.serverNowMs);

  /** The start of this worker's session holding the lock, once it was seen holding it (null: hidden, the pid alone counts). */
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
    const { rows } = await pool.query<Omit<ClaimedTask, 'leaseUntil'> & LeaseTimes & { id: string | number }>(namedQuery(CLAIM, params));
    for (const r of rows) {
      held.set(heldKey(r.operation, r.inputKey), { job: r.operation, inputKey: r.inputKey, endsAtMono: endOf(sentAtMono, r) });
      operationOf.set(`${r.job}\0${r.inputKey}`, r.operation);
    }
    const claimed = rows.map(({ serverNowMs: _now, leaseUntilMs, ...r }) => ({ ...r, id: Number(r.id), leaseUntil: new Date(leaseUntilMs).toISOString() }));
    if (claimed.length === 0) return claimed;
    // Under the lease: an answer another job stored since is taken, and an input left with nothing to call is given back.
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
      const operation = operationOf.get(`${job}\0${k}`);
      if (operation === undefined) continue;
      (byOperation.get(operation) ?? byOperation.set(operation, []).get(operation)!).push(k);
      operationOf.delete(`${job}\0${k}`);
      held.delete(heldKey(operation, k));
    }
    for (const [operation, keys] of byOperation) await pool.query(namedQuery(RELEASE, [workerId, operation, keys]));
  }

  async function renew(): Promise<Renewal> {
    if (held.size === 0) return { held: [] };
    const mine = [...held.values()];
    const sentAtMono = performance.now();
    const { rows } = await pool.query<{ job: string; inputKey: string } & LeaseTimes>(namedQuery(RENEW,
      [workerId, leaseMs, mine.map((h) => h.job), mine.map((h) => h.inputKey)]));
    for (const r of rows) {
      const h = held.get(heldKey(r.job, r.inputKey));
      if (h) h.endsAtMono = endOf(sentAtMono, r);
    }
    // A lease that ran out is lost (another worker may hold it now): forget it.
    const kept = new Set(rows.map((r) => heldKey(r.job, r.inputKey)));
    for (const h of mine) if (!kept.has(heldKey(h.job, h.inputKey))) held.delete(heldKey(h.job, h.inputKey));
    return { held: rows.map((r) => ({ job: r.job, inputKey: r.inputKey, leaseUntil: new Date(r.leaseUntilMs).toISOString() })) };
  }

  return {
    workerId,
    leaseMs,
    /**
     * Claims the inputs of up to `maxTasks` due tasks of the job, in ledger order, and returns all their due
     * pages (so a little more than `maxTasks` when the last input has more pages); [] when none is free.
     */
    async claim(filter: ClaimFilter, maxTasks: number): Promise<ClaimedTask[]> {
      for (let attempt = 0; ; attempt++) {
        try {
          return await claimOnce(filter, maxTasks);
        } catch (err) {
          if ((err as { code?: string }).code !== '40P01' || attempt >= TASK_CLAIM_DEFAULTS.deadlockRetries) throw err;
        }
      }
    },
    /**
     * Extends the live leases this process claimed; one that ran out is not taken back (another worker may hold
     * it) and is reported no more.
     */
    renew,
    /**
     * Whether this process still holds its lease on the input, asked right before each call: a worker frozen
     * (SIGSTOP, a suspended VM) past its lease finds it ended, on the monotonic clock, even before a renewal
     * has told it another worker took the input; one that looks ended is renewed first if the server still has
     * it live (a renewal only late), so only a lease that really ended stops the run.
     */
    async holds(job: string, inputKey: string): Promise<boolean> {
      const operation = operationOf.get(`${job}\0${inputKey}`);
      const live = () => {
        const h = operation === undefined ? undefined : held.get(heldKey(operation, inputKey));
        return h !== undefined && performance.now() < h.endsAtMono;
      };
      if (live()) return true;
      // Run out by this host's reckoning (a late renewal, a busy event loop): the server says whether it still lives.
      await renew();
      return live();
    },
    /**
     * Gives back the leases on these inputs once their pages are settled (or given up). A lease not given back
     * only runs out: settled pages are not due, so nobody calls them again.
     */
    release,
    /**
     * Renews this worker's leases every lease/3 until stopped. `onRenewal` sees each result; a failed renewal
     * goes to `onError` and the next one tries again (two may fail before a lease runs out).
     */
    keepRenewed(onRenewal?: (renewal: Renewal) => void, onError?: (err: unknown) => void): { stop(): void } {
      const timer = setInterval(() => {
        renew().then(onRenewal, onError ?? (() => undefined));
      }, leaseMs / TASK_CLAIM_DEFAULTS.renewalsPerLease);
      timer.unref();
      return { stop: () => clearInterval(timer) };
    },
  };
}

export type TaskClaims = ReturnType<typeof createTaskClaims>;
