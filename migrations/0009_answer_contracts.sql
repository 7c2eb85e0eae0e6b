CREATE TABLE `answer_anomalies` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`raw_response_id` integer NOT NULL,
	`run_id` integer,
	`task_id` integer,
	`operation` text NOT NULL,
	`request_key` text NOT NULL,
	`kind` text NOT NULL,
	`position` integer,
	`path` text,
	`reason` text NOT NULL,
	`asked_id` text,
	`answered_id` text,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `answer_anomalies_run_id_idx` ON `answer_anomalies` (`run_id`);--> statement-breakpoint
CREATE INDEX `answer_anomalies_raw_response_id_idx` ON `answer_anomalies` (`raw_response_id`);--> statement-breakpoint
CREATE TABLE `answer_drift` (
	`run_id` integer NOT NULL,
	`operation` text NOT NULL,
	`path` text NOT NULL,
	`kind` text NOT NULL,
	`count` integer NOT NULL,
	`seen` integer NOT NULL,
	`detail` text,
	PRIMARY KEY(`run_id`, `operation`, `path`, `kind`)
);
