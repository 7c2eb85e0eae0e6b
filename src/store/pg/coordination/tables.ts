/**
 * Tables that let several `netingest run` workers share one job on PostgreSQL (on SQLite one run holds the dataset's
 * lock). Times are the server's clock, not a worker's, so hosts with skewed clocks agree when a lease or slot ends.
 */
import { sql } from 'drizzle-orm';
import { bigint, int, real, table, text, time } from '../../table-kit.ts';
import { buildTables } from '../../table-build.ts';
import { pg } from '../schema.ts';

const now = sql`now()`;

/**
 * Which worker holds an input (all its due pages) until when; `job` is the operation's name: one lease per lookup.
 * Live till it runs out and while its session holds the dataset lock. No index on worker_id: releases walked dead leases.
 */
const workerTaskLeases = table('worker_task_leases', {
  job: text().notNull(),
  input_key: text().notNull(),
  worker_id: text().notNull(),
  lease_until: time().notNull(),
  claimed_at: time().notNull().default(now),
  backend_pid: int(),
  backend_start: time(),
}, { primaryKey: ['job', 'input_key'] });

/** Start times of calls under a shared rate limit (`gate`: the API URL or account the limit is for). */
const rateSlots = table('rate_slots', {
  id: bigint().autoId('always'),
  gate: text().notNull(),
  started_at: time().notNull(),
}, { indexes: { rate_slots_gate_started_idx: ['gate', 'started_at'] } });

/**
 * The account's balance as its answers last reported it, one row per API URL. `credits_used` orders reports:
 * an answer that arrives late (a lower counter than the stored one) does not put back credits already spent.
 */
const accountBalance = table('account_balance', {
  api_url: text().primaryKey(),
  balance: real(),
  credits_used: real(),
  total_credits: real(),
  reported_at: time(),
  /**
   * Credits the counters showed used that no run has been charged yet (answers that came before lower ones):
   * a charge takes at most this, so the runs sharing the account add up to no more than was billed.
   */
  credits_uncharged: real(),
  /**
   * The counter the account's growth is known from: the first reported with no live report of its plan before it.
   * An answer under it may have been billed before it, a growth no run was charged for (null: credits_used's).
   */
  credits_counted_from: real(),
});

/** A call's claim on the balance while it is in flight; it stops counting once settled or expired. */
const creditReservations = table('credit_reservations', {
  id: bigint().autoId('always'),
  api_url: text().notNull(),
  /** The shared run the call belongs to, for its `maxPerRun`. */
  run_key: text().notNull(),
  worker_id: text().notNull(),
  cost: real().notNull(),
  expires_at: time().notNull(),
  created_at: time().notNull().default(now),
}, { indexes: { credit_reservations_api_url_expires_idx: ['api_url', 'expires_at'], credit_reservations_worker_idx: ['worker_id'] } });

/** What the settled calls of one shared run (all its workers) cost: what `maxPerRun` is checked against. */
const creditRunSpend = table('credit_run_spend', {
  run_key: text().primaryKey(),
  api_url: text().notNull(),
  spent: real().notNull().default(0),
  updated_at: time().notNull().default(now),
});

/**
 * Which session (`backend_pid`, `backend_start`) works a run: live while it holds the dataset lock (worker-runs.ts).
 * `run_key` is the shared run it belongs to, what `maxPerRun` counts (credit_run_spend).
 */
const workerRuns = table('worker_runs', {
  run_id: bigint().primaryKey(),
  run_key: text().notNull(),
  backend_pid: int().notNull(),
  backend_start: time(),
});

/**
 * Recent credits_used counters per account and operation from every worker and run: their sorted steps are a call's
 * cost, whereas one worker's own answers step by every worker's calls. Each settle prunes the older rows.
 */
const creditCostSamples = table('credit_cost_samples', {
  id: bigint().autoId('always'),
  api_url: text().notNull(),
  operation: text().notNull(),
  credits_used: real().notNull(),
  recorded_at: time().notNull().default(now),
}, { indexes: { credit_cost_samples_api_url_operation_idx: ['api_url', 'operation', 'id'] } });

const COORDINATION_TABLES = [workerTaskLeases, rateSlots, accountBalance, creditReservations, creditRunSpend, workerRuns, creditCostSamples] as const;
const TABLES = buildTables(COORDINATION_TABLES, pg) as Record<(typeof COORDINATION_TABLES)[number]['name'], unknown>;

// drizzle-kit finds the tables among this module's exports (and only tables are exported here).
export const { worker_task_leases, rate_slots, account_balance, credit_reservations, credit_run_spend, worker_runs, credit_cost_samples } = TABLES;
