import { describe, expect, it } from 'vitest';
import { formatSoakReport, runSoak } from '../soak/soak.ts';

// The short soak: the CLI SIGKILLed twice mid-run against a sandbox with every fault on, then run to the end.
// `npm run soak` runs the long one (3000 tasks, 5 kills).
describe('soak: faults and SIGKILLs', () => {
  it('ends with every task settled, no duplicates, bounded double billing and the clean run\'s dataset', async () => {
    const report = await runSoak({ tasks: 200, kills: 2, concurrency: 8, seed: 11 });
    const text = formatSoakReport(report);
    expect(report.kills.filter((k) => k.killed).length, text).toBeGreaterThanOrEqual(1);
    // Every fault kind happened, or the soak tested less than it claims.
    for (const fault of ['server_error', 'unavailable', 'drop', 'truncate', '429']) expect(report.faults[fault] ?? 0, `${fault}\n${text}`).toBeGreaterThan(0);
    for (const check of report.checks) expect(check.ok, `${check.name}: ${check.detail}\n${text}`).toBe(true);
  }, 150_000);
});
