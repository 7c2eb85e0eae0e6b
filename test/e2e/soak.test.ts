import { describe, expect, it } from 'vitest';
import { formatSoakReport, runSoak } from '../soak/soak.ts';

// The short soak: the CLI SIGKILLed twice mid-run against a sandbox with every fault on, then run to the end.
// `npm run soak` runs the long one (3000 tasks, 5 kills). 120 tasks still reach the edges: seed 11 puts every
// fault kind among the sandbox's first 38 calls, and the first run, killed 1.4 s after its first call (the
// seed's delay), cannot finish by then: its 120 tasks and their retries need 130-odd calls, where the sandbox's
// 60 a second (a sliding window) admit at most 120 in that time.
describe('soak: faults and SIGKILLs', () => {
  it('ends with every task settled, no duplicates, bounded double billing and the clean run\'s dataset', async () => {
    const report = await runSoak({ tasks: 120, kills: 2, concurrency: 8, seed: 11 });
    const text = formatSoakReport(report);
    expect(report.kills.filter((k) => k.killed).length, text).toBeGreaterThanOrEqual(1);
    // Every fault kind happened, or the soak tested less than it claims.
    for (const fault of ['server_error', 'unavailable', 'drop', 'truncate', '429']) expect(report.faults[fault] ?? 0, `${fault}\n${text}`).toBeGreaterThan(0);
    for (const check of report.checks) expect(check.ok, `${check.name}: ${check.detail}\n${text}`).toBe(true);
  }, 150_000);
});
