-- Views for the common questions (docs/export.md describes every column). Views hold no data: they read the
-- normalized tables, so they never go stale and cost nothing to keep.

-- Each company found similar to a reference company, once, with its best rating over every filter set the
-- reference was searched with (best = highest relevancy score, then first letter grade, then best position).
-- `best_position` is 1-based across pages (page 1 first, then each page's rank).
CREATE VIEW `v_lookalikes` AS
SELECT
  ranked.reference_url,
  ranked.company_url,
  c.name AS company_name,
  c.website AS company_website,
  c.staff_total AS company_staff_total,
  hq.city AS company_hq_city,
  hq.country AS company_hq_country,
  ranked.relevancy_grade AS best_grade,
  ranked.relevancy_score AS best_score,
  ranked.best_position,
  ranked.filter_sets,
  ranked.all_first_seen_at AS first_seen_at,
  ranked.all_last_seen_at AS last_seen_at
FROM (
  SELECT
    positioned.*,
    MIN(positioned.position) OVER w_all AS best_position,
    COUNT(*) OVER w_all AS filter_sets,
    MIN(positioned.first_seen_at) OVER w_all AS all_first_seen_at,
    MAX(positioned.last_seen_at) OVER w_all AS all_last_seen_at,
    ROW_NUMBER() OVER (
      PARTITION BY positioned.reference_url, positioned.company_url
      ORDER BY positioned.relevancy_score DESC NULLS LAST, positioned.relevancy_grade ASC NULLS LAST, positioned.position ASC
    ) AS pick
  FROM (
    SELECT
      s.*,
      ROW_NUMBER() OVER (PARTITION BY s.reference_url, s.filter_key ORDER BY s.page, s.rank) AS position
    FROM similar_companies s
  ) positioned
  WINDOW w_all AS (PARTITION BY positioned.reference_url, positioned.company_url)
) ranked
LEFT JOIN companies c ON c.url = ranked.company_url
LEFT JOIN company_locations hq ON hq.company_url = ranked.company_url AND hq.is_headquarter = 1
WHERE ranked.pick = 1
ORDER BY ranked.reference_url, ranked.best_position, ranked.company_url;
--> statement-breakpoint

-- The five most recent jobs of each hiring company (by company page URL, or by name when a job has no link).
CREATE VIEW `v_latest_jobs_per_company` AS
SELECT
  company_key,
  company_name,
  company_link,
  recency_rank,
  company_jobs,
  url AS job_url,
  title,
  location,
  posted_date,
  posted_timestamp,
  is_actively_hiring,
  employment_type,
  seniority_level,
  updated_at
FROM (
  SELECT
    j.*,
    COALESCE(j.company_link, j.company_name) AS company_key,
    ROW_NUMBER() OVER w AS recency_rank,
    COUNT(*) OVER (PARTITION BY COALESCE(j.company_link, j.company_name)) AS company_jobs
  FROM jobs j
  WHERE COALESCE(j.company_link, j.company_name) IS NOT NULL
  WINDOW w AS (
    PARTITION BY COALESCE(j.company_link, j.company_name)
    ORDER BY j.posted_timestamp DESC NULLS LAST, j.posted_date DESC NULLS LAST, j.updated_at DESC, j.url
  )
)
WHERE recency_rank <= 5
ORDER BY company_key, recency_rank;
--> statement-breakpoint

-- The five most engaged posts of each author (engagement = reactions + comments).
CREATE VIEW `v_top_posts_per_author` AS
SELECT
  author_key,
  author_name,
  author_url,
  engagement_rank,
  author_posts,
  post_id,
  url AS post_url,
  engagement,
  reactions,
  comments_count,
  posted_raw,
  text_content,
  updated_at
FROM (
  SELECT
    p.*,
    COALESCE(p.author_url, p.author_name) AS author_key,
    COALESCE(p.reactions, 0) + COALESCE(p.comments_count, 0) AS engagement,
    ROW_NUMBER() OVER w AS engagement_rank,
    COUNT(*) OVER (PARTITION BY COALESCE(p.author_url, p.author_name)) AS author_posts
  FROM posts p
  WHERE COALESCE(p.author_url, p.author_name) IS NOT NULL
  WINDOW w AS (
    PARTITION BY COALESCE(p.author_url, p.author_name)
    ORDER BY COALESCE(p.reactions, 0) + COALESCE(p.comments_count, 0) DESC, p.reactions DESC NULLS LAST, p.post_id
  )
)
WHERE engagement_rank <= 5
ORDER BY author_key, engagement_rank;
--> statement-breakpoint

-- Where each job stands: its tasks by status and its invalid input rows.
CREATE VIEW `v_job_progress` AS
SELECT
  j.job,
  COALESCE(t.operation, '') AS operation,
  COALESCE(t.tasks, 0) AS tasks,
  COALESCE(t.done, 0) AS done,
  COALESCE(t.not_found, 0) AS not_found,
  COALESCE(t.failed, 0) AS failed,
  COALESCE(t.deferred, 0) AS deferred,
  COALESCE(t.pending, 0) AS pending,
  COALESCE(i.invalid_rows, 0) AS invalid_rows,
  t.last_completed_at
FROM (SELECT job FROM tasks UNION SELECT job FROM invalid_inputs) j
LEFT JOIN (
  SELECT
    job,
    MIN(operation) AS operation,
    COUNT(*) AS tasks,
    SUM(status = 'done') AS done,
    SUM(status = 'not_found') AS not_found,
    SUM(status = 'failed') AS failed,
    SUM(status = 'deferred') AS deferred,
    SUM(status = 'pending') AS pending,
    MAX(completed_at) AS last_completed_at
  FROM tasks
  GROUP BY job
) t ON t.job = j.job
LEFT JOIN (SELECT job, COUNT(*) AS invalid_rows FROM invalid_inputs GROUP BY job) i ON i.job = j.job
ORDER BY j.job;
