import { request as httpRequest } from 'node:http';
import { describe, expect, it } from 'vitest';
import { SANDBOX_DEFAULTS, type Sandbox } from '../../src/sandbox/server.ts';
import { RateLimiter } from '../../src/sandbox/rate-limiter.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

// Real HTTP against sandboxes on free ports. Raw node:http where header-name case matters, fetch elsewhere.
const sandbox = useSandboxes();

interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

async function call(sb: Sandbox, path: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(`${sb.url}${path}`, init);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const similar = (sb: Sandbox, token: string, body: unknown = { url: 'network.com/company/acme', num: 2 }) =>
  call(sb, '/v1/api/similar-companies', {
    method: 'POST',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const jobs = (sb: Sandbox, token: string, query = 'keywords=node') => call(sb, `/v1/api/search-jobs?${query}`, { headers: bearer(token) });
const post = (sb: Sandbox, token: string, query = `url=${encodeURIComponent('https://www.network.com/feed/update/urn:li:activity:7100000000000000000')}`) =>
  call(sb, `/v1/api/post-details?${query}`, { headers: bearer(token) });

/** A GET with exactly the given header names, as node:http sends them unchanged. */
function rawGet(sb: Sandbox, path: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${sb.url}${path}`, { headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('sandbox auth', () => {
  it('accepts the header name and the Bearer scheme in any case', async () => {
    const sb = await sandbox({ tokens: { tok: 100 } });
    for (const [name, scheme] of [['authorization', 'Bearer'], ['Authorization', 'bearer'], ['AUTHORIZATION', 'BEARER']]) {
      const r = await rawGet(sb, '/v1/api/search-jobs?keywords=x', { [name as string]: `${scheme} tok` });
      expect(r.status, `${name}: ${scheme}`).toBe(200);
    }
    expect(sb.requests.map((r) => Object.keys(r.headers).filter((h) => h === 'authorization').length)).toEqual([1, 1, 1]);
  });

  it('answers 401 for a missing, malformed or unknown token and 403 for a suspended one, uncharged', async () => {
    const sb = await sandbox({ tokens: { tok: 100, gone: 100 }, suspendedTokens: ['gone'] });
    const missing = await call(sb, '/v1/api/search-jobs?keywords=x');
    expect(missing.status).toBe(401);
    expect(typeof missing.body.message).toBe('string');
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
    expect((await call(sb, '/v1/api/search-jobs', { headers: { authorization: 'Basic dG9rOg==' } })).status).toBe(401);
    const unknown = await jobs(sb, 'nope');
    expect(unknown.status).toBe(401);
    expect(typeof unknown.body.message).toBe('string');
    const suspended = await similar(sb, 'gone');
    expect(suspended.status).toBe(403);
    expect(typeof suspended.body.message).toBe('string');
    expect(sb.credits('gone').credits_used).toBe(0);
    expect(sb.credits('tok').credits_used).toBe(0);
  });

  it('answers 404 for an unknown path, 405 for a wrong method, 400 for invalid parameters, none charged', async () => {
    const sb = await sandbox({ tokens: { tok: 100 } });
    const nowhere = await call(sb, '/v1/api/nothing', { headers: bearer('tok') });
    expect(nowhere).toMatchObject({ status: 404, body: { message: 'Not Found' } });
    const wrong = await call(sb, '/v1/api/similar-companies', { headers: bearer('tok') });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('POST');
    expect((await call(sb, '/v1/api/search-jobs', { method: 'POST', headers: bearer('tok'), body: '{}' })).status).toBe(405);
    const invalid: Answer[] = [
      await similar(sb, 'tok', {}),
      await similar(sb, 'tok', { url: '' }),
      await similar(sb, 'tok', { url: 'network.com/company/a', page: 'two' }),
      await similar(sb, 'tok', { url: 'network.com/company/a', page: 0 }),
      await similar(sb, 'tok', { url: 'network.com/company/a', num: 1.5 }),
      await similar(sb, 'tok', { url: 'network.com/company/a', account: { location: 'germany' } }),
      await similar(sb, 'tok', { url: 'network.com/company/a', account: { employeeSize: { type: 'RANGE', range: [{ start: 'a' }] } } }),
      await similar(sb, 'tok', '{"url": "network.com/company/a"'),
      await similar(sb, 'tok', '[1,2]'),
      await call(sb, '/v1/api/similar-companies', { method: 'POST', headers: bearer('tok'), body: '{"url":"network.com/company/a"}' }),
      await post(sb, 'tok', ''),
      await post(sb, 'tok', 'url='),
      await jobs(sb, 'tok', 'start=abc'),
      await jobs(sb, 'tok', 'start=-10'),
      await jobs(sb, 'tok', 'start=1.5'),
    ];
    for (const [i, r] of invalid.entries()) {
      expect(r.status, `case ${i}`).toBe(400);
      expect(r.body.error, `case ${i}`).toBe(true);
      expect(typeof r.body.message, `case ${i}`).toBe('string');
    }
    expect(sb.credits('tok').credits_used).toBe(0);
    expect(sb.requests.every((r) => r.charged === 0)).toBe(true);
  });
});

describe('sandbox credits', () => {
  it('reports exact counters on every 200 with the default costs, fractional for search-jobs', async () => {
    expect(SANDBOX_DEFAULTS.costs).toEqual({ 'similar-companies': 1, 'post-details': 1, 'search-jobs': 0.25 });
    const sb = await sandbox({ tokens: { tok: 10 } });
    const a = await similar(sb, 'tok');
    expect(a.body).toMatchObject({ total_credits: 10, credits_used: 1, credits_remaining: 9 });
    const b = await post(sb, 'tok');
    expect(b.body).toMatchObject({ total_credits: 10, credits_used: 2, credits_remaining: 8 });
    const c = await jobs(sb, 'tok');
    expect(c.body).toMatchObject({ total_credits: 10, credits_used: 2.25, credits_remaining: 7.75 });
    const d = await jobs(sb, 'tok', 'keywords=other');
    expect(d.body).toMatchObject({ credits_used: 2.5, credits_remaining: 7.5 });
    expect(sb.credits('tok')).toEqual({ total_credits: 10, credits_used: 2.5, credits_remaining: 7.5 });
    expect(sb.requests.map((r) => r.charged)).toEqual([1, 1, 0.25, 0.25]);
  });

  it('does not drift with fractional costs and does not charge 404s', async () => {
    const sb = await sandbox({ tokens: { tok: 1 }, costs: { 'search-jobs': 0.1 } });
    let last: Answer | undefined;
    for (let i = 0; i < 10; i++) {
      expect((await jobs(sb, 'tok', 'keywords=notfound')).status).toBe(404);
      last = await jobs(sb, 'tok', `keywords=k${i}`);
      expect(last.status).toBe(200);
    }
    expect(last?.body).toMatchObject({ total_credits: 1, credits_used: 1, credits_remaining: 0 });
    expect(sb.credits('tok')).toEqual({ total_credits: 1, credits_used: 1, credits_remaining: 0 });
  });

  it('answers 402 when the balance cannot pay, and lets calls through again once setCredits raises it', async () => {
    const sb = await sandbox({ tokens: { tok: 2.5 } });
    expect((await similar(sb, 'tok')).status).toBe(200);
    expect((await similar(sb, 'tok')).status).toBe(200);
    const broke = await similar(sb, 'tok');
    expect(broke.status).toBe(402);
    expect(typeof broke.body.message).toBe('string');
    // The half credit left still pays for a search-jobs call (0.25), twice.
    expect((await jobs(sb, 'tok')).body).toMatchObject({ credits_used: 2.25, credits_remaining: 0.25 });
    expect((await jobs(sb, 'tok', 'keywords=b')).body.credits_remaining).toBe(0);
    expect((await jobs(sb, 'tok', 'keywords=c')).status).toBe(402);
    expect(sb.credits('tok')).toEqual({ total_credits: 2.5, credits_used: 2.5, credits_remaining: 0 });
    sb.setCredits('tok', 5);
    const again = await similar(sb, 'tok');
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ total_credits: 5, credits_used: 3.5, credits_remaining: 1.5 });
    sb.setCredits('new-token', 1);
    expect((await post(sb, 'new-token')).body).toMatchObject({ total_credits: 1, credits_used: 1, credits_remaining: 0 });
    expect(() => sb.credits('never-seen')).toThrow();
  });

  it('keeps a separate ledger per token', async () => {
    const sb = await sandbox({ tokens: { a: 5, b: 7 } });
    await similar(sb, 'a');
    await similar(sb, 'a');
    expect((await similar(sb, 'b')).body).toMatchObject({ total_credits: 7, credits_used: 1, credits_remaining: 6 });
    expect(sb.credits('a').credits_used).toBe(2);
  });
});

describe('sandbox rate limit', () => {
  it('answers 429 with Retry-After over the per-token limit of a sliding second, then recovers', async () => {
    const sb = await sandbox({ tokens: { a: 100, b: 100 }, rateLimitPerSecond: 5, retryAfterSeconds: 2 });
    const burst = await Promise.all(Array.from({ length: 8 }, (_, i) => jobs(sb, 'a', `keywords=r${i}`)));
    const limited = burst.filter((r) => r.status === 429);
    expect(burst.filter((r) => r.status === 200)).toHaveLength(5);
    expect(limited).toHaveLength(3);
    for (const r of limited) {
      expect(r.headers.get('retry-after')).toBe('2');
      expect(typeof r.body.message).toBe('string');
    }
    expect(sb.credits('a').credits_used).toBe(1.25);
    // Another token has its own window.
    expect((await jobs(sb, 'b')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1050));
    expect((await jobs(sb, 'a')).status).toBe(200);
  });

  it('answers 429 over the per-minute limit with Retry-After until the minute window admits a call', async () => {
    const sb = await sandbox({ tokens: { a: 100, b: 100 }, rateLimitPerMinute: 4, retryAfterSeconds: 1 });
    const statuses: number[] = [];
    const retryAfter: string[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await jobs(sb, 'a', `keywords=m${i}`);
      statuses.push(r.status);
      if (r.status === 429) retryAfter.push(r.headers.get('retry-after') ?? '');
    }
    // Well under a second apart, so a per-second view would let all 7 through; the minute window takes 4.
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429]);
    // The first call leaves the window ~60 s after it was made: not the configured 1 s.
    for (const s of retryAfter) expect(Number(s)).toBeGreaterThanOrEqual(59);
    for (const s of retryAfter) expect(Number(s)).toBeLessThanOrEqual(60);
    expect(sb.credits('a').credits_used).toBe(1);
    expect((await jobs(sb, 'b')).status).toBe(200);
  });

  it('counts only accepted calls, and a call must fit both the second and the minute window', () => {
    const limiter = new RateLimiter([{ limit: 2, windowMs: 1000 }, { limit: 3, windowMs: 60_000 }]);
    expect(limiter.tryAcquire('t', 0)).toBeNull();
    expect(limiter.tryAcquire('t', 10)).toBeNull();
    // Over the second window: refused by it, and not recorded in the minute window either.
    expect(limiter.tryAcquire('t', 20)).toEqual({ window: { limit: 2, windowMs: 1000 }, waitMs: 980 });
    expect(limiter.tryAcquire('t', 1000)).toBeNull();
    expect(limiter.tryAcquire('t', 2000)).toEqual({ window: { limit: 3, windowMs: 60_000 }, waitMs: 58_000 });
    // The window slides: the call at 0 has left it at 60 000, the one at 10 not yet.
    expect(limiter.tryAcquire('t', 60_000)).toBeNull();
    expect(limiter.tryAcquire('t', 60_005)).toEqual({ window: { limit: 3, windowMs: 60_000 }, waitMs: 5 });
    expect(limiter.tryAcquire('other', 60_005)).toBeNull();
  });

  it('when both windows are full, names the one that admits a call last, so Retry-After is not too short', () => {
    const limiter = new RateLimiter([{ limit: 2, windowMs: 1000 }, { limit: 3, windowMs: 60_000 }]);
    for (const at of [0, 10, 1000]) expect(limiter.tryAcquire('t', at)).toBeNull();
    // The second window admits a call at 1010, the minute window only at 60 000.
    expect(limiter.tryAcquire('t', 1005)).toEqual({ window: { limit: 3, windowMs: 60_000 }, waitMs: 58_995 });
  });

  it('has no limit by default', async () => {
    const sb = await sandbox();
    const burst = await Promise.all(Array.from({ length: 30 }, () => jobs(sb, 'sandbox-token')));
    expect(burst.every((r) => r.status === 200)).toBe(true);
  });
});
