import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

// GET /v1/api/auth, the balance check of known-behaviour.md, at the HTTP level with plain fetch.
const start = useSandboxes();

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function balance(sb: Sandbox, token: string | null, init: RequestInit = {}): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(`${sb.url}/v1/api/auth`, { ...init, headers: token === null ? {} : bearer(token) });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text };
}

/** One call of each operation, then two more searches: what a short run would pay. */
async function someCalls(sb: Sandbox, token: string): Promise<number[]> {
  const statuses: number[] = [];
  const similar = await fetch(`${sb.url}/v1/api/similar-companies`, {
    method: 'POST',
    headers: { ...bearer(token), 'content-type': 'application/json' },
    body: JSON.stringify({ url: 'network.com/company/acme', num: 10 }),
  });
  statuses.push(similar.status);
  await similar.text();
  for (const path of [
    `post-details?url=${encodeURIComponent('https://www.network.com/posts/a-activity-7111111111111111111-x')}`,
    'search-jobs?keywords=node',
    'search-jobs?keywords=node&start=10',
    'search-jobs?keywords=go',
    'search-jobs?keywords=notfound',
  ]) {
    const res = await fetch(`${sb.url}/v1/api/${path}`, { headers: bearer(token) });
    statuses.push(res.status);
    await res.text();
  }
  return statuses;
}

describe('sandbox balance route', () => {
  for (const mode of ['spec', 'live'] as const) {
    it(`answers the counters the operations charged, and is never charged itself (${mode} mode)`, async () => {
      const sb = await start({ tokens: { tok: 50 }, liveShapes: mode === 'live', costs: { 'post-details': 2 } });
      const before = await balance(sb, 'tok');
      expect(before.status).toBe(200);
      expect(before.body).toEqual({ uid: expect.any(String), team: expect.any(String), total_credits: 50, credits_used: 0, credits_remaining: 50 });
      expect(Object.keys(before.body)).toEqual(['uid', 'team', 'total_credits', 'credits_used', 'credits_remaining']);

      expect(await someCalls(sb, 'tok')).toEqual([200, 200, 200, 200, 200, 404]);
      const charged = sb.requests.filter((r) => r.path !== '/v1/api/auth').reduce((sum, r) => sum + r.charged, 0);
      expect(charged).toBeGreaterThan(0);
      const after = await balance(sb, 'tok');
      expect(after.body.credits_used).toBeCloseTo(charged, 9);
      expect(after.body.credits_remaining).toBeCloseTo(50 - charged, 9);
      expect(after.body).toMatchObject(sb.credits('tok'));
      expect(after.body.uid).toBe(before.body.uid);

      // Asking again and again costs nothing.
      for (let i = 0; i < 5; i++) expect((await balance(sb, 'tok')).body).toEqual(after.body);
      const asked = sb.requests.filter((r) => r.path === '/v1/api/auth');
      expect(asked).toHaveLength(7);
      expect(asked.every((r) => r.status === 200 && r.charged === 0 && r.fault === null)).toBe(true);
    });
  }

  it('answers 200 at a zero balance, when every operation is refused 402', async () => {
    const sb = await start({ tokens: { broke: 0 } });
    expect((await fetch(`${sb.url}/v1/api/search-jobs?keywords=x`, { headers: bearer('broke') })).status).toBe(402);
    expect((await balance(sb, 'broke')).body).toMatchObject({ total_credits: 0, credits_used: 0, credits_remaining: 0 });
  });

  it('checks the token like the operations, keeps it out of the body, and is never faulted', async () => {
    const sb = await start({ tokens: { 'secret-token-123': 10 }, suspendedTokens: ['gone'], wrongShapeRate: 0.5, htmlRate: 0.5 });
    expect((await balance(sb, null)).status).toBe(401);
    expect((await balance(sb, 'nope')).status).toBe(401);
    expect((await balance(sb, 'gone')).status).toBe(403);
    const res = await fetch(`${sb.url}/v1/api/auth`, { method: 'POST', headers: bearer('secret-token-123') });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    for (let i = 0; i < 10; i++) {
      const ok = await balance(sb, 'secret-token-123');
      expect(ok.status).toBe(200);
      expect(ok.body.credits_remaining).toBe(10);
      expect(ok.text).not.toContain('secret-token-123');
    }
  });

  it('counts toward the rate limit, as any request to the service', async () => {
    const sb = await start({ tokens: { tok: 10 }, rateLimitPerMinute: 2 });
    expect((await balance(sb, 'tok')).status).toBe(200);
    expect((await balance(sb, 'tok')).status).toBe(200);
    expect((await balance(sb, 'tok')).status).toBe(429);
  });

  it('is the 404 of an unknown path with balanceRoute off', async () => {
    const sb = await start({ tokens: { tok: 10 }, balanceRoute: false });
    expect(await balance(sb, 'tok')).toMatchObject({ status: 404, body: { message: 'Not Found' } });
  });
});
