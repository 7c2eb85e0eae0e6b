// validateResponse against bodies written from api.md (not from the sandbox, so the two cannot share a misreading).
import { describe, expect, it } from 'vitest';
import { ApiSchemaError, errorAction } from '../src/api/errors.ts';
import { formatJsonPath, validateResponse } from '../src/api/schemas.ts';
import type { Operation } from '../src/spec/types.ts';

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

describe('validateResponse: bodies of the spec pass', () => {
  it('accepts each operation\'s 200 body and returns it typed', () => {
    expect(validateResponse('similar-companies', similar()).data.content[3]?.staff.total).toBe(5400);
    expect(validateResponse('post-details', post()).engagement.reactions).toBe(12);
    expect(validateResponse('search-jobs', jobs()).results[1]?.title).toBe('ML Engineer');
  });

  it('keeps unknown extra members at every level', () => {
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
    const p = validateResponse('post-details', { ...post(), repost: true, author: { ...post().author, followers: 5 } });
    expect(p.repost).toBe(true);
    expect(p.author.followers).toBe(5);
    const j = validateResponse('search-jobs', { ...jobs(), results: [job({ salary: '100k', criteria: { ...job().criteria, Extra: 'y' } })] });
    expect(j.results[0]?.salary).toBe('100k');
    expect(j.results[0]?.criteria.Extra).toBe('y');
  });

  it('accepts null in nullable members and any value in members whose type is not shown', () => {
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
    expect(() => validateResponse('similar-companies', body)).not.toThrow();
    expect(() => validateResponse('post-details', { ...post(), post: { ...post().post, hashtags: ['#a', { tag: 'b' }] } })).not.toThrow();
  });

  it('accepts fractional credit counters on every operation', () => {
    const credits = { total_credits: 10.5, credits_used: 0.75, credits_remaining: 9.75 };
    expect(validateResponse('similar-companies', { ...similar(), ...credits }).credits_used).toBe(0.75);
    expect(validateResponse('post-details', { ...post(), ...credits }).credits_remaining).toBe(9.75);
    expect(validateResponse('search-jobs', { ...jobs(), ...credits }).total_credits).toBe(10.5);
  });
});

describe('validateResponse: wrong shapes name the JSON path', () => {
  it('names a wrong type deep in an array', () => {
    const body = similar();
    (body.data.content[3]!.staff as Record<string, unknown>).total = '5400';
    const err = schemaError('similar-companies', body);
    expect(err.message).toContain('data.content[3].staff.total: expected number, received string');
    expect(err.issues).toEqual([{ path: 'data.content[3].staff.total', message: 'expected number, received string' }]);
    expect(err.code).toBe('SCHEMA');
    expect(errorAction(err)).toBe('fail-item');
  });

  it('names a missing required member', () => {
    const body = post() as Record<string, any>;
    delete body.author.network_url;
    expect(schemaError('post-details', body).message).toContain('author.network_url: required member is missing');
    const b2 = similar() as Record<string, any>;
    delete b2.data.content[0].followers;
    expect(schemaError('similar-companies', b2).message).toContain('data.content[0].followers: required member is missing');
  });

  it('quotes member names that are not identifiers', () => {
    const body = jobs();
    body.results[1] = job({ criteria: { ...job().criteria, 'Employment type': 3 } });
    expect(schemaError('search-jobs', body).message).toContain('results[1].criteria["Employment type"]: expected string, received number');
  });

  it('rejects a fraction where the spec says integer, null where it is not nullable, and a non-object body', () => {
    expect(schemaError('similar-companies', { ...similar(), page: 1.5 }).message).toContain('page: expected integer, received 1.5');
    expect(schemaError('search-jobs', { ...jobs(), results: [job({ title: null })] }).message).toContain(
      'results[0].title: expected string, received null',
    );
    expect(schemaError('post-details', [post()]).message).toContain('(root): expected object, received array');
    expect(schemaError('search-jobs', { ...jobs(), credits_used: '0.25' }).message).toContain('credits_used: expected number, received string');
  });

  it('lists at most ten issues and says how many more there are', () => {
    const err = schemaError('search-jobs', { results: 'none' });
    expect(err.message).toMatch(/\(and \d+ more\)/);
    const many = jobs();
    many.results = Array.from({ length: 20 }, () => job({ title: 1 }));
    const e2 = schemaError('search-jobs', many);
    expect(e2.issues).toHaveLength(11);
    expect(e2.issues[10]?.message).toBe('10 more not listed');
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

describe('formatJsonPath', () => {
  it('formats identifiers, indices and other keys', () => {
    expect(formatJsonPath([])).toBe('(root)');
    expect(formatJsonPath(['data', 'content', 0, 'name'])).toBe('data.content[0].name');
    expect(formatJsonPath(['results', 2, 'criteria', 'Job function'])).toBe('results[2].criteria["Job function"]');
  });
});
