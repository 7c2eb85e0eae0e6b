ALTER TABLE `run_lock` ADD `process_start` text;--> statement-breakpoint
ALTER TABLE `run_lock` ADD `lease_ms` integer;