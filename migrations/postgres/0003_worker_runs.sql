CREATE TABLE "worker_runs" (
	"run_id" bigint PRIMARY KEY NOT NULL,
	"run_key" text NOT NULL,
	"backend_pid" integer NOT NULL,
	"backend_start" timestamp with time zone
);
