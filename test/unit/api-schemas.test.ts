// Answers read through their contracts (src/operations/), against bodies written from api.md and bodies shaped
// as the live service may send them (not from the sandbox, so the two cannot share a misreading).
import { describe, expect, it } from 'vitest';
import { ApiSchemaError } from '../../src/api/errors.ts';
import { errorAction } from './error-verb.ts';
import { readOperationAnswer, validateResponse, type AnswerByOperation, type AskedByOperation } from '../support/store-helpers.ts';
import { readUsableAnswer, type UsableAnswer } from '../../src/api/schemas.ts';
import { OPERATION_SPECS } from '../../src/operations/index.ts';
import type { OperationSpec } from '../../src/operations/operation-spec.ts';
import { driftLine } from '../../src/operations/drift.ts';
import type { Operation } from '../../src/spec/types.ts';

/** Reads a parsed 200 body of `operation` through its spec's contract. */
function readAnswer<O extends Operation>(operation: O, body: unknown, asked?: AskedByOperation[O]): UsableAnswer<AnswerByOperation[O]> {
  return readUsableAnswer(OPERATION_SPECS[operation] as unknown as OperationSpec<AskedByOperation[O], AnswerByOperation[O]>, body, {}, asked);
}

const address = (over: Record<string, unknown> = {}) => ({
  city: 'san francisco',
  country: 'united states',
  geographicArea: 'california',
  isPrimary: null,
  line1: '1 market st',
  line2: null,
  postalCode: '94105',
  ...over,
});

const company = (over: Record<string, unknown> = {}) => ({
  url: 'https://www.network.com/company/acme',
  name: 'Acme',
  universalName: 'acme',
  type: 'PUBLIC_COMPANY',
  objectUrn: 1234567,
  description: 'We make widgets.\nAnd gadgets.',
  phone: '+14155550100',
  followers: null,
  website: 'https://acme.example',
  logo: 'https://img.example/acme.png',
  cover: null,
  tagline: null,
  foundedYear: 1999,
  staff: { total: 5400, range: { start: 5001, end: 10000 } },
  locations: { headquarter: address(), other: [address({ city: 'austin', postalCode: '73301' })] },
  fundingData: null,
  specialities: ['widgets'],
  industries: ['Software Development'],
  hashtags: null,
  relevancy: { score: 0.87, value: 'A' },
  ...over,
});

const similar = () => ({
  success: true,
  message: 'ok',
  data: { content: [company(), company(), company(), company()], number: 0, first: true, empty: false },
  page: 1,
  num: 4,
  total_credits: 1000,
  credits_used: 3,
  credits_remaining: 997,
});

const post = () => ({
  success: true,
  message: 'ok',
  PostId: 'activity-7123456789012345678',
  author: { name: 'Jane Doe', headline: 'Engineer', network_url: 'https://www.network.com/in/jane', profile_image: '' },
  post: {
    timestamp: '03-11-2024',
    text_content: 'Hello\nwörld 🎉',
    hashtags: null,
    post_media_description: '',
    post_media_url: ['https://img.example/1.jpg'],
  },
  engagement: { reactions: 12, comments_count: 3 },
  total_credits: 1000,
  credits_used: 1,
  credits_remaining: 999,
});

const job = (over: Record<string, unknown> = {}) => ({
  title: 'Data Engineer',
  company_name: 'Acme',
  company_link: 'https://www.network.com/company/acme',
  location: 'Berlin, Germany',
  url: 'https://www.network.com/jobs/view/123',
  posted_timestamp: 1730592000,
  posted_date: '2024-11-03',
  is_actively_hiring: true,
  company_logo_url: 'https://img.example/acme.png',
  description_html: '<p>Build pipelines</p>',
  description: 'Build pipelines',
  criteria: { 'Employment type': 'Full-time', Industries: 'Software', 'Job function': 'Engineering', 'Seniority level': 'Associate' },
  ...over,
});

const jobs = () => ({
  success: true,
  message: 'ok',
  currentPage: 0,
  numResults: 2,
  results: [job(), job({ title: 'ML Engineer' })],
  total_credits: 1000.5,
  credits_used: 0.25,
  credits_remaining: 1000.25,
});

function schemaError(operation: Operation, body: unknown): ApiSchemaError {
  try {
    validateResponse(operation, body);
  } catch (err) {
    if (err instanceof ApiSchemaError) return err;
    throw err;
  }
  throw new Error('expected an ApiSchemaError');
}

/** The drift lines of one body read through its contract. */
function driftOf(operation: Operation, body: unknown, asked?: never): string[] {
  return readAnswer(operation, body, asked).drift.counts().map((c) => driftLine(operation, c));
}

describe('validateResponse: bodies of the spec pass', () => {
  it('accepts each operation\'s 200 body and returns it with every member', () => {
    expect(validateResponse('similar-companies', similar()).data?.content?.[3]?.staff?.total).toBe(5400);
    expect(validateResponse('post-details', post()).engagement?.reactions).toBe(12);
    expect(validateResponse('search-jobs', jobs()).results?.[1]?.title).toBe('ML Engineer');
    for (const [op, body] of [['similar-companies', similar()], ['post-details', post()], ['search-jobs', jobs()]] as const) {
      expect(driftOf(op, body), op).toEqual([]);
      expect(validateResponse(op, body)).toEqual(body);
    }
  });

  it('keeps unknown extra members at every level, and does not count them as drift', () => {
    const body = similar();
    Object.assign(body, { newTopLevel: { a: 1 } });
    Object.assign(body.data, { totalPages: 9 });
    Object.assign(body.data.content[0]!, { employeeCountRange: 'x' });
    Object.assign(body.data.content[0]!.locations.headquarter, { geo: { lat: 1 } });
    const out = validateResponse('similar-companies', body) as unknown as Record<string, any>;
    expect(out.newTopLevel).toEqual({ a: 1 });
    expect(out.data.totalPages).toBe(9);
    expect(out.data.content[0].employeeCountRange).toBe('x');
    expect(out.data.content[0].locations.headquarter.geo).toEqual({ lat: 1 });
    expect(driftOf('similar-companies', body)).toEqual([]);
    const p = validateResponse('post-details', { ...post(), repost: true, author: { ...post().author, followers: 5 } });
    expect(p.repost).toBe(true);
    expect(p.author?.followers).toBe(5);
    const j = validateResponse('search-jobs', { ...jobs(), results: [job({ salary: '100k', criteria: { ...job().criteria, Extra: 'y' } })] });
    expect(j.results?.[0]?.salary).toBe('100k');
    expect(j.results?.[0]?.criteria?.Extra).toBe('y');
  });

  it('accepts null in nullable members and any value in members whose type is not shown, as no drift', () => {
    const body = similar();
    body.data.content[0] = company({
      specialities: null,
      hashtags: ['#ai'],
      followers: 120000,
      cover: { url: 'https://img.example/c.png' },
      tagline: 'Widgets for all',
      fundingData: { rounds: 3 },
      locations: { headquarter: address({ geographicArea: null, isPrimary: true, line2: 'Suite 5' }), other: [] },
    });
    body.data.content[1] = company({ locations: { headquarter: address({ line2: 7, isPrimary: 'yes' }), other: [] } });
    expect(driftOf('similar-companies', body)).toEqual([]);
    expect(driftOf('post-details', { ...post(), post: { ...post().post, hashtags: ['#a', { tag: 'b' }] } })).toEqual([]);
  });

  it('accepts fractional credit counters on every operation', () => {
    const credits = { total_credits: 10.5, credits_used: 0.75, credits_remaining: 9.75 };
    expect(validateResponse('similar-companies', { ...similar(), ...credits }).credits_used).toBe(0.75);
    expect(validateResponse('post-details', { ...post(), ...credits }).credits_remaining).toBe(9.75);
    expect(validateResponse('search-jobs', { ...jobs(), ...credits }).total_credits).toBe(10.5);
  });
});

describe('answers as the live service sends them: every record that names itself is read', () => {
  it('members missing, null or of another type are read as null (or the value, for a lossless variant) and counted per path', () => {
    const body = similar() as Record<string, any>;
    body.data.content[0] = company({ phone: null, website: undefined, staff: { total: 12 }, locations: { headquarter: null, other: [] } });
    delete body.data.content[0].foundedYear;
    body.data.content[1] = company({ foundedYear: '1999', objectUrn: 1234.0, staff: { total: '5400', range: { start: 1, end: 10 } } });
    body.data.content[2] = company({ foundedYear: 'nineteen', relevancy: { score: '0.5', value: 'B' } });
    delete body.success;
    const read = validateResponse('similar-companies', JSON.parse(JSON.stringify(body)));
    const [a, b, c] = read.data!.content!;
    expect(a).toMatchObject({ phone: null, website: null, foundedYear: null, staff: { total: 12, range: null }, locations: { headquarter: null } });
    expect(b).toMatchObject({ foundedYear: 1999, objectUrn: 1234, staff: { total: 5400 } });
    expect(c).toMatchObject({ foundedYear: null, relevancy: { score: 0.5 } });
    expect(read.success).toBeNull();
    expect(driftOf('similar-companies', JSON.parse(JSON.stringify(body)))).toEqual([
      'similar-companies data.content[].foundedYear: missing in 1/4, stored as NULL',
      'similar-companies data.content[].foundedYear: of another type in 1/4 (string read as integer), stored as the value',
      'similar-companies data.content[].foundedYear: of another type in 1/4 (string), stored as NULL',
      'similar-companies data.content[].locations.headquarter: null in 1/4, stored as NULL',
      'similar-companies data.content[].phone: null in 1/4, stored as NULL',
      'similar-companies data.content[].relevancy.score: of another type in 1/4 (string read as number), stored as the value',
      'similar-companies data.content[].staff.range: missing in 1/4, stored as NULL',
      'similar-companies data.content[].staff.total: of another type in 1/4 (string read as integer), stored as the value',
      'similar-companies data.content[].website: missing in 1/4, stored as NULL',
      'similar-companies success: missing in 1/1, stored as NULL',
    ]);
  });

  it('a record without its identity is set aside alone, with its position and reason; the others keep theirs', () => {
    const body = similar() as Record<string, any>;
    delete body.data.content[1].url;
    body.data.content[3].url = 42;
    const reading = readOperationAnswer('similar-companies', body);
    expect(reading.setAside).toEqual([
      { position: 2, path: 'data.content[1]', reason: 'url is missing' },
      { position: 4, path: 'data.content[3]', reason: 'url: expected string, received number 42' },
    ]);
    expect(reading.answer.data!.content!.map((c) => c?.url ?? null)).toEqual([company().url, null, company().url, null]);
    const jobBody = jobs() as Record<string, any>;
    jobBody.results[0].url = '  ';
    expect(readOperationAnswer('search-jobs', jobBody).setAside).toEqual([{ position: 1, path: 'results[0]', reason: 'url is empty' }]);
  });

  it('a record whose identity is no page address is set aside, not stored as a row keyed by that text', () => {
    // Before: a company row keyed `javascript:alert(1)` (and one by `…/company/a b`), joined and exported as any other.
    const body = similar() as Record<string, any>;
    body.data.content[0].url = 'javascript:alert(1)';
    body.data.content[2].url = 'https://www.network.com/company/a b';
    expect(readOperationAnswer('similar-companies', body).setAside).toEqual([
      { position: 1, path: 'data.content[0]', reason: 'url: not a URL' },
      { position: 3, path: 'data.content[2]', reason: 'url: not a URL (contains spaces)' },
    ]);
    const jobBody = jobs() as Record<string, any>;
    jobBody.results[1].url = 'acme';
    expect(readOperationAnswer('search-jobs', jobBody).setAside).toEqual([
      { position: 2, path: 'results[1]', reason: 'url: wrong host shape (acme; expected a domain such as network.com)' },
    ]);
  });

  it('reads the author URL from network_url, else from the one other *_url member, and says so', () => {
    const { network_url, ...author } = post().author;
    const body = { ...post(), author: { ...author, acmenet_url: network_url } };
    expect(validateResponse('post-details', body).author?.network_url).toBe(network_url);
    expect(driftOf('post-details', body)).toEqual(['post-details author.network_url: missing in 1/1, read from author.acmenet_url']);
    // Two candidates: neither is taken.
    const two = { ...post(), author: { ...author, acmenet_url: network_url, other_url: 'x' } };
    expect(validateResponse('post-details', two).author?.network_url).toBeNull();
  });

  it('a capped page size ends the list by the size the service answered with, and says so once per answer', () => {
    const body = { ...similar(), num: 2 };
    body.data.content = body.data.content.slice(0, 2);
    const full = readAnswer('similar-companies', body, { url: 'x', num: 4 } as never);
    expect(full.lastPage).toBe(false);
    expect(driftOf('similar-companies', body, { url: 'x', num: 4 } as never)).toEqual([
      "similar-companies num: page size capped by the service in 1/1 answers (asked 4, answered 2); paging follows the service's size",
    ]);
    const short = readAnswer('similar-companies', { ...body, data: { ...body.data, content: body.data.content.slice(0, 1) } }, { url: 'x', num: 4 } as never);
    expect(short.lastPage).toBe(true);
    const pageOfJobs = { ...jobs(), numResults: 10 };
    const jobsReading = readAnswer('search-jobs', pageOfJobs);
    expect(jobsReading.lastPage).toBe(false);
  });
});

describe('text no database stores as sent (storable-text.ts)', () => {
  it('counts a member once a record, though its name and its value were both fixed, or its fixed name is another\'s', () => {
    const body = similar() as Record<string, any>;
    // Before: 8/8 over 4 records (the name and the value each counted), and 8/8 for the dropped duplicate's.
    body.data.content = body.data.content.map((c: object) => ({ ...c, tagline: undefined, phone: undefined, 'tag\u0000line': 'a\u0000b', 'tagl\u0000ine': 'c', 'ph\u0000one': '\udc00' }));
    expect(driftOf('similar-companies', JSON.parse(JSON.stringify(body)))).toEqual([
      'similar-companies data.content[].phone: text no database stores as sent in 4/4 (NUL removed, lone surrogate replaced by U+FFFD), stored so',
      'similar-companies data.content[].tagline: text no database stores as sent in 4/4 (NUL removed), stored so',
    ]);
  });
});

describe('records named by a page on another host than the network\'s', () => {
  it('are drift of kind host, once per path with the first other host; pages of the network and values that are no URL are not', () => {
    const body = jobs();
    body.results = [
      job(),
      job({ url: 'https://acmenet.com/jobs/view/1' }),
      job({ url: 'in.acmenet.com/jobs/view/2' }),
      job({ url: 'https://de.network.com/jobs/view/3' }),
      job({ url: 'not a url' }),
      job({ url: 'https://www.acmenet.com/jobs/view/4', company_link: 'https://acmenet.com/company/x' }),
    ];
    expect(driftOf('search-jobs', body)).toEqual(['search-jobs results[].url: a page on another host than the network\'s in 3/6 (acmenet.com, not network.com), not stored']);
    // Its rows leave them out, so no key of another site is stored (test/pg/run-other-site.test.ts stores none).
    expect(driftOf('search-jobs', jobs())).toEqual([]);
  });
});

describe('validateResponse: a body no contract can read names the JSON path', () => {
  it('not an object, a record list that is not an array, or a post body with nothing of a post', () => {
    expect(schemaError('post-details', [post()]).message).toContain('(root): expected object, received array');
    expect(schemaError('similar-companies', { ...similar(), data: 'n/a' }).message).toContain('data: expected object, received string');
    expect(schemaError('search-jobs', { ...jobs(), results: 'none' }).message).toContain('results: expected an array of records, received string');
    const missing = { ...jobs() } as Record<string, unknown>;
    delete missing.results;
    expect(schemaError('search-jobs', missing).message).toContain('results: the record list is missing');
    expect(schemaError('post-details', { status: 'ok', result: [] }).message).toContain('(root): none of PostId, author, post, engagement is there');
    const err = schemaError('similar-companies', { ...similar(), data: { content: null } });
    expect(err.code).toBe('SCHEMA');
    expect(errorAction(err)).toBe('fail-item');
  });

  it('keeps the credits, the body and a short excerpt on the error; uses the call when given', () => {
    const err = schemaError('search-jobs', { ...jobs(), results: 'x' });
    expect(err.credits).toEqual({ total_credits: 1000.5, credits_used: 0.25, credits_remaining: 1000.25 });
    expect(JSON.parse(err.raw)).toMatchObject({ results: 'x' });
    expect(err.bodyExcerpt.length).toBeLessThanOrEqual(300);
    expect(err.call).toEqual({ operation: 'search-jobs', method: 'GET', path: '/v1/api/search-jobs', status: 200, latencyMs: 0 });
    expect(schemaError('post-details', { nothing: true }).credits).toBeNull();

    const call = { operation: 'post-details' as const, method: 'GET' as const, path: '/p?url=x', status: 200, latencyMs: 3 };
    try {
      validateResponse('post-details', { message: 'echo secret-token-123' }, { call, raw: '{"message":"echo secret-token-123"}', secrets: ['secret-token-123'] });
      expect.unreachable();
    } catch (e) {
      const se = e as ApiSchemaError;
      expect(se.call).toBe(call);
      expect(se.raw).not.toContain('secret-token-123');
      expect(se.bodyExcerpt).not.toContain('secret-token-123');
    }
  });

  it('keeps the body intact for the archive when the token is too short to be a real one; the excerpt is still redacted', () => {
    // The sandbox takes short tokens like `tok`: redacting them from the body would mangle words ("stock").
    const raw = '{"message":"stock tok"}';
    try {
      validateResponse('post-details', JSON.parse(raw), { raw, secrets: ['tok'] });
      expect.unreachable();
    } catch (e) {
      const se = e as ApiSchemaError;
      expect(se.raw).toBe(raw);
      expect(se.bodyExcerpt).not.toContain('tok');
    }
  });
});

