CREATE TABLE "account_balance" (
	"api_url" text PRIMARY KEY NOT NULL,
	"balance" double precision,
	"credits_used" double precision,
	"total_credits" double precision,
	"reported_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "credit_reservations" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "credit_reservations_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"api_url" text NOT NULL,
	"run_key" text NOT NULL,
	"worker_id" text NOT NULL,
	"cost" double precision NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "credit_run_spend" (
	"run_key" text PRIMARY KEY NOT NULL,
	"api_url" text NOT NULL,
	"spent" double precision DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rate_slots" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "rate_slots_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"gate" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "worker_task_leases" (
	"job" text NOT NULL,
	"input_key" text NOT NULL,
	"worker_id" text NOT NULL,
	"lease_until" timestamp with time zone NOT NULL,
	"claimed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "worker_task_leases_job_input_key_pk" PRIMARY KEY("job","input_key")
);
--> statement-breakpoint
CREATE INDEX "credit_reservations_api_url_expires_idx" ON "credit_reservations" USING btree ("api_url","expires_at");--> statement-breakpoint
CREATE INDEX "credit_reservations_worker_idx" ON "credit_reservations" USING btree ("worker_id");--> statement-breakpoint
CREATE INDEX "rate_slots_gate_started_idx" ON "rate_slots" USING btree ("gate","started_at");--> statement-breakpoint
CREATE INDEX "worker_task_leases_worker_idx" ON "worker_task_leases" USING btree ("worker_id");