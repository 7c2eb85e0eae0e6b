/**
 * Where `netingest report` last wrote its page, kept in netingest_meta so that `status` can end with it on
 * either engine (report/write-report.ts writes it).
 */
import { value, type Reads } from './read-steps.ts';
import { sql, param } from '../statement.ts';

/** netingest_meta key: JSON `{ path, writtenAt }`. */
export const LAST_REPORT_KEY = 'last_report';

/** The last report written for this dataset, or null when none was (or the row is not ours to read). */
export interface LastReport {
  path: string;
  writtenAt: string;
}

/** The last report's path and time, as Reads (read-steps.ts). */
export function* lastReportReads(): Reads<LastReport | null> {
  const text = yield* value<string>(sql`SELECT value FROM netingest_meta WHERE key = ${param}`, [LAST_REPORT_KEY]);
  if (text === undefined) return null;
  try {
    const parsed = JSON.parse(text) as Partial<LastReport>;
    return typeof parsed.path === 'string' && typeof parsed.writtenAt === 'string' ? { path: parsed.path, writtenAt: parsed.writtenAt } : null;
  } catch {
    return null;
  }
}
