/**
 * Tables that let several `netingest run` workers share one job on PostgreSQL (issue #21 items 3 and 4). SQLite
 * has none of them: there one run holds the dataset's lock. Times are the server's clock (timestamptz), never a
 * worker's, so workers on hosts whose clocks disagree still agree on when a lease or a slot ends.
 */
import { sql } from 'drizzle-orm';
import { bigint, doublePrecision, index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

const at = (name: string) => timestamp(name, { withTimezone: true, mode: 'string' });

/**
 * Which worker holds an input (`job` holds the operation's name: one lease per lookup, whichever job asks it) (all its due pages, so they are called in order by one worker) and
 * until when. A lease that has run out (its worker stalled) no longer counts: the input is claimable. Nor does
 * one whose worker's session (`backend_pid`, started at `backend_start`) no longer holds the dataset lock: the
 * server drops a killed worker's session at once. A lease with no session counts by its time alone.
 */
export const workerTaskLeases = pgTable(
  'worker_task_leases',
  {
    job: text('job').notNull(),
    inputKey: text('input_key').notNull(),
    workerId: text('worker_id').notNull(),
    leaseUntil: at('lease_until').notNull(),
    claimedAt: at('claimed_at').notNull().default(sql`now()`),
    backendPid: integer('backend_pid'),
    backendStart: at('backend_start'),
  },
  (t) => [primaryKey({ columns: [t.job, t.inputKey] }), index('worker_task_leases_worker_idx').on(t.workerId)],
);

/** Start times of calls under a shared rate limit (`gate`: the API URL or account the limit is for). */
export const rateSlots = pgTable(
  'rate_slots',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    gate: text('gate').notNull(),
    startedAt: at('started_at').notNull(),
  },
  (t) => [index('rate_slots_gate_started_idx').on(t.gate, t.startedAt)],
);

/**
 * The account's balance as its answers last reported it, one row per API URL. `credits_used` orders reports:
 * an answer that arrives late (a lower counter than the stored one) does not put back credits already spent.
 */
export const accountBalance = pgTable('account_balance', {
  apiUrl: text('api_url').primaryKey(),
  balance: doublePrecision('balance'),
  creditsUsed: doublePrecision('credits_used'),
  totalCredits: doublePrecision('total_credits'),
  reportedAt: at('reported_at'),
});

/** A call's claim on the balance while it is in flight; it stops counting once settled or expired. */
export const creditReservations = pgTable(
  'credit_reservations',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    apiUrl: text('api_url').notNull(),
    /** The shared run the call belongs to, for its `maxPerRun`. */
    runKey: text('run_key').notNull(),
    workerId: text('worker_id').notNull(),
    cost: doublePrecision('cost').notNull(),
    expiresAt: at('expires_at').notNull(),
    createdAt: at('created_at').notNull().default(sql`now()`),
  },
  (t) => [
    index('credit_reservations_api_url_expires_idx').on(t.apiUrl, t.expiresAt),
    index('credit_reservations_worker_idx').on(t.workerId),
  ],
);

/** What the settled calls of one shared run (all its workers) cost: what `maxPerRun` is checked against. */
export const creditRunSpend = pgTable('credit_run_spend', {
  runKey: text('run_key').primaryKey(),
  apiUrl: text('api_url').notNull(),
  spent: doublePrecision('spent').notNull().default(0),
  updatedAt: at('updated_at').notNull().default(sql`now()`),
});

/**
 * Which session works a run, and which shared run it belongs to. A run is live while `backend_pid` (started at
 * `backend_start`) holds the dataset lock (dataset-lock.ts), whichever host it runs on; a run still marked
 * running whose session is gone is abandoned. `run_key` is what `maxPerRun` counts (credit_run_spend): a worker
 * started while a live run works one of its jobs joins that run's key.
 */
export const workerRuns = pgTable('worker_runs', {
  runId: bigint('run_id', { mode: 'number' }).primaryKey(),
  runKey: text('run_key').notNull(),
  backendPid: integer('backend_pid').notNull(),
  backendStart: at('backend_start'),
});

/**
 * Recent credits_used counters of an account's answers, per operation, from every worker and run that uses it:
 * their sorted steps are what a call costs, whereas one worker's own answers step by every worker's calls. Kept
 * bounded: each settle prunes its operation's older rows (shared-credit-budget.ts).
 */
export const creditCostSamples = pgTable(
  'credit_cost_samples',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    apiUrl: text('api_url').notNull(),
    operation: text('operation').notNull(),
    creditsUsed: doublePrecision('credits_used').notNull(),
    recordedAt: at('recorded_at').notNull().default(sql`now()`),
  },
  (t) => [index('credit_cost_samples_api_url_operation_idx').on(t.apiUrl, t.operation, t.id)],
);
