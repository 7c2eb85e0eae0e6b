/**
 * A run with more calls in flight than Node's default of ten listeners per signal: every waiting call listens on
 * the run's stop signal (the shared rate gate, a backoff), which is by design, and must not print Node's "possible
 * memory leak" warning on the user's terminal or cron log.
 */
import { describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/run-helpers.ts';
import { setUp, TOKEN, useCleanups } from './run-workers.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';

useCleanups();

describe.skipIf(!pgClusterUrl)(`a PostgreSQL run with many calls in flight${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('concurrency 24 under a shared rate limit: no warning on stderr', async () => {
    const s = await setUp(120, 'many_in_flight');
    const job = await s.ws.job('wide', {
      operation: 'post-details',
      input: { csv: 'posts.csv', column: 'post_url' },
      // Spaced slots: calls wait at the shared gate, two dozen at a time.
      rate: { requestsPerMinute: 6_000, concurrency: 24 },
    });
    const run = await runCli(['run', job, '--db', s.url, '--json'], { cwd: s.ws.dir, env: cliEnv(s.sandbox, TOKEN) });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).not.toMatch(/MaxListenersExceededWarning|memory leak/);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'completed' });
  }, 60_000);
});
