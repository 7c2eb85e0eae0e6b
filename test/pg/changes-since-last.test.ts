/**
 * `changes --since last` is the last night's run: on PostgreSQL the workers sharing a job run side by side, each a
 * `runs` row, and a tester saw a quarter of a night's changes (the last worker's). The runs whose time overlaps the
 * last one's, one after another, are listed with it; an earlier night is not. On both engines.
 */
import { afterEach, expect, it } from 'vitest';
import { forEachEngine } from './engines.ts';
import { inProcess, makeWorkspace, type Workspace } from '../support/run-helpers.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

forEachEngine('changes --since last', (engine) => {
  it('lists the changes of the last run and of the runs overlapping it, not those of an earlier night', async () => {
    const ws: Workspace = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    const db = await engine.open(ws.dir);
    await db.create();
    // Night one: run 1. Night two: workers 2, 3 and 4, each starting before the one before it ended (4 overlaps 3
    // alone, 2 only through 3). Then run 5 alone the next night.
    const runs: Array<[number, string, string | null]> = [
      [1, '2026-11-01T01:00:00.000Z', '2026-11-01T01:30:00.000Z'],
      [2, '2026-11-02T01:00:00.000Z', '2026-11-02T01:20:00.000Z'],
      [3, '2026-11-02T01:10:00.000Z', '2026-11-02T01:40:00.000Z'],
      [4, '2026-11-02T01:35:00.000Z', '2026-11-02T02:00:00.000Z'],
    ];
    for (const [id, started, ended] of runs) {
      await db.run(`INSERT INTO runs (id, jobs, started_at, ended_at, status) VALUES (?, '["posts"]', ?, ?, 'completed')`, id, started, ended);
      await db.run(`INSERT INTO changes (run_id, at, entity, key, change) VALUES (?, ?, 'post', ?, 'added')`, id, started, `post-of-run-${id}`);
    }
    const keys = async () => {
      const cli = await inProcess(['changes', '--db', db.locator, '--format', 'jsonl'], {}, { cwd: ws.dir });
      expect(cli.code, cli.stderr).toBe(0);
      return cli.stdout.trim().split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { key: string }).key).sort();
    };
    // Before: only run 4's.
    expect(await keys()).toEqual(['post-of-run-2', 'post-of-run-3', 'post-of-run-4']);
    // A run still going (no end yet) is the last night with what overlaps it.
    await db.run(`INSERT INTO runs (id, jobs, started_at, ended_at, status) VALUES (5, '["posts"]', '2026-11-03T01:00:00.000Z', NULL, 'running')`);
    await db.run(`INSERT INTO changes (run_id, at, entity, key, change) VALUES (5, '2026-11-03T01:00:00.000Z', 'post', 'post-of-run-5', 'added')`);
    expect(await keys()).toEqual(['post-of-run-5']);
    // A run id that names no run lists nothing, as a night without changes would: it is refused, on both engines.
    const missing = await inProcess(['changes', '--db', db.locator, '--since', '20261129'], {}, { cwd: ws.dir });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--since 20261129: no run 20261129 in .* \(its run ids: 1 to 5\); .*--since 2026-11-29/);
  });
});
