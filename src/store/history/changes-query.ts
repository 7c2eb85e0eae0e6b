/**
 * The statement `netingest changes` prints: the history (the `changes` table) narrowed by the user's filters,
 * one record per change, grouped by entity. Written once for both engines; the filters are checked here and
 * put in as literals, so the statement runs through the read-only query path as any user statement does.
 */
import { NetingestError, UsageError } from '../../errors.ts';
import { openStore } from '../open-store.ts';
import { rows } from '../read-steps.ts';
import { HISTORY_ENTITIES, type HistoryEntity } from './tracking.ts';

/** Where the listing starts: the last run's changes, those of a run and every later one, or those since a time. */
export type ChangesSince = { last: true } | { runId: number } | { at: string };

export interface ChangesFilter {
  since: ChangesSince;
  /** Only the changes made by the answers of this job's tasks. */
  job?: string | undefined;
  entity?: HistoryEntity | undefined;
}

/**
 * `--since`'s value: `last`, a run id (a whole number) or an ISO date or date-time; null when it is none of
 * them (the caller names the flag in its message).
 */
export function parseChangesSince(text: string): ChangesSince | null {
  const value = text.trim();
  if (value === '' || value === 'last') return { last: true };
  if (/^\d{1,15}$/.test(value)) return { runId: Number(value) };
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)) return null;
  // A date alone, or a time without a zone, is UTC: every stored time is.
  const dateOnly = value.length === 10;
  const zoned = /(Z|[+-]\d{2}:?\d{2})$/.test(value);
  const date = new Date(dateOnly ? `${value}T00:00:00Z` : zoned ? value.replace(' ', 'T') : `${value.replace(' ', 'T')}Z`);
  return Number.isNaN(date.getTime()) ? null : { at: date.toISOString() };
}

/** An SQL string literal, the same on both engines (standard quoting; NUL refused before). */
function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

export function isHistoryEntity(text: string): text is HistoryEntity {
  return (HISTORY_ENTITIES as readonly string[]).includes(text);
}

/** The SELECT of the changes `filter` keeps, oldest first within each entity and key. */
export function changesStatement(filter: ChangesFilter): string {
  const where: string[] = [];
  const since = filter.since;
  if ('last' in since) where.push('c.run_id = (SELECT max(id) FROM runs)');
  else if ('runId' in since) where.push(`c.run_id >= ${Math.trunc(since.runId)}`);
  else where.push(`c.at >= ${literal(since.at)}`);
  if (filter.job !== undefined) where.push(`t.job = ${literal(filter.job)}`);
  if (filter.entity !== undefined) where.push(`c.entity = ${literal(filter.entity)}`);
  return `SELECT c.run_id, c.at, t.job, c.entity, c.key, c.change, c.field, c.old, c.new
    FROM changes c LEFT JOIN tasks t ON t.id = c.task_id
    WHERE ${where.join(' AND ')}
    ORDER BY c.entity, c.key, c.at, c.id`;
}

/**
 * Refuses, with what to do, a dataset made by a release before the history (opened read-only, it is not
 * upgraded): its first run with this release upgrades it and starts recording.
 */
export async function assertHistoryKept(db: string): Promise<void> {
  const store = await openStore(db);
  // A dataset that is not there, or cannot be opened, says so itself; only the statement's own failure is mapped.
  const kept = await store.read((snapshot) => snapshot.read(rows('SELECT 1 FROM changes WHERE 1 = 0'))).then(
    () => true,
    (err: unknown) => {
      if (err instanceof NetingestError) throw err;
      return false;
    },
  );
  if (!kept) {
    throw new UsageError(`${store.shown} has no history yet: it was made by an earlier release; the next \`netingest run\` upgrades it and starts recording changes`);
  }
}
