-- The page each search result was listed on: a page may hold more or fewer than 10 results, so position / 10 does
-- not tell pages apart. Rows already stored get the page an earlier release took them for; the next answer to each
-- page writes its own.
ALTER TABLE "job_search_results" ADD COLUMN "page" integer;--> statement-breakpoint
UPDATE "job_search_results" SET "page" = "position" / 10 + 1;
