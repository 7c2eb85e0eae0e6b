DROP INDEX `raw_responses_operation_request_key_idx`;--> statement-breakpoint
DROP INDEX `tasks_status_completed_at_idx`;