/**
 * `plan` before any cost is learned: the cost is unknown, and plan says so with the range the run assumes,
 * rather than one figure (5 per call) that is five times a 1-credit call's.
 */
import { describe, expect, it } from 'vitest';
import { FAST_RATE, csv, postUrls, runCli, useWorkspaces } from '../support/run-helpers.ts';

const newWorkspace = useWorkspaces();

describe('plan with no cost learned yet', () => {
  it('says the cost is unknown and gives the range it assumes (text and --json)', async () => {
    const ws = await newWorkspace();
    await ws.write('posts.csv', csv(['post_url'], postUrls(10).map((u) => [u])));
    const file = await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' }, rate: FAST_RATE });
    const text = await runCli(['plan', file, '--db', ws.db], { cwd: ws.dir });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(
      "  estimated credits: unknown: no call has shown this operation's cost yet; the run assumes from 0 to 5 per call until its first answers show it, so from 0 to 50 for 10 calls\n",
    );
    expect(text.stdout).not.toMatch(/estimated credits: 50\b/);
    const json = await runCli(['plan', file, '--db', ws.db, '--json'], { cwd: ws.dir });
    expect(JSON.parse(json.stdout)[0]).toMatchObject({ calls: 10, costLearned: false, estimatedCredits: null, estimatedCreditsRange: { low: 0, high: 50 } });
  });
});
