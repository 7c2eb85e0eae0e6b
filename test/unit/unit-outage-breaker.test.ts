/** The outage breaker on scripted task endings: which failures count, what resets, when it trips. */
import { describe, expect, it } from 'vitest';
import { ApiSchemaError, NetworkError, RequestRejectedError, ServerError, TimeoutError } from '../../src/api/errors.ts';
import type { ApiCallInfo } from '../../src/api/types.ts';
import { ApiUnavailableError, OutageBreaker } from '../../src/runner/breakers.ts';
import { RunStop } from '../../src/runner/run-stop.ts';

const call = (status: number | null): ApiCallInfo => ({ operation: 'post-details', method: 'GET', path: '/v1/api/post-details', status, latencyMs: 1 } as ApiCallInfo);
const down = () => ({ kind: 'failed' as const, error: new NetworkError({ call: call(null) }, 'connection refused') });
const answered = { kind: 'done' as const };

describe('OutageBreaker', () => {
  it('trips at the threshold of outage failures in a row, naming the last one', () => {
    const stop = new RunStop();
    const breaker = new OutageBreaker(stop, 3);
    breaker.record(down());
    breaker.record({ kind: 'failed', error: new TimeoutError({ call: call(null) }) });
    expect(stop.reason).toBeNull();
    breaker.record({ kind: 'failed', error: new ServerError({ call: call(503), bodyExcerpt: 'maintenance' }) });
    expect(stop.reason).toBe('outage');
    expect(stop.error).toBeInstanceOf(ApiUnavailableError);
    expect((stop.error as ApiUnavailableError).message).toMatch(/HTTP 503 \(body: maintenance\) \[SERVER_ERROR\]; 3 tasks in a row failed/);
  });

  it('any answer, and any failure that is not an outage, starts the count again', () => {
    const stop = new RunStop();
    const breaker = new OutageBreaker(stop, 3);
    const notOutages = [
      answered,
      { kind: 'failed' as const, error: new RequestRejectedError({ call: call(400) }) },
      { kind: 'failed' as const, error: new ApiSchemaError({ call: call(200) }, [], '{}', null) },
      { kind: 'failed' as const, error: new Error('a bug') },
    ];
    for (const reset of notOutages) {
      breaker.record(down());
      breaker.record(down());
      breaker.record(reset);
    }
    expect(stop.reason).toBeNull();
  });

  it('setThreshold raises the bar (never below 1), and a run already stopping keeps its reason', () => {
    const stop = new RunStop();
    const breaker = new OutageBreaker(stop, 2);
    breaker.setThreshold(4);
    for (let i = 0; i < 3; i++) breaker.record(down());
    expect(stop.reason).toBeNull();
    stop.stop('credits');
    breaker.record(down());
    expect(stop.reason).toBe('credits');

    const once = new RunStop();
    const strict = new OutageBreaker(once, 5);
    strict.setThreshold(0);
    strict.record(down());
    expect(once.reason).toBe('outage');
  });
});
