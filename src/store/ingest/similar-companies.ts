/**
 * similar-companies pages -> companies, their child sets (locations, industries, specialities, hashtags) and
 * the similar_companies link rows. Prepared once; every call runs inside the caller's transaction.
 */
import type BetterSqlite3 from 'better-sqlite3';
import type { CompanyAnswer, SimilarCompaniesAnswer } from '../../operations/similar-companies.ts';
import { canonicalCompanyUrl } from '../../urls/canonical.ts';
import { networkHost } from '../../urls/network-host.ts';
import type { SimilarCompaniesIngestRequest } from '../ingest-request.ts';
import type { AnswerAnomaly } from '../answer-anomalies.ts';
import { countryName } from './country-name.ts';
import { arrayOf, givenValue, jsonText, objectOf, sqlValue, urlKey } from './values.ts';

/** Rows written for one response, and company records left out because they carry no URL at all. */
export interface NormalizeResult {
  rows: number;
  skipped: number;
  /** What the answer held that was not stored as asked (a post answer naming another post). */
  anomalies?: AnswerAnomaly[];
}

const COMPANY_COLUMNS = [
  'url',
  'name',
  'universal_name',
  'type',
  'object_urn',
  'description',
  'phone',
  'followers',
  'website',
  'logo',
  'cover',
  'tagline',
  'founded_year',
  'staff_total',
  'staff_range_start',
  'staff_range_end',
  'funding_data',
] as const;

/** Upsert keeping the earliest first_seen_at and the latest updated_at, so replay order cannot move them back. */
export const UPSERT_COMPANY_SQL = `
  INSERT INTO companies (${COMPANY_COLUMNS.join(', ')}, first_seen_at, updated_at)
  VALUES (${COMPANY_COLUMNS.map(() => '?').join(', ')}, ?, ?)
  ON CONFLICT (url) DO UPDATE SET
    ${COMPANY_COLUMNS.slice(1).map((c) => `${c} = excluded.${c}`).join(',\n    ')},
    first_seen_at = min(first_seen_at, excluded.first_seen_at),
    updated_at = max(updated_at, excluded.updated_at)`;

export const INSERT_LOCATION_SQL = `
  INSERT INTO company_locations
    (company_url, position, is_headquarter, city, country, country_name, geographic_area, is_primary, line1, line2, postal_code)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

export const UPSERT_SIMILAR_SQL = `
  INSERT INTO similar_companies
    (reference_url, filter_key, company_url, filters, rank, page, relevancy_score, relevancy_grade, first_seen_at, last_seen_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (reference_url, filter_key, company_url) DO UPDATE SET
    filters = excluded.filters,
    rank = excluded.rank,
    page = excluded.page,
    relevancy_score = excluded.relevancy_score,
    relevancy_grade = excluded.relevancy_grade,
    first_seen_at = min(first_seen_at, excluded.first_seen_at),
    last_seen_at = max(last_seen_at, excluded.last_seen_at)`;

const VALUE_TABLES = ['company_industries', 'company_specialities', 'company_hashtags'] as const;
const CHILD_TABLES = ['company_locations', ...VALUE_TABLES] as const;

/** Prepares the statements and returns the normalizer of one similar-companies response. */
export function prepareSimilarCompanies(
  sqlite: BetterSqlite3.Database,
): (req: SimilarCompaniesIngestRequest, res: SimilarCompaniesAnswer, seenAt: string) => NormalizeResult {
  const upsertCompany = sqlite.prepare(UPSERT_COMPANY_SQL);
  const deleteChildren = CHILD_TABLES.map((t) => sqlite.prepare(`DELETE FROM ${t} WHERE company_url = ?`));
  const insertLocation = sqlite.prepare(INSERT_LOCATION_SQL);
  const [insertIndustry, insertSpeciality, insertHashtag] = VALUE_TABLES.map((t) =>
    sqlite.prepare(`INSERT INTO ${t} (company_url, position, value) VALUES (?, ?, ?)`),
  ) as [BetterSqlite3.Statement, BetterSqlite3.Statement, BetterSqlite3.Statement];
  const upsertSimilar = sqlite.prepare(UPSERT_SIMILAR_SQL);
  const host = networkHost();

  function insertValues(stmt: BetterSqlite3.Statement, companyUrl: string, values: unknown): number {
    let position = 0;
    for (const value of arrayOf(values)) stmt.run(companyUrl, ++position, sqlValue(value));
    return position;
  }

  function writeCompany(c: CompanyAnswer, url: string, seenAt: string): number {
    const staff = objectOf(c.staff);
    const range = objectOf(staff['range']);
    upsertCompany.run(
      url,
      sqlValue(c.name),
      sqlValue(c.universalName),
      sqlValue(c.type),
      sqlValue(c.objectUrn),
      sqlValue(c.description),
      sqlValue(c.phone),
      givenValue(c.followers),
      sqlValue(c.website),
      sqlValue(c.logo),
      givenValue(c.cover),
      givenValue(c.tagline),
      sqlValue(c.foundedYear),
      sqlValue(staff['total']),
      sqlValue(range['start']),
      sqlValue(range['end']),
      jsonText(c.fundingData),
      seenAt,
      seenAt,
    );
    // Child sets describe the company as last seen: replace them whole.
    for (const stmt of deleteChildren) stmt.run(url);
    let rows = 1;
    const locations = objectOf(c.locations);
    const addresses: Array<[unknown, number]> = [];
    if (locations['headquarter'] !== null && locations['headquarter'] !== undefined) addresses.push([locations['headquarter'], 1]);
    for (const other of arrayOf(locations['other'])) addresses.push([other, 0]);
    let position = 0;
    for (const [address, isHeadquarter] of addresses) {
      const a = objectOf(address);
      insertLocation.run(
        url,
        ++position,
        isHeadquarter,
        sqlValue(a['city']),
        sqlValue(a['country']),
        countryName(a['country']),
        sqlValue(a['geographicArea']),
        givenValue(a['isPrimary']),
        sqlValue(a['line1']),
        givenValue(a['line2']),
        sqlValue(a['postalCode']),
      );
    }
    rows += position;
    rows += insertValues(insertIndustry, url, c.industries);
    rows += insertValues(insertSpeciality, url, c.specialities);
    rows += insertValues(insertHashtag, url, c.hashtags);
    return rows;
  }

  return (req, res, seenAt) => {
    const referenceUrl = urlKey(req.referenceUrl, canonicalCompanyUrl, host) ?? req.referenceUrl;
    const filters = JSON.stringify(req.filters ?? {});
    let rows = 0;
    let skipped = 0;
    let rank = 0;
    for (const record of arrayOf(objectOf(res.data)['content'])) {
      rank++;
      const company = objectOf(record) as CompanyAnswer;
      const url = urlKey(company.url, canonicalCompanyUrl, host);
      if (url === null) {
        skipped++;
        continue;
      }
      rows += writeCompany(company, url, seenAt);
      const relevancy = objectOf(company.relevancy);
      upsertSimilar.run(
        referenceUrl,
        req.filterKey,
        url,
        filters,
        rank,
        req.page,
        sqlValue(relevancy['score']),
        sqlValue(relevancy['value']),
        seenAt,
        seenAt,
      );
      rows++;
    }
    return { rows, skipped };
  };
}
