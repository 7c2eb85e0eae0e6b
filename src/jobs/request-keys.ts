import { createHash } from 'node:crypto';
import type { SearchJobsQuery, SimilarCompaniesAccount } from '../spec/types.ts';
import { SEARCH_QUERY_PARAMS } from './search-query.ts';

/** Key of the empty similar-companies filter set (no `account` members, or only empty ones). */
export const EMPTY_FILTER_KEY = 'f_none';

/** A search-jobs query's key without paging: `q_` + 16 hex of sha256 of its sorted, trimmed, non-empty parameters (whitespace splits no query). */
export function searchKey(query: SearchJobsQuery): string {
  const entries: Array<[string, string | string[]]> = [];
  for (const param of [...SEARCH_QUERY_PARAMS].sort()) {
    const value = query[param];
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) {
      const items = value.map((v) => String(v).trim()).filter((v) => v !== '');
      if (items.length > 0) entries.push([param, items]);
    } else {
      const s = String(value).trim();
      if (s !== '') entries.push([param, s]);
    }
  }
  return `q_${sha256Hex16(JSON.stringify(entries))}`;
}

/** Stable key of a similar-companies filter set: `f_` + 16 hex of the sha256 of its canonical JSON. */
export function filterKey(account: SimilarCompaniesAccount | undefined | null): string {
  const canonical = canonicalize(account);
  if (canonical === undefined) return EMPTY_FILTER_KEY;
  return `f_${sha256Hex16(JSON.stringify(canonical))}`;
}

/** Sorted-key copy without empty members; undefined when nothing is left. */
function canonicalize(value: unknown): unknown {
  if (value === undefined || value === null) return undefined;
  if (Array.isArray(value)) {
    const items = value.map(canonicalize).filter((v) => v !== undefined);
    return items.length > 0 ? items : undefined;
  }
  if (typeof value === 'object') {
    const members = Object.keys(value).sort().map((key) => [key, canonicalize((value as Record<string, unknown>)[key])] as const);
    const kept = members.filter(([, v]) => v !== undefined);
    return kept.length > 0 ? Object.fromEntries(kept) : undefined;
  }
  return value;
}

function sha256Hex16(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}
