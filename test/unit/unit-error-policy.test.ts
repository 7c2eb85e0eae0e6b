/** The policy table's rows hang together: what each decision implies for the others. */
import { describe, expect, it } from 'vitest';
import { API_ERROR_KINDS, NetworkError, ServerError } from '../../src/api/errors.ts';
import { ERROR_POLICY, errorCodeOf, policyOf, type ErrorCode } from '../../src/runner/error-policy.ts';

const rows = Object.entries(ERROR_POLICY) as Array<[ErrorCode, (typeof ERROR_POLICY)[ErrorCode]]>;

describe('ERROR_POLICY', () => {
  it('has a row for every API error kind and the runner codes, and no other', () => {
    expect(Object.keys(ERROR_POLICY).sort()).toEqual([...API_ERROR_KINDS, 'INTERNAL', 'CALL_BOUND', 'STORE_REFUSED'].sort());
  });

  it.each(rows)('%s: its decisions do not contradict each other', (_code, p) => {
    // Only a retried kind can use a retry or the paid allowance; a pause is a retry that uses none.
    if (p.consumesRetry || p.paidRetries || p.pausesAll) expect(p.retry).toBe(true);
    if (p.paidRetries) expect(p.consumesRetry).toBe(true);
    if (p.pausesAll) expect(p.consumesRetry).toBe(false);
    // A kind that stops the run is not retried and leaves its task pending.
    if (p.stopsRun) expect([p.retry, p.fails]).toEqual([false, null]);
    else expect(p.fails).not.toBeNull();
    // A retried kind that runs out of retries is tried again by the next run.
    if (p.retry) expect(p.fails).toBe('retryable');
    // An outage is a failure worth retrying; an unusable answer was paid, so it is not retried.
    if (p.outage) expect(p.retry).toBe(true);
    // (its body is kept for reprocess when it could be read whole: SCHEMA; an answer over the size limit was not).
    if (p.unusable) expect([p.retry, p.fails === 'reprocess' || p.fails === 'final']).toEqual([false, true]);
  });

  it('decides by kind; anything that is not an ApiError is a bug that stops the run', () => {
    const call = { operation: 'post-details', method: 'GET', path: '/v1/api/post-details', status: null, latencyMs: 1 } as const;
    expect(errorCodeOf(new NetworkError({ call }, 'reset'))).toBe('NETWORK');
    expect(policyOf(new ServerError({ call: { ...call, status: 503 } }))).toBe(ERROR_POLICY.SERVER_ERROR);
    for (const thrown of [new Error('boom'), new TypeError('x is undefined'), 'a string', undefined]) {
      expect(errorCodeOf(thrown)).toBe('INTERNAL');
      expect(policyOf(thrown).stopsRun).toBe('fatal');
    }
  });
});
