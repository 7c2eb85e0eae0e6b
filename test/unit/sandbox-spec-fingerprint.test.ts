import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/server.ts';
import { useSandboxes } from '../support/sandbox-helpers.ts';

// The default (spec) mode must answer byte for byte as it did before the live-service mode existed: other tests
// and saved datasets rely on its records. The digests below were taken from the sandbox before that change.
const sandbox = useSandboxes();

const SIMILAR: ReadonlyArray<[url: string, num: number, page: number]> = [
  ['network.com/company/acme', 10, 1],
  ['https://www.network.com/company/globex', 50, 1],
  ['de.network.com/company/initech/', 10, 2],
];
const GETS = [
  `/v1/api/post-details?url=${encodeURIComponent('https://www.network.com/posts/jane_hello-activity-7123456789012345678-abcd')}`,
  '/v1/api/search-jobs?keywords=node&start=10',
  '/v1/api/search-jobs?keywords=data%20engineer&location=berlin',
];
const DIGESTS_BEFORE_LIVE_MODE = [
  '6020ba152867df0d', '582ce1b4a0099cf1', 'a681f1fb137c55ff', '72ed3a700a02032c', 'f0bfad6988b14685', '9c16f0309d720e88',
];

/** The status and body text of each fixed request, in a fixed order (the counters in each body depend on it). */
async function answers(sb: Sandbox): Promise<string[]> {
  const headers = { authorization: 'Bearer t' };
  const texts: string[] = [];
  for (const [url, num, page] of SIMILAR) {
    const res = await fetch(`${sb.url}/v1/api/similar-companies`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({ url, num, page }),
    });
    texts.push(`${res.status} ${await res.text()}`);
  }
  for (const path of GETS) {
    const res = await fetch(`${sb.url}${path}`, { headers });
    texts.push(`${res.status} ${await res.text()}`);
  }
  return texts;
}

const digest = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 16);

describe('sandbox default mode', () => {
  it('answers byte for byte as before the live-service mode', async () => {
    const texts = await answers(await sandbox({ tokens: { t: 1e6 }, notFoundRate: 0.05 }));
    expect(texts.map(digest)).toEqual(DIGESTS_BEFORE_LIVE_MODE);
  });

  it('is not touched by the live-service options while no live shape is on', async () => {
    const tuned = {
      memberMissingRate: 0.5, memberNullRate: 0.5, brand: 'zetanet', networkHost: 'zetanet.io', maxNum: 1,
      bareUrlRate: 0.5, countryUrlRate: 0.5, balanceRoute: false,
    };
    for (const liveShapes of [false, []]) {
      const texts = await answers(await sandbox({ tokens: { t: 1e6 }, notFoundRate: 0.05, liveShapes, ...tuned }));
      expect(texts.map(digest), JSON.stringify(liveShapes)).toEqual(DIGESTS_BEFORE_LIVE_MODE);
    }
  });
});
