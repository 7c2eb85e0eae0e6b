CREATE TABLE `changes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`run_id` integer,
	`task_id` integer,
	`at` text NOT NULL,
	`entity` text NOT NULL,
	`key` text NOT NULL,
	`change` text NOT NULL,
	`field` text,
	`old` text,
	`new` text
);
--> statement-breakpoint
CREATE INDEX `changes_at_idx` ON `changes` (`at`);--> statement-breakpoint
CREATE INDEX `changes_entity_key_idx` ON `changes` (`entity`,`key`);--> statement-breakpoint
CREATE INDEX `changes_run_id_idx` ON `changes` (`run_id`);