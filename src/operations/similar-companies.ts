/**
 * similar-companies: one company URL per input row, pages 1..`pages` of its lookalikes asked by POST; rows: companies
 * with their child sets, and the similar_companies links. A company names itself by `url`.
 */
import { z } from 'zod';
import { EMPTY_FILTER_KEY, filterKey } from '../jobs/request-keys.ts';
import { OPERATION_PATHS, type SimilarCompaniesAccount } from '../spec/types.ts';
import { canonicalCompanyUrl } from '../urls/canonical.ts';
import { given, int, int32, list, nullable, num, obj, str, bool, strict, CREDIT_MEMBERS, type ReadObject } from './answer-contract.ts';
import { urlColumnReader } from './input-cells.ts';
import { common, JOB_RANGES, text, urlInput, wholeIn, type JobCommon, type JobInputFile } from '../jobs/job-common.ts';
import { JOB_DEFAULTS } from '../jobs/defaults.ts';
import type { OperationSpec } from './operation-spec.ts';
import type { RowOf, RowWrite } from './stored-rows.ts';
import {
  arrayOf, countryName, givenValue, jsonText, objectOf, sqlValue, recordsByUrl, urlKey,
} from './stored-values.ts';
import {
  answered, rawRows, timeInJsonArray, sql, named, codePointOrder, groupConcat, numberText,
} from '../statement.ts';

const address = obj({
  city: str(),
  country: str(),
  geographicArea: nullable(str()),
  isPrimary: given(),
  line1: str(),
  line2: given(),
  postalCode: str(),
});

const company = obj({
  url: strict(str()),
  name: str(),
  universalName: str(),
  type: str(),
  objectUrn: int(),
  description: str(),
  phone: str(),
  followers: given(),
  website: str(),
  logo: str(),
  cover: given(),
  tagline: given(),
  foundedYear: int32(),
  staff: obj({ total: int32(), range: obj({ start: int32(), end: int32() }) }),
  locations: obj({ headquarter: address, other: list(address) }),
  fundingData: given(),
  specialities: nullable(list(str())),
  industries: list(str()),
  hashtags: nullable(list(str())),
  relevancy: obj({ score: num(), value: str() }),
});

const body = {
  success: bool(),
  message: str(),
  data: obj({ content: list(company), number: int(), first: bool(), empty: bool() }),
  page: int(),
  num: int(),
  ...CREDIT_MEMBERS,
};

export type SimilarCompaniesAnswer = ReadObject<typeof body>;
export type CompanyAnswer = ReadObject<(typeof company)['members']>;

/** Page size asked for when a request leaves `num` out (known-behaviour.md: 10 is the common choice). */
export const SIMILAR_COMPANIES_DEFAULT_NUM = 10;

const isObjectValue = (v: unknown): boolean => typeof v === 'object' && v !== null;

/** Body of POST /v1/api/similar-companies. */
const requestSchema = z.looseObject({
  url: z.string(),
  account: z.custom<SimilarCompaniesAccount>(isObjectValue).optional(),
  page: z.number().optional(),
  num: z.number().optional(),
});
export type SimilarCompaniesRequest = z.output<typeof requestSchema>;

/** What an answer is filed under: reference company, filter set and its stable key, and the page and page size sent. */
const subjectSchema = z.looseObject({
  operation: z.literal('similar-companies'),
  referenceUrl: z.string(),
  filterKey: z.string(),
  filters: z.custom<SimilarCompaniesAccount>(isObjectValue),
  page: z.number(),
  num: z.number(),
});
export type SimilarCompaniesSubject = z.output<typeof subjectSchema>;

/** The requests of one input: pages 1..pages, members in this order (the ledger compares the JSON text). */
function requestsOf(job: SimilarCompaniesJob, url: string): SimilarCompaniesRequest[] {
  return Array.from({ length: job.pages }, (_, i) => ({ url, account: job.request.account, page: i + 1, num: job.request.num }));
}

/** A company's row and its child sets, which describe it as last seen (each replaces the stored set whole). */
function companyWrites(c: CompanyAnswer, url: string, seenAt: string, writes: RowWrite[]): void {
  const staff = objectOf(c.staff);
  const range = objectOf(staff['range']);
  writes.push({
    table: 'companies',
    row: {
      url,
      name: sqlValue(c.name),
      universal_name: sqlValue(c.universalName),
      type: sqlValue(c.type),
      object_urn: sqlValue(c.objectUrn),
      description: sqlValue(c.description),
      phone: sqlValue(c.phone),
      followers: givenValue(c.followers),
      website: sqlValue(c.website),
      logo: sqlValue(c.logo),
      cover: givenValue(c.cover),
      tagline: givenValue(c.tagline),
      founded_year: sqlValue(c.foundedYear),
      staff_total: sqlValue(staff['total']),
      staff_range_start: sqlValue(range['start']),
      staff_range_end: sqlValue(range['end']),
      funding_data: jsonText(c.fundingData),
      first_seen_at: seenAt,
      updated_at: seenAt,
    },
  });
  const owner = { company_url: url };
  const locations = objectOf(c.locations);
  const addresses: Array<[unknown, number]> = [];
  if (locations['headquarter'] !== null && locations['headquarter'] !== undefined) addresses.push([locations['headquarter'], 1]);
  for (const other of arrayOf(locations['other'])) addresses.push([other, 0]);
  const rows = addresses.map(([address, isHeadquarter], i): RowOf<'company_locations'> => {
    const a = objectOf(address);
    return {
      company_url: url,
      position: i + 1,
      is_headquarter: isHeadquarter,
      city: sqlValue(a['city']),
      country: sqlValue(a['country']),
      country_name: countryName(a['country']),
      geographic_area: sqlValue(a['geographicArea']),
      is_primary: givenValue(a['isPrimary']),
      line1: sqlValue(a['line1']),
      line2: givenValue(a['line2']),
      postal_code: sqlValue(a['postalCode']),
    };
  });
  writes.push({ table: 'company_locations', owner, rows });
  const values = (list: unknown): Array<RowOf<'company_industries'>> => arrayOf(list).map((value, i) => ({ company_url: url, position: i + 1, value: sqlValue(value) }));
  writes.push({ table: 'company_industries', owner, rows: values(c.industries) });
  writes.push({ table: 'company_specialities', owner, rows: values(c.specialities) });
  writes.push({ table: 'company_hashtags', owner, rows: values(c.hashtags) });
}

/** The result columns `enrich` appends (docs/export.md: public names). */
export const SIMILAR_COLUMNS = [
  'similar_rank',
  'similar_page',
  'similar_relevancy_score',
  'similar_relevancy_grade',
  'similar_url',
  'similar_name',
  'similar_universal_name',
  'similar_type',
  'similar_website',
  'similar_industries',
  'similar_specialities',
  'similar_staff_total',
  'similar_staff_range',
  'similar_hq_city',
  'similar_hq_country',
  'similar_founded_year',
  'similar_phone',
  'similar_description',
  'similar_last_seen_at',
] as const;

// The link table is cumulative (earlier answers' rows stay): per page of the plan, only the rows seen last are read,
// the latest answer that listed anything (a company that moved counts on its new page only); they are dropped when the
// ledger knows of a later answer to the page (@floors, by page: a 404, an empty page, past the last page).
export const SIMILAR_SQL = sql`
  WITH latest(page, at) AS (
    SELECT page, max(last_seen_at) FROM similar_companies
    WHERE reference_url = ${named('input')} AND filter_key = ${named('filterKey')} AND page <= ${named('pages')}
    GROUP BY page
  )
  SELECT
    s.page, s.relevancy_score, s.relevancy_grade, s.company_url, c.name, c.universal_name, c.type, c.website,
    (SELECT ${groupConcat('value', '; ', 'position')} FROM company_industries WHERE company_url = s.company_url),
    (SELECT ${groupConcat('value', '; ', 'position')} FROM company_specialities WHERE company_url = s.company_url),
    c.staff_total,
    CASE WHEN c.staff_range_start IS NULL AND c.staff_range_end IS NULL THEN NULL
      ELSE coalesce(${numberText('c.staff_range_start')}, '') || '-' || coalesce(${numberText('c.staff_range_end')}, '') END,
    (SELECT city FROM company_locations WHERE company_url = s.company_url AND is_headquarter = 1 ORDER BY position LIMIT 1),
    (SELECT country FROM company_locations WHERE company_url = s.company_url AND is_headquarter = 1 ORDER BY position LIMIT 1),
    c.founded_year, c.phone, c.description, s.last_seen_at
  FROM latest l
  JOIN similar_companies s
    ON s.reference_url = ${named('input')} AND s.filter_key = ${named('filterKey')} AND s.page = l.page AND s.last_seen_at = l.at
  LEFT JOIN companies c ON c.url = s.company_url
  WHERE l.at >= ${timeInJsonArray(named('floors'), '(l.page - 1)')}
  ORDER BY s.page, s.rank, ${codePointOrder('s.company_url')}`;

const employeeRange = z
  .strictObject({ start: wholeIn(JOB_RANGES.employees), end: wholeIn(JOB_RANGES.employees) })
  .refine((r) => r.end >= r.start, { error: 'must not be below start', path: ['end'] });
const account = z.strictObject({
  location: z.array(text).optional(),
  employeeSize: z.strictObject({ type: text.optional(), range: z.array(employeeRange).min(1) }).optional(),
});

/** Its job definition: the common settings, one URL column, filters and page size (job files; docs/jobs.md). */
export const similarCompaniesJobDefinition = z.strictObject({
  ...common,
  operation: z.literal('similar-companies'),
  input: urlInput,
  request: z
    .strictObject({
      account: account.optional(),
      num: wholeIn(JOB_RANGES.num).optional(),
      page: z.never({ error: 'not allowed here: set "pages" (page 1 to pages is fetched for every input)' }).optional(),
      url: z.never({ error: 'not allowed here: URLs come from the input CSV column' }).optional(),
    })
    .optional(),
});

export interface SimilarCompaniesJob extends JobCommon {
  operation: 'similar-companies';
  input: JobInputFile & { column: string };
  /** Filters and page size sent with every input; lower-cased, trimmed locations. */
  request: { account: SimilarCompaniesAccount; num: number };
}

export const similarCompanies = {
  name: 'similar-companies',
  starter: {
    name: 'lookalikes',
    definition: {
      operation: 'similar-companies',
      input: { csv: 'data/leads.csv', column: 'company_url' },
      request: { account: { location: ['germany'] }, num: 10 },
      pages: 1,
      credits: { reserve: 100 },
    },
    csv: 'company_url,account_owner\nhttps://www.network.com/company/acme-robotics,jane\nnetwork.com/company/initech,omar\n',
  },
  refreshAfterDays: 30,
  resolveJob(def, base, file) {
    // Locations lower-cased (the service uses lower-case names), the employee-size type filled in.
    const { location, employeeSize } = def.request?.account ?? {};
    const account: SimilarCompaniesAccount = {};
    if (location) account.location = location.map((l) => l.toLowerCase());
    if (employeeSize) {
      const range = employeeSize.range.map((r) => ({ start: r.start, end: r.end }));
      account.employeeSize = { type: employeeSize.type ?? JOB_DEFAULTS.employeeSizeType, range };
    }
    const request = { account, num: def.request?.num ?? JOB_DEFAULTS.num };
    return { ...base, operation: 'similar-companies', input: { ...file, column: def.input.column }, request };
  },
  rowReader: (job, header) => urlColumnReader(job.input.csv, header, job.input.column, canonicalCompanyUrl, (url) => requestsOf(job, url)),
  requestsOfKey: requestsOf,

  request: requestSchema,
  // The request as given (undefined members are dropped by JSON).
  send: (request) => ({ path: OPERATION_PATHS['similar-companies'], body: JSON.stringify(request), json: true }),

  answer: { body, recordsAt: ['data', 'content'], identity: 'url', recordMembers: [] },
  /**
   * A page ends the list when it holds fewer companies than the page size answered (the `num` echo, when the service
   * capped it below the size asked for: counted once as `capped` drift), else the size asked for.
   */
  lastPage(asked, answer, drift) {
    const echoed = typeof answer.num === 'number' && answer.num > 0 ? answer.num : null;
    const count = answer.data?.content?.length ?? 0;
    // A stored body read again without its request (reprocess) has only the echo to go by.
    if (asked === undefined) return count < (echoed ?? SIMILAR_COMPANIES_DEFAULT_NUM);
    const askedNum = asked.num ?? SIMILAR_COMPANIES_DEFAULT_NUM;
    if (echoed === null || echoed >= askedNum) return count < askedNum;
    drift.note('num', '', 'capped', `asked ${askedNum}, answered ${echoed}`);
    return count < echoed;
  },
  notFound: {
    // `error: true` is required: a gateway's own 404 for an unknown path is commonly `{"message":"Not Found"}`.
    isAnswer: (body, message) => message !== null && body?.['error'] === true,
    shape: 'a JSON object with error: true and a message',
    ambiguous: false,
  },

  subjectOf(inputKey, request) {
    const filters = request.account ?? {};
    return {
      operation: 'similar-companies',
      referenceUrl: inputKey,
      filterKey: filterKey(filters),
      filters,
      page: request.page ?? 1,
      num: request.num ?? SIMILAR_COMPANIES_DEFAULT_NUM,
    };
  },
  subject: subjectSchema,
  requestKey: (s) => `${s.referenceUrl} ${s.filterKey} page=${s.page} num=${s.num}`,
  rows(s, res, ctx) {
    const referenceUrl = urlKey(s.referenceUrl, canonicalCompanyUrl, ctx.networkHost) ?? s.referenceUrl;
    const filters = JSON.stringify(s.filters ?? {});
    const writes: RowWrite[] = [];
    const { records, skipped } = recordsByUrl(objectOf(res.data)['content'], canonicalCompanyUrl, ctx.networkHost);
    for (const [url, [i, record]] of records) {
      const company = record as CompanyAnswer;
      companyWrites(company, url, ctx.seenAt, writes);
      const relevancy = objectOf(company.relevancy);
      writes.push({
        table: 'similar_companies',
        row: {
          reference_url: referenceUrl,
          filter_key: s.filterKey,
          company_url: url,
          filters,
          rank: i + 1,
          page: s.page,
          relevancy_score: sqlValue(relevancy['score']),
          relevancy_grade: sqlValue(relevancy['value']),
          first_seen_at: ctx.seenAt,
          last_seen_at: ctx.seenAt,
        },
      });
    }
    return { writes, skipped, anomalies: [] };
  },
  listPage: (s, host) => ({
    table: 'similar_companies',
    row: { reference_url: urlKey(s.referenceUrl, canonicalCompanyUrl, host) ?? s.referenceUrl, filter_key: s.filterKey, page: s.page },
  }),

  enrich: {
    columns: SIMILAR_COLUMNS,
    numbered: {
      count: 'similar_count',
      fields: [
        'similar_name', 'similar_url', 'similar_website', 'similar_industries', 'similar_staff_range',
        'similar_hq_city', 'similar_hq_country', 'similar_phone', 'similar_relevancy_grade',
      ],
    },
    lookup(floorsOf, job) {
      const key = filterKey(job.request.account);
      return function* (inputKey) {
        const floors = JSON.stringify(yield* floorsOf(inputKey));
        const found = yield* rawRows(SIMILAR_SQL, { input: inputKey, filterKey: key, pages: job.pages, floors });
        // Rank is computed here (1-based, page by page): the stored rank restarts on every page.
        return found.map(([page, ...rest], i) => [i + 1, page, ...rest]);
      };
    },
    /**
     * Whether a stored task request asks what `job` asks: the same filter set (by its key, so the order of members
     * does not matter) and the same page size; the text the job plans now is the common case and is checked first.
     */
    sameQuestion(job) {
      const { account, num } = job.request;
      const key = filterKey(account);
      const keys = new Map<string, string>();
      return (requestJson, inputKey, page) => {
        // Same members in the same order as requestsOf() writes them.
        if (requestJson === JSON.stringify({ url: inputKey, account, page, num })) return true;
        let request: { account?: unknown; num?: unknown };
        try {
          request = JSON.parse(requestJson) as typeof request;
        } catch {
          return false;
        }
        if ((request.num ?? SIMILAR_COMPANIES_DEFAULT_NUM) !== num) return false;
        const text = JSON.stringify(request.account ?? null);
        let other = keys.get(text);
        if (other === undefined) {
          other = filterKey(request.account as Parameters<typeof filterKey>[0]);
          if (keys.size < 100) keys.set(text, other);
        }
        return other === key;
      };
    },
    doneMeansResult: false,
    changeKeys(job) {
      // The plain list is keyed by its reference alone, one asked with filters by the reference and filter key.
      const key = filterKey(job.request.account);
      return (inputKey) => answered([{ entity: 'company', key: inputKey }, { entity: 'lookalike', key: key === EMPTY_FILTER_KEY ? inputKey : `${inputKey} ${key}` }]);
    },
  },
} satisfies OperationSpec<SimilarCompaniesRequest, SimilarCompaniesAnswer, SimilarCompaniesSubject, SimilarCompaniesJob, z.output<typeof similarCompaniesJobDefinition>>;

