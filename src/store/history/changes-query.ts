/**
 * The statement `netingest changes` prints: the `changes` table narrowed by the user's filters, grouped by entity,
 * written once for both engines. Filters are checked here and put in as literals, for the read-only query path.
 */
import { NetingestError, UsageError } from '../../errors.ts';
import { openStore } from '../open-store.ts';
import type { DatasetStore } from '../dataset-store.ts';
import { rows } from '../read-steps.ts';
import { param, sql } from '../../statement.ts';
import { JOB_NAMES_SQL } from '../ledger.ts';
import { LAST_RUN_IDS } from '../runs.ts';
import type { HistoryEntity } from './tracking.ts';

/** Where the listing starts: the last run's changes, those of a run and every later one, or those since a time. */
export type ChangesSince = { last: true } | { runId: number } | { at: string };

export interface ChangesFilter {
  since: ChangesSince;
  /** Only the changes made by the answers of this job's tasks. */
  job?: string | undefined;
  entity?: HistoryEntity | undefined;
}

/** `--since`'s value: `last`, a run id or an ISO date or date-time; null when none (the caller names the flag). */
export function parseChangesSince(text: string): ChangesSince | null {
  const value = text.trim();
  // An empty value (an unset variable in a script) is no choice of the user's: not read as `last`.
  if (value === '') return null;
  if (value === 'last') return { last: true };
  if (/^\d{1,15}$/.test(value)) return { runId: Number(value) };
  const at = parseInstant(value);
  return at === null ? null : { at };
}

/**
 * A date (midnight UTC) or ISO date-time (with `Z` or an offset, else UTC) as the database's ISO-8601 UTC instant;
 * null when neither, or no calendar day (`2026-02-30`, which Date would roll into March).
 */
export function parseInstant(value: string): string | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(value.trim());
  if (!match || !namesADay(match)) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = match;
  const time = h === undefined ? '00:00:00Z' : `${h}:${mi}:${s ?? '00'}${(frac ?? '').slice(0, 4)}${utcOffset(zone)}`;
  const instant = new Date(`${y}-${mo}-${d}T${time}`);
  return Number.isNaN(instant.getTime()) ? null : instant.toISOString();
}

/** Whether parseInstant's match is a day of the calendar and, with a time, a time of day. */
function namesADay([, y, mo, d, h, mi, s]: RegExpExecArray): boolean {
  const [month, day] = [Number(mo), Number(d)];
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(Number(y), month, 0)).getUTCDate()) return false;
  return h === undefined || (Number(h) < 24 && Number(mi) < 60 && Number(s ?? 0) < 60);
}

/** `Z` (or none), `+02:00` or `-0130` as an offset Date reads. */
function utcOffset(zone: string | undefined): string {
  if (!zone || zone.toUpperCase() === 'Z') return 'Z';
  return zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
}

/** An SQL string literal, the same on both engines (standard quoting; NUL refused before). */
function literal(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}

/** The SELECT of the changes `filter` keeps, oldest first within each entity and key. */
export function changesStatement(filter: ChangesFilter): string {
  const where: string[] = [];
  const since = filter.since;
  if ('last' in since) where.push(`c.run_id IN (${LAST_RUN_IDS})`);
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
 * Refuses, saying what to do, a dataset older than the history (read-only, not upgraded: its next run upgrades it), a
 * `job` the dataset has never planned and a run id that names no run (either would list nothing, as a night without
 * changes does).
 */
export async function assertHistoryKept(db: string, filter: Pick<ChangesFilter, 'since' | 'job'>): Promise<void> {
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
  if ('runId' in filter.since) await assertRunNamed(store, filter.since.runId);
  const job = filter.job;
  if (job === undefined) return;
  const jobs = (await store.read((snapshot) => snapshot.read(rows<{ job: string }>(JOB_NAMES_SQL)))).map((r) => r.job);
  if (!jobs.includes(job)) throw new UsageError(`--job ${job}: no job of that name in ${store.shown} (its jobs: ${jobs.join(', ') || 'none yet'})`);
}

const RUN_IDS_SQL = sql`SELECT min(id) AS first, max(id) AS last, count(CASE WHEN id = ${param} THEN 1 END) AS named FROM runs`;

/** Refuses `--since <id>` when no run has that id, giving the ids there are (and the date form an 8-digit date meant). */
async function assertRunNamed(store: DatasetStore, runId: number): Promise<void> {
  const id = Math.trunc(runId);
  const [found] = await store.read((snapshot) => snapshot.read(rows<{ first: unknown; last: unknown; named: unknown }>(RUN_IDS_SQL, [id])));
  if (Number(found?.named ?? 0) > 0) return;
  const [first, last] = [found?.first ?? null, found?.last ?? null].map((v) => (v === null ? null : String(v)));
  const ids = first === null ? 'none yet' : first === last ? first : `${first} to ${last}`;
  throw new UsageError(`--since ${id}: no run ${id} in ${store.shown} (its run ids: ${ids})${dateHint(String(id))}`);
}

/** `20261129` typed for a date: the form --since reads dates in, when the digits make a calendar day. */
function dateHint(digits: string): string {
  const date = digits.length === 8 ? `${digits.slice(0, 4)}-${digits.slice(4, 6)}-${digits.slice(6)}` : null;
  return date !== null && parseInstant(date) !== null ? `; for the date, write it as YYYY-MM-DD: --since ${date}` : '';
}
