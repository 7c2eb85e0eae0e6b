/**
 * A worker's own answers among its night's (JobSummary's `thisWorker`), read from its run's calls on both engines: a
 * task's planning and settling re-stamp its run_id, so only the call whose time its answer holds tells who answered it.
 */
import { afterEach, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.ts';
import { ownAnswersReads } from '../../src/store/ledger.ts';
import { makeWorkspace, type Workspace } from '../support/run-helpers.ts';
import { forEachEngine } from './engines.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

const at = (minute: number, day = 2) => `2026-11-0${day}T01:${String(minute).padStart(2, '0')}:00.000Z`;

forEachEngine("a worker's own answers", (engine) => {
  it('are the tasks whose standing answer came from its calls, and none for a run alone in its night', async () => {
    const ws: Workspace = await makeWorkspace();
    cleanups.push(() => ws.cleanup());
    const db = await engine.open(ws.dir);
    await db.create();
    // Night one: run 1 alone. Night two: runs 2 and 3 overlap (3 still going).
    for (const [id, started, ended, status] of [[1, at(0, 1), at(30, 1), 'completed'], [2, at(0), at(30), 'completed'], [3, at(20), null, 'running']] as const) {
      await db.run(`INSERT INTO runs (id, jobs, started_at, ended_at, status) VALUES (?, '["posts"]', ?, ?, ?)`, id, started, ended, status);
    }
    // Every task stamped with run 3, the last to plan: the stamp says nothing of who answered.
    const tasks: Array<[number, string, string, string | null, string | null]> = [
      [1, 'posts', 'done', at(5), null], // run 2's 200
      [2, 'posts', 'not_found', at(6), null], // run 2's 404
      [3, 'posts', 'done', at(25), null], // run 2 answered it, then run 3 again: run 3's
      [4, 'posts', 'failed', null, 'HTTP 429'], // run 2's attempts failed
      [5, 'posts', 'not_found', at(7), 'past the last page (1)'], // settled with no call
      [6, 'posts', 'done', at(10, 1), null], // run 1's, still fresh
      [7, 'other', 'done', at(8), null], // run 2's, another job
    ];
    for (const [id, job, status, completed, error] of tasks) {
      await db.run(`INSERT INTO tasks (id, job, operation, input_key, page, request_json, status, created_at, updated_at, completed_at, last_error, run_id)
        VALUES (?, ?, 'post-details', ?, 1, '{}', ?, ?, ?, ?, ?, 3)`, id, job, `k${id}`, status, at(0), at(0), completed, error);
    }
    const calls: Array<[number, number, number, string | null, string]> = [
      [2, 1, 200, null, at(5)], [2, 2, 404, null, at(6)], [2, 3, 200, null, at(9)], [3, 3, 200, null, at(25)],
      [2, 4, 429, 'THROTTLED', at(11)], [1, 6, 200, null, at(10, 1)], [2, 7, 200, null, at(8)],
    ];
    for (const [run, task, status, code, when] of calls) {
      await db.run(`INSERT INTO api_calls (run_id, task_id, operation, method, path, status, error_code, at) VALUES (?, ?, 'post-details', 'GET', '/p', ?, ?, ?)`,
        run, task, status, code, when);
    }
    const own = (job: string, runId: number) => openStore(db.locator).then((store) => store.read((s) => s.read(ownAnswersReads(job, runId))));
    expect(await own('posts', 1)).toBeNull();
    expect(await own('posts', 2)).toEqual({ done: 1, notFound: 1 });
    expect(await own('posts', 3)).toEqual({ done: 1, notFound: 0 });
    expect(await own('other', 2)).toEqual({ done: 1, notFound: 0 });
  });
});
