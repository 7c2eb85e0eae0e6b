import { describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox, type SandboxOptionsInput } from '../../src/sandbox/server.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

// Real HTTP against sandboxes on free ports with node's global fetch.
const sandbox = useSandboxes();

const AUTH = { authorization: 'Bearer sandbox-token' };

interface Result {
  status: number;
  text: string;
  contentType: string | null;
  error?: unknown;
}

async function jobs(sb: Sandbox, i: number): Promise<Result> {
  try {
    const res = await fetch(`${sb.url}/v1/api/search-jobs?keywords=fault-${i % 4}`, { headers: AUTH });
    return { status: res.status, text: await res.text(), contentType: res.headers.get('content-type') };
  } catch (error) {
    return { status: 0, text: '', contentType: null, error };
  }
}

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** Sends n calls, 10 at a time, and returns their results in order. */
async function run(sb: Sandbox, n: number): Promise<Result[]> {
  const out: Result[] = [];
  for (let i = 0; i < n; i += 10) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(10, n - i) }, (_, k) => jobs(sb, i + k)))));
  }
  return out;
}

describe('sandbox faults', () => {
  // The seed (42 by default) fixes the draws: 32 of 150 calls faulted for every kind, inside the 18-42 asked below
  // (a rate of 0.4 gives 65); 300 calls a kind proved no more for twice the requests.
  const N = 150;
  const cases: Array<[string, SandboxOptionsInput, (r: Result) => boolean]> = [
    ['serverErrorRate', { serverErrorRate: 0.2 }, (r) => r.status === 500],
    ['unavailableRate', { unavailableRate: 0.2 }, (r) => r.status === 503],
    ['dropRate', { dropRate: 0.2 }, (r) => r.status === 0 && r.error !== undefined],
    ['truncateRate', { truncateRate: 0.2 }, (r) => r.status === 200 && !isJson(r.text) && r.text.startsWith('{"success":true')],
    ['htmlRate', { htmlRate: 0.2 }, (r) => r.status === 200 && /^text\/html/.test(r.contentType ?? '') && r.text.includes('<html>')],
    ['wrongShapeRate', { wrongShapeRate: 0.2 }, (r) => r.status === 200 && isJson(r.text) && !('results' in JSON.parse(r.text))],
    ['hugeRate', { hugeRate: 0.2, hugeBytes: 100_000 }, (r) => r.status === 200 && Buffer.byteLength(r.text) === 100_000],
  ];

  for (const [name, options, isFault] of cases) {
    it(`${name} 0.2 faults about a fifth of the calls, uncharged, and logs them`, async () => {
      const sb = await sandbox(options);
      const results = await run(sb, N);
      const faulted = results.filter(isFault).length;
      const normal = results.filter((r) => r.status === 200 && isJson(r.text) && 'results' in JSON.parse(r.text)).length;
      expect(faulted).toBeGreaterThan(N * 0.12);
      expect(faulted).toBeLessThan(N * 0.28);
      expect(faulted + normal).toBe(N);
      expect(sb.credits('sandbox-token').credits_used).toBe(normal * 0.25);
      const logged = sb.requests.filter((r) => r.fault !== null);
      expect(logged).toHaveLength(faulted);
      expect(logged.every((r) => r.charged === 0)).toBe(true);
      if (name === 'dropRate') expect(logged.every((r) => r.status === 0)).toBe(true);
    });
  }

  it('draws the same faults for the same requests with the same seed', async () => {
    const options = { serverErrorRate: 0.3, unavailableRate: 0.2, seed: 9 };
    // Sequential, so that the n-th draw always goes to the same request.
    const statuses = async (sb: Sandbox): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < 60; i++) out.push((await jobs(sb, i)).status);
      return out;
    };
    const a = await statuses(await sandbox(options));
    const b = await statuses(await sandbox(options));
    const c = await statuses(await sandbox({ ...options, seed: 10 }));
    expect(a).toEqual(b);
    expect(c).not.toEqual(a);
  });

  it('sends slow answers late but whole, and charges them', async () => {
    const sb = await sandbox({ slowRate: 1, slowMs: 300 });
    const t0 = performance.now();
    const r = await jobs(sb, 1);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toMatchObject({ success: true, credits_used: 0.25 });
    expect(sb.requests[0]).toMatchObject({ status: 200, fault: 'slow', charged: 0.25 });
  });

  it('sends a huge answer of 20 MiB by default', async () => {
    const sb = await sandbox({ hugeRate: 1 });
    const res = await fetch(`${sb.url}/v1/api/search-jobs?keywords=x`, { headers: AUTH });
    expect(res.status).toBe(200);
    expect((await res.arrayBuffer()).byteLength).toBe(20 * 1024 * 1024);
  });

  it('adds the configured latency, fixed or drawn from a range', async () => {
    const fixed = await sandbox({ latencyMs: 80 });
    let t0 = performance.now();
    await jobs(fixed, 1);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(75);
    const ranged = await sandbox({ latencyMs: [30, 60] });
    t0 = performance.now();
    await jobs(ranged, 1);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(28);
  });

  it('rejects rates outside 0..1', async () => {
    await expect(startSandbox({ dropRate: 1.5 })).rejects.toThrow(/dropRate/);
    await expect(startSandbox({ latencyMs: [10, 5] })).rejects.toThrow(/latencyMs/);
  });

  it('stops promptly with an answer still pending and closes kept-alive sockets', async () => {
    const sb = await startSandbox({ slowRate: 1, slowMs: 60_000 });
    const pending = jobs(sb, 1);
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    await sb.stop();
    expect(performance.now() - t0).toBeLessThan(1000);
    expect((await pending).status).toBe(0);
    expect((await jobs(sb, 2)).status).toBe(0);
  });
});

describe('sandbox request log', () => {
  it('records every request with its decoded query, headers, body, status, charge and fault', async () => {
    const sb = await sandbox({ tokens: { tok: 10 } });
    const before = performance.timeOrigin + performance.now();
    const postUrl = 'https://www.network.com/posts/a_b-activity-7111111111111111111-abcd';
    await fetch(`${sb.url}/v1/api/post-details?url=${encodeURIComponent(postUrl)}`, { headers: { authorization: 'Bearer tok', 'X-Trace': 'one' } });
    await fetch(`${sb.url}/v1/api/similar-companies`, {
      method: 'POST',
      headers: { authorization: 'Bearer tok', 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'network.com/company/acme', page: 1, num: 2 }),
    });
    await fetch(`${sb.url}/v1/api/similar-companies`, { method: 'POST', headers: { authorization: 'Bearer tok', 'content-type': 'application/json' }, body: 'not json' });
    await fetch(`${sb.url}/v1/api/search-jobs?keywords=data%20engineer&start=0&start=20`, { headers: { authorization: 'Bearer tok' } });
    const after = performance.timeOrigin + performance.now();

    const log = sb.requests;
    expect(log.map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    for (const r of log) {
      expect(r.at).toBeGreaterThanOrEqual(before - 1);
      expect(r.at).toBeLessThanOrEqual(after + 1);
      expect(r.fault).toBeNull();
    }
    expect(log[0]).toMatchObject({
      method: 'GET',
      path: '/v1/api/post-details',
      query: { url: postUrl },
      rawQuery: `url=${encodeURIComponent(postUrl)}`,
      body: null,
      status: 200,
      charged: 1,
    });
    expect(log[0]?.headers['x-trace']).toBe('one');
    expect(log[0]?.headers.authorization).toBe('Bearer tok');
    expect(log[1]).toMatchObject({ method: 'POST', query: {}, rawQuery: '', body: { url: 'network.com/company/acme', page: 1, num: 2 }, status: 200, charged: 1 });
    expect(log[2]).toMatchObject({ body: 'not json', status: 400, charged: 0 });
    expect(log[3]).toMatchObject({ query: { keywords: 'data engineer', start: '0' }, status: 200, charged: 0.25 });
    expect(log[1]!.at).toBeGreaterThanOrEqual(log[0]!.at);

    sb.clearLog();
    expect(sb.requests).toHaveLength(0);
    await fetch(`${sb.url}/v1/api/search-jobs`, { headers: { authorization: 'Bearer tok' } });
    expect(sb.requests).toHaveLength(1);
    expect(sb.requests[0]?.seq).toBe(5);
  });

  it('keeps no log when logRequests is false, but still calls onRequest', async () => {
    const seen: number[] = [];
    const sb = await sandbox({ logRequests: false, onRequest: (e) => seen.push(e.status) });
    await jobs(sb, 1);
    await fetch(`${sb.url}/nowhere`);
    expect(sb.requests).toHaveLength(0);
    expect(seen).toEqual([200, 404]);
  });
});
