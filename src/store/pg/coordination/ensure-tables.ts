/**
 * Creates the coordination tables (tables.ts) for this session, before they are folded into the generated
 * PostgreSQL migrations (migrations/postgres/) when the pg-schema branch is merged.
 */
import type pg from 'pg';

/**
 * The statements drizzle-kit generates from tables.ts (`npx drizzle-kit generate --dialect postgresql
 * --schema src/store/pg/coordination/tables.ts --out <temporary folder>`), pasted as generated except for
 * IF NOT EXISTS, so that every worker may run them on start.
 */
const COORDINATION_DDL = [
  `CREATE TABLE IF NOT EXISTS "account_balance" (
    "api_url" text PRIMARY KEY NOT NULL,
    "balance" double precision,
    "credits_used" double precision,
    "total_credits" double precision,
    "reported_at" timestamp with time zone
  )`,
  `CREATE TABLE IF NOT EXISTS "credit_reservations" (
    "id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "credit_reservations_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
    "api_url" text NOT NULL,
    "run_key" text NOT NULL,
    "worker_id" text NOT NULL,
    "cost" double precision NOT NULL,
    "expires_at" timestamp with time zone NOT NULL,
    "created_at" timestamp with time zone DEFAULT now() NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS "credit_run_spend" (
    "run_key" text PRIMARY KEY NOT NULL,
    "api_url" text NOT NULL,
    "spent" double precision DEFAULT 0 NOT NULL,
    "updated_at" timestamp with time zone DEFAULT now() NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS "rate_slots" (
    "id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "rate_slots_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
    "gate" text NOT NULL,
    "started_at" timestamp with time zone NOT NULL
  )`,
  `CREATE TABLE IF NOT EXISTS "worker_task_leases" (
    "job" text NOT NULL,
    "input_key" text NOT NULL,
    "worker_id" text NOT NULL,
    "lease_until" timestamp with time zone NOT NULL,
    "claimed_at" timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT "worker_task_leases_job_input_key_pk" PRIMARY KEY("job","input_key")
  )`,
  `CREATE INDEX IF NOT EXISTS "credit_reservations_api_url_expires_idx" ON "credit_reservations" USING btree ("api_url","expires_at")`,
  `CREATE INDEX IF NOT EXISTS "credit_reservations_worker_idx" ON "credit_reservations" USING btree ("worker_id")`,
  `CREATE INDEX IF NOT EXISTS "rate_slots_gate_started_idx" ON "rate_slots" USING btree ("gate","started_at")`,
  `CREATE INDEX IF NOT EXISTS "worker_task_leases_worker_idx" ON "worker_task_leases" USING btree ("worker_id")`,
];

/** Any fixed number: the lock only keeps workers starting together from creating the same table at once. */
const DDL_LOCK_KEY = 2_104_000_021;

/** Creates the tables workers coordinate through, where they are missing (idempotent, safe to run concurrently). */
export async function ensureCoordinationTables(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [DDL_LOCK_KEY]);
    for (const statement of COORDINATION_DDL) await client.query(statement);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
