/** Hand-built, typed responses for the db tests and the upsert bench (shared so both use the same shapes). */
import type { RequestListener } from 'node:http';
import type { CompanyRecord, CreditCounters, JobRecord, PostDetailsResponse } from '../../src/spec/types.ts';
import type { PostDetailsSubject } from '../../src/operations/post-details.ts';
import type { SearchJobsSubject } from '../../src/operations/search-jobs.ts';
import type { SimilarCompaniesSubject } from '../../src/operations/similar-companies.ts';

/** 200 body of similar-companies (api.md), as the tests and the bench build it. */
export interface SimilarCompaniesResponse extends CreditCounters {
  success: boolean;
  message: string;
  data: { content: CompanyRecord[]; number: number; first: boolean; empty: boolean; [extra: string]: unknown };
  page: number;
  num: number;
  [extra: string]: unknown;
}

/** 200 body of search-jobs (api.md). */
export interface SearchJobsResponse extends CreditCounters {
  success: boolean;
  message: string;
  currentPage: number;
  numResults: number;
  results: JobRecord[];
  [extra: string]: unknown;
}

export const credits = { total_credits: 1000, credits_used: 3, credits_remaining: 997 };

export function company(n: number, overrides: Partial<CompanyRecord> = {}): CompanyRecord {
  return {
    url: `https://www.network.com/company/acme-${n}/`,
    name: `Acme ${n} Société 🚀`,
    universalName: `acme-${n}`,
    type: 'PRIVATELY_HELD',
    objectUrn: 1000000 + n,
    description: `Line one of ${n}\nLine two — «quoted» 日本語\r\nend`,
    phone: '+4930123456',
    followers: 12345 + n,
    website: `https://acme-${n}.example`,
    logo: `https://img.example/logo-${n}.png`,
    cover: null,
    tagline: 'We make 🧪 things',
    foundedYear: 1999,
    staff: { total: 250, range: { start: 201, end: 500 } },
    locations: {
      headquarter: {
        city: 'münchen',
        country: 'germany',
        geographicArea: null,
        isPrimary: true,
        line1: 'hauptstraße 1',
        line2: null,
        postalCode: '80331',
      },
      other: [
        { city: 'paris', country: 'france', geographicArea: 'île-de-france', isPrimary: null, line1: 'rue de rivoli 2', line2: 'bât. b', postalCode: '75001' },
      ],
    },
    fundingData: { rounds: 2, lastRound: { type: 'Series B', money: null } },
    specialities: ['widgets', 'gadgets', 'ünïcode'],
    industries: ['Manufacturing'],
    hashtags: null,
    relevancy: { score: 0.87, value: 'A' },
    ...overrides,
  };
}

export function similarResponse(content: CompanyRecord[], page = 1, num = content.length): SimilarCompaniesResponse {
  return { success: true, message: 'ok', data: { content, number: 0, first: page === 1, empty: content.length === 0 }, page, num, ...credits };
}

export function similarRequest(page = 1, num = 2): SimilarCompaniesSubject {
  return {
    operation: 'similar-companies',
    referenceUrl: 'https://network.com/company/reference-co',
    filterKey: 'f-germany-201-500',
    filters: { location: ['germany'], employeeSize: { type: 'RANGE', range: [{ start: 201, end: 500 }] } },
    page,
    num,
  };
}

export function postResponse(overrides: Partial<PostDetailsResponse> = {}): PostDetailsResponse {
  return {
    success: true,
    message: 'ok',
    PostId: 'activity-7123456789012345678',
    author: { name: 'Zoë Ñúñez', headline: 'Engineer 👩‍💻 at Acme\nBerlin', network_url: 'https://www.network.com/in/zoe-nunez/?trk=x', profile_image: '' },
    post: {
      timestamp: '22-11-2026',
      text_content: 'Hello 世界!\n\nSecond paragraph with emoji 🎉 and "quotes" and \\ backslash.',
      hashtags: null,
      post_media_description: '',
      post_media_url: ['https://img.example/a.jpg', 'https://img.example/b.jpg'],
    },
    engagement: { reactions: 42, comments_count: 7 },
    ...credits,
    ...overrides,
  };
}

/**
 * A post-details service for useFakeServices(): each call answers postResponse() as `shape` makes it over (its call's
 * number, from 1), its counters spending a credit a call out of 100; the free balance check gets a 404.
 */
export function postService(shape: (base: PostDetailsResponse, call: number) => unknown = (base) => base): RequestListener {
  let used = 0;
  return (req, res) => {
    if (req.url === '/v1/api/auth') return void res.writeHead(404).end('{}');
    used += 1;
    const body = JSON.stringify(shape(postResponse({ total_credits: 100, credits_used: used, credits_remaining: 100 - used } as never), used));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  };
}

export const postRequest: PostDetailsSubject = {
  operation: 'post-details',
  postUrl: 'https://network.com/posts/zoe-nunez_hello-activity-7123456789012345678-AbCd',
};

export function job(n: number, overrides: Partial<JobRecord> = {}): JobRecord {
  return {
    title: `Développeur·se ${n} 🛠`,
    company_name: 'Acme GmbH',
    company_link: 'https://www.network.com/company/acme-1?trk=public_jobs',
    location: 'Berlin, Germany',
    url: `https://www.network.com/jobs/view/developer-at-acme-${3800000000 + n}?refId=abc&trackingId=xyz`,
    posted_timestamp: 1795305600,
    posted_date: '2026-11-22',
    is_actively_hiring: n % 2 === 0,
    company_logo_url: 'https://img.example/acme.png',
    description_html: '<p>Build things.</p>\n<ul><li>TypeScript</li></ul>',
    description: 'Build things.\n- TypeScript',
    criteria: { 'Employment type': 'Full-time', Industries: 'Software', 'Job function': 'Engineering', 'Seniority level': 'Associate' },
    ...overrides,
  };
}

export function jobsResponse(results: JobRecord[]): SearchJobsResponse {
  return { success: true, message: 'ok', currentPage: 0, numResults: results.length, results, ...credits, credits_used: 2.5, credits_remaining: 997.5 };
}

export function jobsRequest(start = 0): SearchJobsSubject {
  return {
    operation: 'search-jobs',
    searchKey: 'berlin-ts',
    query: { keywords: 'typescript developer', location: 'berlin', timePosted: 'past_week', experienceLevels: ['associate', 'mid-senior level'], jobTypes: ['full time'], workplaceTypes: ['on site', 'remote'] },
    start,
  };
}
