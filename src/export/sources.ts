/** What `netingest export` can export: every public table of src/store/tables.ts, and the views of migrations. */
import { DATASET_TABLES } from '../store/tables.ts';
import { UsageError } from '../errors.ts';
import { parseInstant } from '../store/history/changes-query.ts';
import { nearestName } from '../near-name.ts';

/** One exportable table or view. */
export interface ExportSource {
  name: string;
  kind: 'table' | 'view';
  /** The column `--since` filters on (`updated_at`, else `last_seen_at`), or null when the source has neither. */
  seenAtColumn: string | null;
}

const INTERNAL_TABLES = new Set(['run_lock', 'netingest_meta']);

/** The views created by migrations/0001_views.sql, with their seen-at column. */
export const VIEWS: readonly ExportSource[] = [
  { name: 'v_lookalikes', kind: 'view', seenAtColumn: 'last_seen_at' },
  { name: 'v_latest_jobs_per_company', kind: 'view', seenAtColumn: 'updated_at' },
  { name: 'v_top_posts_per_author', kind: 'view', seenAtColumn: 'updated_at' },
  { name: 'v_job_progress', kind: 'view', seenAtColumn: null },
];

/** Every exportable source, tables first (alphabetical), then views. */
export function exportSources(): ExportSource[] {
  const tables: ExportSource[] = DATASET_TABLES.filter((t) => !INTERNAL_TABLES.has(t.name)).map(({ name, columns }) => {
    const seenAtColumn = 'updated_at' in columns ? 'updated_at' : 'last_seen_at' in columns ? 'last_seen_at' : null;
    return { name, kind: 'table', seenAtColumn };
  });
  tables.sort((a, b) => a.name.localeCompare(b.name));
  return [...tables, ...VIEWS];
}

/** The source named `name`; a UsageError listing every source otherwise. */
export function findSource(name: string): ExportSource {
  const sources = exportSources();
  const found = sources.find((s) => s.name === name);
  if (found) return found;
  const tables = sources.filter((s) => s.kind === 'table').map((s) => s.name);
  const views = sources.filter((s) => s.kind === 'view').map((s) => s.name);
  // Case, `_`/`-`, or two letters (a missing `v_` or plural `s`, a typo) off: as a job file's fields are matched.
  const near = nearestName(name, sources.map((s) => s.name));
  throw new UsageError(
    `unknown table '${name}'${near ? `; did you mean '${near}'?` : '.'} Tables: ${tables.join(', ')}. Views: ${views.join(', ')}`,
    'UNKNOWN_TABLE',
  );
}

/** Parses export's `--since` (see parseInstant) into the instant in the database's format (ISO-8601 UTC). */
export function parseSince(value: string): string {
  const at = parseInstant(value);
  if (at !== null) return at;
  throw new UsageError(`--since: '${value}' is not a date; use YYYY-MM-DD or an ISO date-time such as 2026-11-01T08:00:00Z`, 'BAD_SINCE');
}
