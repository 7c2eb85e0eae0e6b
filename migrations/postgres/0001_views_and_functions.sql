-- Hand-written (drizzle-kit generate --custom): what SQLite's migrations/0001_views.sql and src/store/raw-body.ts
-- give, for PostgreSQL, so users' SQL reads both engines alike (docs/postgres.md).
--
-- raw_body(body, body_encoding): on PostgreSQL bodies are stored as the text received (body_encoding NULL;
-- TOAST compresses them), so it returns the body; a gzip body (never written here) gives NULL, as SQLite's
-- raw_body() gives NULL for a body it cannot decode.
CREATE FUNCTION raw_body(body text, body_encoding text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT CASE WHEN body_encoding IS NULL THEN body END $$;
--> statement-breakpoint

-- SQLite's functions that docs/schema.md's ready queries use: group_concat(), round(real, digits), and date(),
-- datetime() and strftime() with the modifiers users write ('now', 'start of month|year|day', 'weekday N',
-- '+/-N days|hours|minutes|seconds|months|years'). Times are UTC, as SQLite's are; a value or modifier they
-- cannot read gives NULL, as on SQLite.
CREATE FUNCTION netingest_group_concat_step(acc text, value text, separator text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT CASE WHEN value IS NULL THEN acc WHEN acc IS NULL THEN value ELSE acc || COALESCE(separator, '') || value END $$;
--> statement-breakpoint
CREATE FUNCTION netingest_group_concat_step(acc text, value text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT netingest_group_concat_step(acc, value, ',') $$;
--> statement-breakpoint
CREATE AGGREGATE group_concat(text, text) (SFUNC = netingest_group_concat_step, STYPE = text);
--> statement-breakpoint
CREATE AGGREGATE group_concat(text) (SFUNC = netingest_group_concat_step, STYPE = text);
--> statement-breakpoint
CREATE FUNCTION round(value double precision, digits integer) RETURNS double precision
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT round(value::numeric, digits)::double precision $$;
--> statement-breakpoint

-- A time as SQLite reads it (UTC, without a zone), the modifiers applied; NULL where SQLite gives NULL.
CREATE FUNCTION netingest_sqlite_time(value text, modifiers text[]) RETURNS timestamp
  LANGUAGE plpgsql STABLE PARALLEL SAFE
  AS $$
DECLARE
  t timestamp;
  m text;
  n integer;
BEGIN
  IF value IS NULL THEN RETURN NULL; END IF;
  BEGIN
    IF lower(trim(value)) = 'now' THEN
      t := now() AT TIME ZONE 'UTC';
    ELSIF trim(value) ~ '^-?[0-9]+(\.[0-9]+)?$' THEN
      t := 'epoch'::timestamp + (trim(value)::double precision - 2440587.5) * interval '1 day';
    ELSIF trim(value) ~ '(Z|z|[+-][0-9][0-9]:?[0-9][0-9])$' THEN
      t := trim(value)::timestamptz AT TIME ZONE 'UTC';
    ELSE
      t := trim(value)::timestamp;
    END IF;
    FOREACH m IN ARRAY COALESCE(modifiers, '{}') LOOP
      m := lower(regexp_replace(trim(m), '\s+', ' ', 'g'));
      IF m IN ('utc', 'localtime') THEN
        CONTINUE;
      ELSIF m = 'start of day' THEN
        t := date_trunc('day', t);
      ELSIF m = 'start of month' THEN
        t := date_trunc('month', t);
      ELSIF m = 'start of year' THEN
        t := date_trunc('year', t);
      ELSIF m ~ '^weekday [0-6]$' THEN
        n := substr(m, 9)::integer;
        t := t + ((n - extract(dow FROM t)::integer + 7) % 7) * interval '1 day';
      ELSIF m ~ '^[+-]?[0-9]+(\.[0-9]+)? (day|hour|minute|second|month|year)s?$' THEN
        t := t + m::interval;
      ELSE
        RETURN NULL;
      END IF;
    END LOOP;
  EXCEPTION WHEN data_exception THEN
    RETURN NULL;
  END;
  RETURN t;
END
$$;
--> statement-breakpoint
CREATE FUNCTION netingest_strftime(format text, t timestamp) RETURNS text
  LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
  AS $$
DECLARE
  out text := '';
  i integer := 1;
  c text;
BEGIN
  IF format IS NULL OR t IS NULL THEN RETURN NULL; END IF;
  WHILE i <= length(format) LOOP
    c := substr(format, i, 1);
    IF c <> '%' THEN
      out := out || c;
    ELSE
      i := i + 1;
      c := substr(format, i, 1);
      out := out || CASE c
        WHEN 'Y' THEN to_char(t, 'YYYY')
        WHEN 'm' THEN to_char(t, 'MM')
        WHEN 'd' THEN to_char(t, 'DD')
        WHEN 'H' THEN to_char(t, 'HH24')
        WHEN 'M' THEN to_char(t, 'MI')
        WHEN 'S' THEN to_char(t, 'SS')
        WHEN 'f' THEN to_char(t, 'SS.MS')
        WHEN 'j' THEN to_char(t, 'DDD')
        WHEN 'w' THEN extract(dow FROM t)::integer::text
        WHEN 'W' THEN lpad(((extract(doy FROM t)::integer - 1 + 7 - (extract(dow FROM t)::integer + 6) % 7) / 7)::text, 2, '0')
        WHEN 's' THEN floor(extract(epoch FROM t))::bigint::text
        WHEN 'F' THEN to_char(t, 'YYYY-MM-DD')
        WHEN 'T' THEN to_char(t, 'HH24:MI:SS')
        WHEN '%' THEN '%'
      END;
      IF out IS NULL THEN RETURN NULL; END IF;
    END IF;
    i := i + 1;
  END LOOP;
  RETURN out;
END
$$;
--> statement-breakpoint
CREATE FUNCTION strftime(format text, value text, VARIADIC modifiers text[] DEFAULT '{}') RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT netingest_strftime(format, netingest_sqlite_time(value, modifiers)) $$;
--> statement-breakpoint
CREATE FUNCTION strftime(format text, value timestamptz, VARIADIC modifiers text[] DEFAULT '{}') RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT netingest_strftime(format, netingest_sqlite_time(to_char(value AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'), modifiers)) $$;
--> statement-breakpoint
-- One-argument date(x) stays PostgreSQL's own (a cast to date); these take SQLite's modifiers.
CREATE FUNCTION date(value text, VARIADIC modifiers text[]) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT netingest_strftime('%Y-%m-%d', netingest_sqlite_time(value, modifiers)) $$;
--> statement-breakpoint
CREATE FUNCTION date(value timestamptz, VARIADIC modifiers text[]) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT strftime('%Y-%m-%d', value, VARIADIC modifiers) $$;
--> statement-breakpoint
CREATE FUNCTION datetime(value text, VARIADIC modifiers text[] DEFAULT '{}') RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT netingest_strftime('%Y-%m-%d %H:%M:%S', netingest_sqlite_time(value, modifiers)) $$;
--> statement-breakpoint
CREATE FUNCTION datetime(value timestamptz, VARIADIC modifiers text[] DEFAULT '{}') RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT strftime('%Y-%m-%d %H:%M:%S', value, VARIADIC modifiers) $$;
--> statement-breakpoint

-- A new database has no URL to rewrite (SQLite's migrations/0008 marks the rewrite due for old files).
INSERT INTO netingest_meta (key, value) VALUES ('canonical_urls', 'www') ON CONFLICT (key) DO NOTHING;
--> statement-breakpoint

-- Views for the common questions (docs/export.md describes every column). Views hold no data: they read the
-- normalized tables, so they never go stale and cost nothing to keep.

-- Each company found similar to a reference company, once, with its best rating over every filter set the
-- reference was searched with (best = highest relevancy score, then first letter grade, then best position).
-- "best_position" is 1-based across pages (page 1 first, then each page's rank).
CREATE VIEW "v_lookalikes" AS
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
CREATE VIEW "v_latest_jobs_per_company" AS
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
) latest
WHERE recency_rank <= 5
ORDER BY company_key, recency_rank;
--> statement-breakpoint

-- The five most engaged posts of each author (engagement = reactions + comments).
CREATE VIEW "v_top_posts_per_author" AS
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
) ranked_posts
WHERE engagement_rank <= 5
ORDER BY author_key, engagement_rank;
--> statement-breakpoint

-- Where each job stands: its tasks by status and its invalid input rows.
CREATE VIEW "v_job_progress" AS
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
    SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END) AS done,
    SUM(CASE WHEN status = 'not_found' THEN 1 ELSE 0 END) AS not_found,
    SUM(CASE WHEN status = 'failed' THEN 1 ELSE 0 END) AS failed,
    SUM(CASE WHEN status = 'deferred' THEN 1 ELSE 0 END) AS deferred,
    SUM(CASE WHEN status = 'pending' THEN 1 ELSE 0 END) AS pending,
    MAX(completed_at) AS last_completed_at
  FROM tasks
  GROUP BY job
) t ON t.job = j.job
LEFT JOIN (SELECT job, COUNT(*) AS invalid_rows FROM invalid_inputs GROUP BY job) i ON i.job = j.job
ORDER BY j.job;
