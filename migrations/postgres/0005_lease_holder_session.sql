ALTER TABLE "worker_task_leases" ADD COLUMN "backend_pid" integer;--> statement-breakpoint
ALTER TABLE "worker_task_leases" ADD COLUMN "backend_start" timestamp with time zone;