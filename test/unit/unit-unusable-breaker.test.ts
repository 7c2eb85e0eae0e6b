/** The unusable-answer breaker on scripted task endings: what counts, what resets, per operation, when it trips. */
import { describe, expect, it } from 'vitest';
import { ApiSchemaError, ServerError } from '../../src/api/errors.ts';
import type { ApiCallInfo } from '../../src/api/types.ts';
import { RunStop } from '../../src/runner/run-stop.ts';
import { UnusableAnswerBreaker, UnusableAnswersError } from '../../src/runner/breakers.ts';

const call = (status: number): ApiCallInfo => ({ operation: 'similar-companies', method: 'POST', path: '/v1/api/similar-companies', status, latencyMs: 1 });
const unusable = (path = 'data.content') => ({
  kind: 'failed' as const,
  error: new ApiSchemaError({ call: call(200) }, [{ path, message: 'expected an array of records, received string' }], '{}', null),
});
const stored = { kind: 'done' as const };

describe('UnusableAnswerBreaker', () => {
  it('trips at the threshold of unusable answers in a row, naming the operation, the count, the credits and the first path', () => {
    const stop = new RunStop();
    const breaker = new UnusableAnswerBreaker(stop, () => 2.5);
    breaker.setThreshold(3);
    breaker.record('similar-companies', unusable('data.content'));
    breaker.record('similar-companies', unusable('data'));
    expect(stop.reason).toBeNull();
    breaker.record('similar-companies', unusable('data'));
    expect(stop.reason).toBe('unusable');
    const err = stop.error as UnusableAnswersError;
    expect(err).toBeInstanceOf(UnusableAnswersError);
    expect(err.code).toBe('UNUSABLE_ANSWERS');
    expect(err.message).toMatch(/^similar-companies: 3 paid answers in a row could not be read \(first: data\.content: expected an array of records, received string\), costing about 7\.5 credits/);
  });

  it('a stored answer starts the count again; a failure without an answer neither counts nor resets; operations count apart', () => {
    const stop = new RunStop();
    const breaker = new UnusableAnswerBreaker(stop, () => 1);
    breaker.setThreshold(3);
    breaker.record('similar-companies', unusable());
    breaker.record('similar-companies', unusable());
    breaker.record('similar-companies', stored);
    breaker.record('similar-companies', unusable());
    breaker.record('post-details', unusable());
    breaker.record('post-details', unusable());
    breaker.record('similar-companies', unusable());
    breaker.record('similar-companies', { kind: 'failed', error: new ServerError({ call: call(503) }) });
    expect(stop.reason).toBeNull();
    breaker.record('similar-companies', unusable());
    expect(stop.reason).toBe('unusable');
    expect((stop.error as UnusableAnswersError).operation).toBe('similar-companies');
  });
});
