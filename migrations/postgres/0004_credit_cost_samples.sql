CREATE TABLE "credit_cost_samples" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "credit_cost_samples_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"api_url" text NOT NULL,
	"operation" text NOT NULL,
	"credits_used" double precision NOT NULL,
	"recorded_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE INDEX "credit_cost_samples_api_url_operation_idx" ON "credit_cost_samples" USING btree ("api_url","operation","id");