/** Exit codes from a run's status and skipped jobs, and from the error that escaped a command. */
import { describe, expect, it } from 'vitest';
import { CreditsExhaustedError, ServerError } from '../../src/api/errors.ts';
import { EXIT, exitCodeFor, exitCodeForRun } from '../../src/cli/exit-codes.ts';
import { ConfigError, NetingestError, UsageError } from '../../src/errors.ts';
import type { RunSummary } from '../../src/runner/run-summary.ts';
import { RUN_STATUSES, type RunStatus } from '../../src/store/tables.ts';

type Jobs = RunSummary['jobs'];
const jobs = (...statuses: Array<'ran' | 'skipped'>): Jobs => statuses.map((status) => ({ status })) as unknown as Jobs;
const exit = (status: RunStatus, js: Jobs) => exitCodeForRun({ status, jobs: js });

describe('exitCodeForRun', () => {
  it('maps each run status to its code when no job was skipped', () => {
    const expected: Record<RunStatus, number> = {
      running: EXIT.fatal,
      completed: EXIT.ok,
      completed_with_failures: EXIT.failedItems,
      stopped_credits: EXIT.credits,
      stopped_throttled: EXIT.credits,
      stopped_unusable: EXIT.unusableAnswers,
      interrupted: EXIT.interrupted,
      failed: EXIT.fatal,
      abandoned: EXIT.fatal,
    };
    for (const status of RUN_STATUSES) expect(exit(status, jobs('ran')), status).toBe(expected[status]);
  });

  it('a skipped job turns a finished run into 2, not a stopped one; every job skipped is 2, not 1', () => {
    expect(exit('completed', jobs('ran', 'skipped'))).toBe(EXIT.usage);
    expect(exit('completed_with_failures', jobs('ran', 'skipped'))).toBe(EXIT.usage);
    expect(exit('stopped_credits', jobs('ran', 'skipped'))).toBe(EXIT.credits);
    expect(exit('interrupted', jobs('skipped', 'ran'))).toBe(EXIT.interrupted);
    expect(exit('stopped_unusable', jobs('ran', 'skipped'))).toBe(EXIT.unusableAnswers);
    expect(exit('failed', jobs('skipped', 'skipped'))).toBe(EXIT.usage);
    expect(exit('failed', jobs('ran', 'skipped'))).toBe(EXIT.fatal);
    expect(exit('failed', jobs())).toBe(EXIT.fatal);
  });

  it('an end the database did not record exits as its error does, whatever the run did (the code main gives that error)', () => {
    const notRecorded = (code: string) => ({ code, message: 'lost' });
    for (const status of ['completed', 'interrupted', 'stopped_credits'] as const) {
      const lost = { status, jobs: jobs('ran', 'skipped'), notRecorded: notRecorded('DB_CONNECTION_LOST') };
      expect(exitCodeForRun(lost), status).toBe(EXIT.fatal);
      expect(exitCodeForRun(lost)).toBe(exitCodeFor(new NetingestError('DB_CONNECTION_LOST', 'lost')));
    }
    expect(exitCodeForRun({ status: 'completed', jobs: jobs('ran'), notRecorded: notRecorded('DB_LOCKED') })).toBe(EXIT.locked);
    expect(exitCodeForRun({ status: 'completed', jobs: jobs('ran'), notRecorded: null })).toBe(EXIT.ok);
  });
});

describe('exitCodeFor', () => {
  const call = { operation: 'post-details', method: 'GET', path: '/v1/api/post-details', status: 402, latencyMs: 1 } as const;
  it.each([
    [new UsageError('bad flag'), EXIT.usage],
    [new ConfigError('no token'), EXIT.usage],
    [new NetingestError('LOCKED', 'held'), EXIT.locked],
    [new NetingestError('LOCK_LOST', 'taken over'), EXIT.locked],
    [new NetingestError('DB_LOCKED', 'busy'), EXIT.locked],
    [new CreditsExhaustedError({ call }), EXIT.credits],
    [new NetingestError('INTERRUPTED', 'signal'), EXIT.interrupted],
    [new NetingestError('QUERY_TIMEOUT', 'slow'), EXIT.timeout],
    [new ServerError({ call: { ...call, status: 503 } }), EXIT.fatal],
    [new NetingestError('toString', 'not an own key of the table'), EXIT.fatal],
    [new Error('a bug'), EXIT.fatal],
  ])('%s exits %i', (err, code) => {
    expect(exitCodeFor(err)).toBe(code);
  });
});
