import { SEARCH_JOBS_PAGE_SIZE, SEARCH_JOBS_PARAMS, type Operation, type SimilarCompaniesAccount } from '../spec/types.ts';
import { WorldAge } from './data/world-age.ts';
import { CompanyData } from './data/companies.ts';
import { JobData, type JobSearch } from './data/jobs.ts';
import { PostData } from './data/posts.ts';
import { canonicalUrlKey } from './data/canonical.ts';
import { isObject } from './live/absent-members.ts';
import { LiveShaper, liveShapesOf } from './live/live-shaper.ts';
import type { SandboxOptions } from './options.ts';

/** What an operation answers before credits: a 200 body awaiting its counters, or a finished error. */
export type Outcome =
  | { kind: 'ok'; /** the 200 JSON, UTF-8, without its closing brace; the counters are appended */ open: Buffer }
  | ErrorOutcome;

/** A finished non-200 answer. */
export interface ErrorOutcome { kind: 'error'; status: number; body: string }

const badRequest = (message: string): ErrorOutcome => ({ kind: 'error', status: 400, body: JSON.stringify({ error: true, message }) });
const NO_SIMILAR: Outcome = { kind: 'error', status: 404, body: JSON.stringify({ error: true, message: 'No similar companies found' }) };
const NO_JOBS: Outcome = { kind: 'error', status: 404, body: JSON.stringify({ message: 'No results found for the query' }) };
const NO_POST: Outcome = { kind: 'error', status: 404, body: JSON.stringify({ success: false, message: 'Post not found' }) };

/** A request's parameters checked: the 400 refusing them, or the answer they get (made only when called). */
export type Validated = ErrorOutcome | (() => Outcome);

/** The three operations over the synthetic data; answers are cached per data object. */
export class Operations {
  private readonly companies: CompanyData;
  private readonly posts: PostData;
  private readonly jobs: JobData;
  /** Open 200 bodies by list (a company list, a search's results, a post: a list of one page) and page. */
  private readonly pages = new WeakMap<object, Map<string, Buffer>>();
  private readonly emptyPastEnd: boolean;
  /** The live-service shapes, or null in the spec mode (whose answers must not change by a byte). */
  private readonly live: LiveShaper | null;

  constructor(options: SandboxOptions) {
    const { seed, notFoundRate } = options;
    const age = new WorldAge(seed, options.ageDays);
    this.companies = new CompanyData(seed, notFoundRate, age);
    this.posts = new PostData(seed, notFoundRate, age);
    this.jobs = new JobData(seed, notFoundRate, age);
    this.emptyPastEnd = options.pastLastPage === 'empty';
    const shapes = liveShapesOf(options);
    this.live = shapes && new LiveShaper(shapes, seed);
  }

  /** Checks the parameters only (query, raw body, Content-Type), so faults and credits are decided on valid calls. */
  readonly validate: Record<Operation, (query: URLSearchParams, bodyText: string, contentType?: string) => Validated> = {
    'similar-companies': (_query, bodyText, contentType) => {
      const request = parseSimilar(bodyText, contentType);
      return 'kind' in request ? request : () => this.similarPage(request);
    },
    'post-details': (query) => {
      const url = query.get('url');
      if (url === null || url.trim() === '') return badRequest('Query parameter `url` is required');
      return () => this.post(url);
    },
    'search-jobs': (query) => {
      const startText = query.get('start');
      if (startText !== null && !/^\d{1,9}$/.test(startText.trim())) {
        return badRequest('Query parameter `start` must be a non-negative integer');
      }
      const search: JobSearch = {};
      for (const name of SEARCH_JOBS_PARAMS) {
        const value = query.get(name);
        if (value !== null && name !== 'start') search[name] = value;
      }
      // The spec calls company ids numeric; a job board would not guess what another id means.
      const ids = search.companyIds?.split(',').map((id) => id.trim()).filter((id) => id !== '') ?? [];
      if (!ids.every((id) => /^\d+$/.test(id))) {
        return badRequest('Query parameter `companyIds` must be numeric ids separated by commas');
      }
      const start = startText === null ? 0 : Number(startText.trim());
      return () => this.jobsPage(search, start);
    },
  };

  private post(url: string): Outcome {
    const post = this.posts.details(url);
    return post ? this.page(post, '1', false, NO_POST, () => (this.live ? this.live.post(post) : post)) : NO_POST;
  }

  private similarPage(request: SimilarRequest): Outcome {
    const live = this.live;
    const url = live ? live.referenceUrl(request.url) : request.url;
    const list = this.companies.similarTo(url, request.account);
    if (!list) return NO_SIMILAR;
    const num = live ? live.pageSize(request.num) : request.num;
    const from = (request.page - 1) * num;
    return this.page(list, `${request.page}/${num}`, from >= list.length, NO_SIMILAR, () => {
      const records = list.slice(from, from + num).map((entry) => this.companies.record(entry));
      const listKey = live ? canonicalUrlKey(url) : '';
      const content = live ? records.map((record) => live.company(record, listKey)) : records;
      return {
        success: true,
        message: 'Similar companies fetched successfully',
        data: { content, number: request.page - 1, first: request.page === 1, empty: content.length === 0 },
        page: request.page,
        num,
      };
    });
  }

  private jobsPage(search: JobSearch, start: number): Outcome {
    const results = this.jobs.search(search);
    if (!results) return NO_JOBS;
    return this.page(results, String(start), start >= results.length, NO_JOBS, () => {
      const live = this.live;
      const slice = results.slice(start, start + SEARCH_JOBS_PAGE_SIZE);
      const page = live ? slice.map((job) => live.job(job)) : slice;
      return {
        success: true,
        message: 'Jobs fetched successfully',
        currentPage: Math.floor(start / SEARCH_JOBS_PAGE_SIZE),
        numResults: page.length,
        results: page,
      };
    });
  }

  /** Page `key` of `list`, its body made by `make` once; past the end, `notFound` or an empty page as configured. */
  private page(list: object, key: string, pastEnd: boolean, notFound: Outcome, make: () => object): Outcome {
    if (pastEnd && !this.emptyPastEnd) return notFound;
    let pages = this.pages.get(list);
    if (!pages) this.pages.set(list, (pages = new Map()));
    let open = pages.get(key);
    if (open === undefined) {
      // Without its closing brace, so the counters are appended without re-encoding the cached part.
      open = Buffer.from(JSON.stringify(make()).slice(0, -1), 'utf8');
      // Empty pages are not kept: any page number past the end has one, and they cost nothing to build.
      if (!pastEnd) pages.set(key, open);
    }
    return { kind: 'ok', open };
  }
}

/** A similar-companies request whose body passed validation. */
type SimilarRequest = { url: string; account: SimilarCompaniesAccount | undefined; page: number; num: number };

const isPositiveInt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 1;

/** A similar-companies request from its JSON body, or the 400 refusing it (Content-Type, not a JSON object, a field). */
function parseSimilar(bodyText: string, contentType: string | undefined): ErrorOutcome | SimilarRequest {
  if (!contentType || !/^application\/json\b/i.test(contentType.trim())) return badRequest('Content-Type must be application/json');
  let body: unknown;
  try {
    body = JSON.parse(bodyText);
  } catch {
    return badRequest('Request body is not valid JSON');
  }
  if (!isObject(body)) return badRequest('Request body must be a JSON object');
  const { url, account, page = 1, num = 10 } = body;
  if (typeof url !== 'string' || url.trim() === '') return badRequest('Body field `url` is required (a company page URL)');
  if (!isPositiveInt(page)) return badRequest('Body field `page` must be an integer >= 1');
  if (!isPositiveInt(num)) return badRequest('Body field `num` must be an integer >= 1');
  const refused = account === undefined || account === null ? null : accountProblem(account);
  if (refused) return badRequest(refused);
  return { url, account: (account ?? undefined) as SimilarCompaniesAccount | undefined, page, num };
}

/** Why `account` cannot be read, or null when it can. */
function accountProblem(account: unknown): string | null {
  if (!isObject(account)) return 'Body field `account` must be an object';
  const { location, employeeSize } = account;
  if (location !== undefined && !(Array.isArray(location) && location.every((l) => typeof l === 'string'))) {
    return 'Body field `account.location` must be an array of strings';
  }
  if (employeeSize !== undefined && !isEmployeeSize(employeeSize)) {
    return 'Body field `account.employeeSize` must be { type: string, range: [{ start, end }] } with integer bounds';
  }
  return null;
}

function isEmployeeSize(v: unknown): boolean {
  if (!isObject(v) || typeof v.type !== 'string' || !Array.isArray(v.range)) return false;
  return v.range.every((r) => isObject(r) && Number.isSafeInteger(r.start) && Number.isSafeInteger(r.end));
}
