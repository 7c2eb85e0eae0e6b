/**
 * The report's headline judges the last night, not the last run: on PostgreSQL the workers sharing a job are runs
 * side by side, and a night where one worker failed while the others completed was headlined by whichever started
 * last ("Nothing to do."). The night is `changes --since last`'s: the last run and the runs overlapping it. On both
 * engines.
 */
import { afterEach, expect, it } from 'vitest';
import { gatherFigures } from '../../src/report/write-report.ts';
import { forEachEngine } from './engines.ts';
import { makeWorkspace, type Workspace } from '../support/run-helpers.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

forEachEngine('report headline of a night of workers', (engine) => {
  it('is the worst run of the night, with the credits of them all and what the last to end left deferred', async () => {
    const ws: Workspace = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    const db = await engine.open(ws.dir);
    await db.create();
    // Night one: run 1, which stopped on credits. Night two: workers 2, 3 and 4 on one job; 2 failed early (its end
    // counted the job's tasks then, 30 left), 3 and 4, started after it, completed the job.
    const runs: Array<[number, string, string, string, number, string | null, number, number]> = [
      [1, '2026-11-01T01:00:00.000Z', '2026-11-01T01:30:00.000Z', 'stopped_credits', 3, 'credits.reserve: the balance is below the reserve', 2, 12],
      [2, '2026-11-02T01:00:00.000Z', '2026-11-02T01:10:00.000Z', 'failed', 1, 'API_UNAVAILABLE: the API is unreachable', 5, 30],
      [3, '2026-11-02T01:05:00.000Z', '2026-11-02T01:30:00.000Z', 'completed', 0, null, 20, 0],
      [4, '2026-11-02T01:20:00.000Z', '2026-11-02T01:40:00.000Z', 'completed', 0, null, 10, 0],
    ];
    for (const [id, started, ended, status, exitCode, error, spent, deferred] of runs) {
      await db.run(`INSERT INTO runs (id, jobs, started_at, ended_at, status, exit_code, error, credits_spent, tasks_total, tasks_deferred)
        VALUES (?, '["posts"]', ?, ?, ?, ?, ?, ?, 40, ?)`, id, started, ended, status, exitCode, error, spent, deferred);
    }
    const { figures } = await gatherFigures({ db: db.locator, now: new Date('2026-11-02T06:00:00.000Z') });
    expect(figures.headline).toMatchObject({
      lastRun: { id: 2, status: 'failed', exitCode: 1, endedAt: '2026-11-02T01:10:00.000Z', unfinished: false },
      nightRunIds: [4, 3, 2],
      level: 'stop',
      action: "Read run 2's error below (and the log); the next run resumes where it stopped.",
      creditsSpentLastRun: 35,
      // Run 4 ended last: the job's tasks then, the other workers' answers included.
      deferred: { tasks: 0, why: null },
    });
  });
});
