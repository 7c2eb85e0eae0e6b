/**
 * Opening a run (open-run.ts) releases what it opened, in reverse order, when it fails half-way: here the API
 * client refuses its URL after the lock is taken, the `runs` row written and the signal listened to.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { runJobs } from '../../src/runner/run-jobs.ts';
import { acquireRunLock } from '../../src/store/run-lock.ts';
import { openDatabase } from '../../src/store/open.ts';
import { count, csv, useWorkspaces } from '../support/run-helpers.ts';

const newWorkspace = useWorkspaces();

describe('a run that fails while opening', () => {
  it('releases the lock, stops listening to the signal and closes the database; the next run takes the lock', async () => {
    const ws = await newWorkspace();
    await ws.write('posts.csv', csv(['post_url'], [['https://www.linkedin.com/posts/user1_activity-7000000000000000001-abcd']]));
    const jobs = await ws.load(await ws.job('posts', { operation: 'post-details', input: { csv: 'posts.csv', column: 'post_url' } }));
    const signal = new AbortController().signal;

    const failed = runJobs({ dbPath: ws.db, jobs, api: { baseUrl: 'ftp://api.example.com', token: 'open-run-token-01' }, signal });

    await expect(failed).rejects.toMatchObject({ code: 'CONFIG', message: expect.stringContaining('must start with https://') });
    // Opened before the client: the runs row, the signal's listener, the lock, the database.
    expect(count(ws, 'SELECT count(*) FROM runs')).toBe(1);
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    expect(count(ws, 'SELECT count(*) FROM run_lock')).toBe(0);
    const database = openDatabase(ws.db);
    try {
      expect(() => acquireRunLock(database).release()).not.toThrow();
    } finally {
      database.close();
    }
  });
});
