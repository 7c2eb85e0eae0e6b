-- A settle changes no indexed column of tasks once (job, status) is not indexed here (store/tables.ts), and a
-- page kept 40% free leaves its new version room on the same page: a HOT update, no index rewritten.
-- Hand-added below drizzle-kit's DROP: it does not model storage parameters. Pages written from now on keep the room.
DROP INDEX "tasks_job_status_idx";--> statement-breakpoint
ALTER TABLE "tasks" SET (fillfactor = 60);
