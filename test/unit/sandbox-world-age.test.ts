import { afterAll, describe, expect, it } from 'vitest';
import { startSandbox, type Sandbox } from '../../src/sandbox/server.ts';

// The sandbox's aged world (ageDays): what a nightly client sees change from one night to the next.
const REFS = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark', 'wayne', 'tyrell'];
const POSTS = ['1111111111111111111', '2222222222222222222', '3333333333333333333', '4444444444444444444'];
const SEARCHES = ['keywords=engineer&location=berlin', 'keywords=sales&location=paris', 'keywords=design'];

interface World {
  lookalikes: Map<string, number>;
  reactions: number[];
  jobs: Set<string>;
  bytes: string;
}

const sandboxes: Sandbox[] = [];
afterAll(async () => {
  await Promise.all(sandboxes.map((s) => s.stop()));
});

async function worldOn(ageDays: number | undefined): Promise<World> {
  const sandbox = await startSandbox(ageDays === undefined ? {} : { ageDays });
  sandboxes.push(sandbox);
  const headers = { authorization: 'Bearer sandbox-token' };
  const lookalikes = new Map<string, number>();
  let bytes = '';
  for (const ref of REFS) {
    const res = await fetch(`${sandbox.url}/v1/api/similar-companies`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `https://www.network.com/company/${ref}`, num: 50 }),
    });
    const text = await res.text();
    bytes += text;
    for (const c of JSON.parse(text).data?.content ?? []) lookalikes.set(`${ref}>${c.url}`, c.staff.total);
  }
  const reactions: number[] = [];
  for (const id of POSTS) {
    const res = await fetch(`${sandbox.url}/v1/api/post-details?url=${encodeURIComponent(`https://www.network.com/posts/x-activity-${id}-y`)}`, { headers });
    const text = await res.text();
    bytes += text;
    reactions.push(JSON.parse(text).engagement?.reactions ?? -1);
  }
  const jobs = new Set<string>();
  for (const query of SEARCHES) {
    for (let start = 0; start < 100; start += 25) {
      const res = await fetch(`${sandbox.url}/v1/api/search-jobs?${query}&start=${start}`, { headers });
      if (res.status !== 200) break;
      const text = await res.text();
      bytes += text;
      for (const job of JSON.parse(text).results ?? []) jobs.add(`${query}>${job.url ?? job.job_url ?? JSON.stringify(job).slice(0, 80)}`);
    }
  }
  return { lookalikes, reactions, jobs, bytes };
}

const diff = <T>(a: Set<T> | Map<T, unknown>, b: Set<T> | Map<T, unknown>) => [...b.keys()].filter((k) => !a.has(k)).length;

describe('sandbox ageDays', () => {
  it('day 0 is the seed world to the byte', async () => {
    const [plain, zero] = await Promise.all([worldOn(undefined), worldOn(0)]);
    expect(zero.bytes).toBe(plain.bytes);
  });

  it('each later day moves the world: staff grows, reactions rise, lookalikes and jobs come and go', async () => {
    const [d0, d1, d2] = [await worldOn(0), await worldOn(1), await worldOn(2)];
    for (const [before, after] of [[d0, d1], [d1, d2]] as const) {
      const kept = [...after.lookalikes.keys()].filter((k) => before.lookalikes.has(k));
      const grown = kept.filter((k) => after.lookalikes.get(k)! > before.lookalikes.get(k)!);
      const shrunk = kept.filter((k) => after.lookalikes.get(k)! < before.lookalikes.get(k)!);
      expect(grown.length).toBeGreaterThan(0);
      expect(shrunk).toEqual([]);
      expect(diff(before.lookalikes, after.lookalikes), 'lookalikes added').toBeGreaterThan(0);
      expect(diff(after.lookalikes, before.lookalikes), 'lookalikes removed').toBeGreaterThan(0);
      after.reactions.forEach((r, i) => expect(r).toBeGreaterThanOrEqual(before.reactions[i]!));
      expect(after.reactions.some((r, i) => r > before.reactions[i]!)).toBe(true);
      expect(diff(before.jobs, after.jobs) + diff(after.jobs, before.jobs), 'jobs come and go').toBeGreaterThan(0);
    }
    // The same day twice is the same world.
    expect((await worldOn(2)).bytes).toBe(d2.bytes);
  });

  it('refuses an age that is not a whole number of days from 0 to 3650', async () => {
    for (const ageDays of [-1, 1.5, 3651, Number.NaN]) await expect(startSandbox({ ageDays })).rejects.toThrow(/ageDays/);
  });
});
