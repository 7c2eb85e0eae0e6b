/**
 * The service's types, transcribed from api.md. The only module src/api and src/sandbox share: each builds and reads
 * requests on its own, so a misreading of the spec in one cannot hide in the other. Fields the spec marks "type not
 * shown" are `unknown`; records allow extra members because the provider adds fields over time.
 */

/** The spec's network host: the client's default (NETINGEST_NETWORK_HOST overrides it) and the sandbox's live host. */
export const DEFAULT_NETWORK_HOST = 'network.com';

/** Path prefix carrying the API version. */
export const API_PREFIX = '/v1/api';

/** The free credit check the live service offers (not in api.md): the client asks it, the sandbox serves it. */
export const BALANCE_PATH = `${API_PREFIX}/auth`;

/** The three operations, by the names used in job files, the ledger and the database. */
export const OPERATIONS = ['similar-companies', 'post-details', 'search-jobs'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** Path of each operation under the base URL. */
export const OPERATION_PATHS: Record<Operation, string> = {
  'similar-companies': `${API_PREFIX}/similar-companies`,
  'post-details': `${API_PREFIX}/post-details`,
  'search-jobs': `${API_PREFIX}/search-jobs`,
};

/** Each operation's HTTP method: the client sends its requests so (its spec's `method`), the sandbox routes by it. */
export const OPERATION_METHODS = {
  'similar-companies': 'POST',
  'post-details': 'GET',
  'search-jobs': 'GET',
} as const satisfies Record<Operation, 'GET' | 'POST'>;

/** Credit counters carried by every 200 response; fractional values occur. */
export interface CreditCounters {
  total_credits: number;
  credits_used: number;
  credits_remaining: number;
}

/** Address object of a company location. */
export interface Address {
  city: string;
  country: string;
  geographicArea: string | null;
  /** Type when non-null: not shown. */
  isPrimary: unknown;
  line1: string;
  /** Type when non-null: not shown. */
  line2: unknown;
  postalCode: string;
  [extra: string]: unknown;
}

/** Element of `data.content` in the similar-companies response. */
export interface CompanyRecord {
  url: string;
  name: string;
  universalName: string;
  type: string;
  objectUrn: number;
  description: string;
  phone: string;
  followers: unknown;
  website: string;
  logo: string;
  cover: unknown;
  tagline: unknown;
  foundedYear: number;
  staff: { total: number; range: { start: number; end: number; [extra: string]: unknown }; [extra: string]: unknown };
  locations: { headquarter: Address; other: Address[]; [extra: string]: unknown };
  fundingData: unknown;
  specialities: string[] | null;
  industries: string[];
  hashtags: string[] | null;
  relevancy: { score: number; value: string; [extra: string]: unknown };
  [extra: string]: unknown;
}

/** Filters of a similar-companies request. */
export interface SimilarCompaniesAccount {
  location?: string[];
  employeeSize?: { type: string; range: Array<{ start: number; end: number }> };
}

/** 200 body of post-details. */
export interface PostDetailsResponse extends CreditCounters {
  success: boolean;
  message: string;
  PostId: string;
  author: { name: string; headline: string; network_url: string; profile_image: string; [extra: string]: unknown };
  post: {
    /** `DD-MM-YYYY` or `MM-DD-YYYY`: the spec shows two digits, hyphen, two digits, hyphen, four digits. */
    timestamp: string;
    text_content: string;
    /** Element type when non-null: not shown. */
    hashtags: unknown[] | null;
    post_media_description: string;
    post_media_url: string[];
    [extra: string]: unknown;
  };
  engagement: { reactions: number; comments_count: number; [extra: string]: unknown };
  [extra: string]: unknown;
}

/** Element of `results` in the search-jobs response. */
export interface JobRecord {
  title: string;
  company_name: string;
  company_link: string;
  location: string;
  url: string;
  posted_timestamp: number;
  posted_date: string;
  is_actively_hiring: boolean;
  company_logo_url: string;
  description_html: string;
  description: string;
  criteria: {
    'Employment type': string;
    Industries: string;
    'Job function': string;
    'Seniority level': string;
    [extra: string]: unknown;
  };
  [extra: string]: unknown;
}

/** Names of the search-jobs query parameters, in the order the spec lists them. */
export const SEARCH_JOBS_PARAMS = [
  'start',
  'timePosted',
  'keywords',
  'experienceLevels',
  'companyIds',
  'jobTypes',
  'workplaceTypes',
  'location',
] as const;

/** The search-jobs parameters that are comma-separated lists. */
export const SEARCH_JOBS_LIST_PARAMS = ['experienceLevels', 'companyIds', 'jobTypes', 'workplaceTypes'] as const;
type SearchJobsListParam = (typeof SEARCH_JOBS_LIST_PARAMS)[number];

/** Query parameters of search-jobs: `start` a number, the lists' items sent comma-joined. */
export type SearchJobsQuery = { start?: number } & { [P in SearchJobsListParam]?: string[] } & {
  [P in Exclude<(typeof SEARCH_JOBS_PARAMS)[number], 'start' | SearchJobsListParam>]?: string;
};

/** Page size of search-jobs (known-behaviour.md): `start` is a record offset. */
export const SEARCH_JOBS_PAGE_SIZE = 10;
