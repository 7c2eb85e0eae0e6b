import { describe, expect, it } from 'vitest';
import { formatSoakReport, runSoak } from '../soak/soak.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';

// The short soak of test/e2e/soak.test.ts on PostgreSQL: the CLI SIGKILLed twice mid-run against a sandbox with
// every fault on, resumed, run to the end, and compared with a clean run's database. `npm run soak -- --postgres`
// runs the long one. PostgreSQL's kill paths differ from SQLite's (a killed worker's claims held until their
// lease ends, its run closed by the next worker's lock check): the same promises must hold.
describe.skipIf(!pgClusterUrl)(`soak on PostgreSQL: faults and SIGKILLs${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('ends with every task settled, no duplicates, bounded double billing and the clean run\'s dataset', async () => {
    const report = await runSoak({ tasks: 120, kills: 2, concurrency: 8, seed: 11, pgClusterUrl });
    const text = formatSoakReport(report);
    expect(report.kills.filter((k) => k.killed).length, text).toBeGreaterThanOrEqual(1);
    for (const fault of ['server_error', 'unavailable', 'drop', 'truncate', '429']) expect(report.faults[fault] ?? 0, `${fault}\n${text}`).toBeGreaterThan(0);
    for (const check of report.checks) expect(check.ok, `${check.name}: ${check.detail}\n${text}`).toBe(true);
  }, 150_000);
});
