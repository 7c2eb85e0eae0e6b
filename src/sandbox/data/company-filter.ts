import type { CompanyRecord, SimilarCompaniesAccount } from '../../spec/types.ts';
import { COUNTRY_NAMES } from './words.ts';

/** The similar-companies filters of a request, ready to test company records. */
export interface CompanyFilter {
  /** A canonical text of the filters: order of locations and ranges does not matter, case neither. */
  key: string;
  /** True when the company passes every filter. */
  matches(company: CompanyRecord): boolean;
}

/** Country code of each spelling a filter may use: the code itself and every lower-case name of it. */
const COUNTRY_BY_NAME = new Map<string, string>(
  Object.entries(COUNTRY_NAMES).flatMap(([code, names]) => [[code, code] as const, ...names.map((n) => [n, code] as const)]),
);

/**
 * The filters of `account`, or null when it filters nothing (no account, an empty one, or only empty lists,
 * which the client also treats as no filter). `location` keeps companies whose headquarter country is named
 * (by code or lower-case name); `employeeSize` keeps those whose staff.total lies in any range, bounds
 * included, whatever its `type` (only RANGE is known).
 */
export function compileFilter(account: SimilarCompaniesAccount | undefined): CompanyFilter | null {
  const locations = (account?.location ?? []).map((l) => l.trim().toLowerCase().replace(/\s+/g, ' ')).filter((l) => l !== '');
  const ranges = account?.employeeSize?.range ?? [];
  if (locations.length === 0 && ranges.length === 0) return null;
  const countries = new Set(locations.map((l) => COUNTRY_BY_NAME.get(l) ?? l));
  const key = JSON.stringify([[...countries].sort(), ranges.map((r) => `${r.start}-${r.end}`).sort()]);
  return {
    key,
    matches(company) {
      if (countries.size > 0 && !countries.has(company.locations.headquarter.country.toLowerCase())) return false;
      const total = company.staff.total;
      return ranges.length === 0 || ranges.some((r) => total >= r.start && total <= r.end);
    },
  };
}
