CREATE TABLE `api_calls` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`run_id` integer,
	`task_id` integer,
	`operation` text NOT NULL,
	`method` text NOT NULL,
	`path` text NOT NULL,
	`status` integer,
	`error_code` text,
	`latency_ms` real,
	`total_credits` real,
	`credits_used` real,
	`credits_remaining` real,
	`at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `api_calls_run_id_idx` ON `api_calls` (`run_id`);--> statement-breakpoint
CREATE INDEX `api_calls_task_id_idx` ON `api_calls` (`task_id`);--> statement-breakpoint
CREATE TABLE `companies` (
	`url` text PRIMARY KEY NOT NULL,
	`name` text,
	`universal_name` text,
	`type` text,
	`object_urn` integer,
	`description` text,
	`phone` text,
	`followers` blob,
	`website` text,
	`logo` text,
	`cover` blob,
	`tagline` blob,
	`founded_year` integer,
	`staff_total` integer,
	`staff_range_start` integer,
	`staff_range_end` integer,
	`funding_data` text,
	`first_seen_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `companies_universal_name_idx` ON `companies` (`universal_name`);--> statement-breakpoint
CREATE TABLE `company_hashtags` (
	`company_url` text NOT NULL,
	`position` integer NOT NULL,
	`value` text,
	PRIMARY KEY(`company_url`, `position`),
	FOREIGN KEY (`company_url`) REFERENCES `companies`(`url`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `company_hashtags_value_idx` ON `company_hashtags` (`value`);--> statement-breakpoint
CREATE TABLE `company_industries` (
	`company_url` text NOT NULL,
	`position` integer NOT NULL,
	`value` text,
	PRIMARY KEY(`company_url`, `position`),
	FOREIGN KEY (`company_url`) REFERENCES `companies`(`url`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `company_industries_value_idx` ON `company_industries` (`value`);--> statement-breakpoint
CREATE TABLE `company_locations` (
	`company_url` text NOT NULL,
	`position` integer NOT NULL,
	`is_headquarter` integer NOT NULL,
	`city` text,
	`country` text,
	`geographic_area` text,
	`is_primary` blob,
	`line1` text,
	`line2` blob,
	`postal_code` text,
	PRIMARY KEY(`company_url`, `position`),
	FOREIGN KEY (`company_url`) REFERENCES `companies`(`url`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `company_locations_country_idx` ON `company_locations` (`country`);--> statement-breakpoint
CREATE TABLE `company_specialities` (
	`company_url` text NOT NULL,
	`position` integer NOT NULL,
	`value` text,
	PRIMARY KEY(`company_url`, `position`),
	FOREIGN KEY (`company_url`) REFERENCES `companies`(`url`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `company_specialities_value_idx` ON `company_specialities` (`value`);--> statement-breakpoint
CREATE TABLE `invalid_inputs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`job` text NOT NULL,
	`file` text NOT NULL,
	`line` integer NOT NULL,
	`field` text,
	`value` text,
	`reason` text NOT NULL,
	`run_id` integer,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `invalid_inputs_job_file_line_uq` ON `invalid_inputs` (`job`,`file`,`line`);--> statement-breakpoint
CREATE TABLE `job_search_results` (
	`search_key` text NOT NULL,
	`job_url` text NOT NULL,
	`position` integer NOT NULL,
	`first_seen_at` text NOT NULL,
	`last_seen_at` text NOT NULL,
	PRIMARY KEY(`search_key`, `job_url`),
	FOREIGN KEY (`search_key`) REFERENCES `job_searches`(`search_key`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`job_url`) REFERENCES `jobs`(`url`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `job_search_results_job_url_idx` ON `job_search_results` (`job_url`);--> statement-breakpoint
CREATE TABLE `job_searches` (
	`search_key` text PRIMARY KEY NOT NULL,
	`keywords` text,
	`location` text,
	`time_posted` text,
	`experience_levels` text,
	`job_types` text,
	`workplace_types` text,
	`company_ids` text,
	`first_seen_at` text NOT NULL,
	`last_seen_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `jobs` (
	`url` text PRIMARY KEY NOT NULL,
	`title` text,
	`company_name` text,
	`company_link` text,
	`location` text,
	`posted_timestamp` integer,
	`posted_date` text,
	`is_actively_hiring` integer,
	`company_logo_url` text,
	`description_html` text,
	`description` text,
	`employment_type` text,
	`industries` text,
	`job_function` text,
	`seniority_level` text,
	`first_seen_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `jobs_posted_date_idx` ON `jobs` (`posted_date`);--> statement-breakpoint
CREATE INDEX `jobs_company_name_idx` ON `jobs` (`company_name`);--> statement-breakpoint
CREATE INDEX `jobs_company_link_idx` ON `jobs` (`company_link`);--> statement-breakpoint
CREATE TABLE `netingest_meta` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `post_media` (
	`post_id` text NOT NULL,
	`position` integer NOT NULL,
	`url` text,
	PRIMARY KEY(`post_id`, `position`),
	FOREIGN KEY (`post_id`) REFERENCES `posts`(`post_id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `posts` (
	`post_id` text PRIMARY KEY NOT NULL,
	`url` text NOT NULL,
	`author_name` text,
	`author_headline` text,
	`author_url` text,
	`author_profile_image` text,
	`posted_raw` text,
	`text_content` text,
	`hashtags` text,
	`media_description` text,
	`reactions` integer,
	`comments_count` integer,
	`first_seen_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `posts_author_url_idx` ON `posts` (`author_url`);--> statement-breakpoint
CREATE INDEX `posts_url_idx` ON `posts` (`url`);--> statement-breakpoint
CREATE TABLE `raw_responses` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`operation` text NOT NULL,
	`request_key` text NOT NULL,
	`request_json` text NOT NULL,
	`body` text NOT NULL,
	`received_at` text NOT NULL,
	`run_id` integer,
	`task_id` integer
);
--> statement-breakpoint
CREATE INDEX `raw_responses_operation_request_key_idx` ON `raw_responses` (`operation`,`request_key`);--> statement-breakpoint
CREATE INDEX `raw_responses_run_id_idx` ON `raw_responses` (`run_id`);--> statement-breakpoint
CREATE INDEX `raw_responses_task_id_idx` ON `raw_responses` (`task_id`);--> statement-breakpoint
CREATE TABLE `run_lock` (
	`id` integer PRIMARY KEY NOT NULL,
	`pid` integer NOT NULL,
	`host` text NOT NULL,
	`run_id` integer,
	`acquired_at` text NOT NULL,
	`heartbeat_at` text NOT NULL,
	CONSTRAINT "run_lock_single_row" CHECK("run_lock"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE `runs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`jobs` text NOT NULL,
	`started_at` text NOT NULL,
	`ended_at` text,
	`status` text NOT NULL,
	`pid` integer,
	`host` text,
	`credits_at_start` real,
	`credits_at_end` real,
	`credits_spent` real,
	`tasks_total` integer DEFAULT 0 NOT NULL,
	`tasks_done` integer DEFAULT 0 NOT NULL,
	`tasks_not_found` integer DEFAULT 0 NOT NULL,
	`tasks_failed` integer DEFAULT 0 NOT NULL,
	`tasks_deferred` integer DEFAULT 0 NOT NULL,
	`invalid_rows` integer DEFAULT 0 NOT NULL,
	`calls` integer DEFAULT 0 NOT NULL,
	`exit_code` integer,
	`error` text
);
--> statement-breakpoint
CREATE INDEX `runs_started_at_idx` ON `runs` (`started_at`);--> statement-breakpoint
CREATE TABLE `similar_companies` (
	`reference_url` text NOT NULL,
	`filter_key` text NOT NULL,
	`company_url` text NOT NULL,
	`filters` text NOT NULL,
	`rank` integer NOT NULL,
	`page` integer NOT NULL,
	`relevancy_score` real,
	`relevancy_grade` text,
	`first_seen_at` text NOT NULL,
	`last_seen_at` text NOT NULL,
	PRIMARY KEY(`reference_url`, `filter_key`, `company_url`),
	FOREIGN KEY (`company_url`) REFERENCES `companies`(`url`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `similar_companies_company_url_idx` ON `similar_companies` (`company_url`);--> statement-breakpoint
CREATE TABLE `tasks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`job` text NOT NULL,
	`operation` text NOT NULL,
	`input_key` text NOT NULL,
	`page` integer DEFAULT 1 NOT NULL,
	`request_json` text NOT NULL,
	`input_line` integer,
	`status` text DEFAULT 'pending' NOT NULL,
	`retryable` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error_code` text,
	`last_error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`completed_at` text,
	`run_id` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_job_input_key_page_uq` ON `tasks` (`job`,`input_key`,`page`);--> statement-breakpoint
CREATE INDEX `tasks_job_status_idx` ON `tasks` (`job`,`status`);--> statement-breakpoint
CREATE INDEX `tasks_status_completed_at_idx` ON `tasks` (`status`,`completed_at`);