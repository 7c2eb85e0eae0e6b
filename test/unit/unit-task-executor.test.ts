/**
 * The task executor on a scripted fake client and fake timers: retries and their backoff, 429 pauses and their
 * caps, credit and other stops, paid retries, unusable answers and outages (with the breakers wired as the run
 * wires them). The credit guard, rate gate, run stop and breakers are the real ones; only the client and the
 * writer are scripted/recorded.
 */
import { specOf } from '../../src/operations/index.ts';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ApiSchemaError,
  AuthError,
  CreditsExhaustedError,
  InvalidJsonError,
  NetworkError,
  ServerError,
  ThrottledError,
  TlsError,
  type ApiError,
} from '../../src/api/errors.ts';
import type { ApiCallInfo, ApiClient, ApiResult } from '../../src/api/types.ts';
import { DriftTally } from '../../src/operations/drift.ts';
import { CreditGuard } from '../../src/credits/credit-guard.ts';
import { RateGate } from '../../src/rate/rate-gate.ts';
import type { ResultWriter } from '../../src/store/result-writer.ts';
import { RunStop } from '../../src/runner/run-stop.ts';
import { executeTask, type ExecutableTask, type ExecutorContext, type RetrySettings } from '../../src/runner/task-executor.ts';
import { policyOf } from '../../src/runner/error-policy.ts';
import { OutageBreaker, UnusableAnswerBreaker } from '../../src/runner/breakers.ts';
import type { CreditCounters } from '../../src/spec/types.ts';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

const call = (status: number | null): ApiCallInfo => ({ operation: 'post-details', method: 'GET', path: '/v1/api/post-details?url=x', status, latencyMs: 1 });
const counters = (used: number): CreditCounters => ({ total_credits: 1000, credits_used: used, credits_remaining: 1000 - used });

/** One scripted answer of the fake client: returns a result or throws an error. */
type Step = () => ApiResult<never>;
let used = 0;
const ok: Step = () => ({ kind: 'ok', data: {} as never, raw: '{}', credits: counters((used += 1)), call: call(200), lastPage: true, drift: new DriftTally(), setAside: [] });
const throws = (make: () => unknown): Step => () => {
  throw make();
};
const s503 = throws(() => new ServerError({ call: call(503) }));
const reset = throws(() => new NetworkError({ call: call(null) }, 'connection reset'));
const notJson = throws(() => new InvalidJsonError({ call: call(200) }, 'Unexpected end of JSON input'));
const s429 = (retryAfterMs: number) => throws(() => new ThrottledError({ call: call(429) }, retryAfterMs));
const wrongShape = throws(() => new ApiSchemaError({ call: call(200) }, [{ path: 'post', message: 'expected an object, received string' }], '{"post":"x"}', counters((used += 1))));

/** A client that answers every call with the next step of its script, then with `then` (if given). */
class ScriptedClient {
  calls = 0;
  constructor(
    private readonly steps: Step[],
    private readonly then?: Step,
  ) {}

  readonly api: ApiClient = {
    call: () => this.next(),
    balance: () => Promise.resolve(null),
    close: () => Promise.resolve(),
  };

  private async next(): Promise<ApiResult<never>> {
    const step = this.steps[this.calls] ?? this.then;
    this.calls += 1;
    if (!step) throw new Error('the script ran out: the executor made a call it should not have');
    return step();
  }
}

/** Records what the executor asks the writer to file, one line per outcome. */
class RecordingWriter {
  readonly events: string[] = [];
  /** What the database said refusing an answer's rows, for every answer; null: each is stored. */
  refusal: string | null = null;
  attemptFailed(_task: unknown, err: ApiError) {
    return this.log(`attempt ${err.code}`);
  }
  success(_task: unknown, _request: unknown, _key: string, _result: unknown, attempts: number) {
    // Stored (null): the database refusing its rows is the writers' tests' (run-result-writer, pg-writer-groups).
    return this.log(`success after ${attempts}`).then(() => this.refusal);
  }
  notFound(_task: unknown, _call: unknown, attempts: number) {
    return this.log(`not found after ${attempts}`);
  }
  failed(_task: unknown, code: string, _message: string, retryable: boolean, attempts: number) {
    return this.log(`failed ${code} ${retryable ? 'retryable' : 'final'} after ${attempts}`);
  }
  rejected(_task: unknown, _request: unknown, _key: string, err: ApiError, attempts: number) {
    return this.log(`rejected ${err.code} after ${attempts}`);
  }
  private log(line: string): Promise<void> {
    this.events.push(line);
    return Promise.resolve();
  }
}

const RETRY: RetrySettings = { retries: 3, minTimeoutMs: 1000, maxTimeoutMs: 30_000, paidRetries: 1 };

function harness(steps: Step[], options: { then?: Step; retry?: Partial<RetrySettings>; ctx?: Partial<ExecutorContext> } = {}) {
  const client = new ScriptedClient(steps, options.then);
  const writer = new RecordingWriter();
  const stop = new RunStop();
  const gate = new RateGate({ requestsPerMinute: null });
  const guard = new CreditGuard({ reserve: 0, maxPerRun: null });
  const ctx: ExecutorContext = {
    client: client.api,
    guard,
    gate,
    stop,
    writer: writer as unknown as ResultWriter,
    retry: { ...RETRY, ...options.retry },
    maxThrottleWaitMs: 600_000,
    maxThrottledAttemptsPerTask: 20,
    ...options.ctx,
  };
  return { ctx, client, writer, stop, gate, guard };
}

const task = (id = 1): ExecutableTask => {
  const url = `https://www.linkedin.com/posts/p-${id}`;
  return { id, operation: 'post-details', spec: specOf('post-details'), inputKey: url, page: 1, request: { url }, ingest: { operation: 'post-details', postUrl: url }, requestKey: url };
};

/** Runs one task to its end on fake time; returns its outcome and the fake milliseconds it took. */
async function run(ctx: ExecutorContext, t = task()) {
  const start = performance.now();
  const pending = executeTask(t, ctx);
  await vi.runAllTimersAsync();
  const outcome = await pending;
  return { outcome, elapsedMs: performance.now() - start };
}

describe('executeTask: retries', () => {
  it('retries a 5xx and a dropped connection with exponential backoff and jitter, then stores the answer', async () => {
    const h = harness([s503, reset, ok]);
    const { outcome, elapsedMs } = await run(h.ctx);
    expect(outcome).toMatchObject({ kind: 'done', lastPage: true });
    expect(h.writer.events).toEqual(['attempt SERVER_ERROR', 'attempt NETWORK', 'success after 3']);
    // 1000 then 2000 ms, each times a jitter between 1 and 2.
    expect(elapsedMs).toBeGreaterThanOrEqual(3000);
    expect(elapsedMs).toBeLessThanOrEqual(6000);
  });

  it('after 1 + retries calls the task fails, retryable by the next run, and no further call is sent', async () => {
    const h = harness([], { then: s503, retry: { retries: 2 } });
    const { outcome } = await run(h.ctx);
    expect(outcome).toMatchObject({ kind: 'failed', retryable: true, code: 'SERVER_ERROR' });
    expect(h.client.calls).toBe(3);
    expect(h.writer.events.at(-1)).toBe('failed SERVER_ERROR retryable after 3');
  });

  it('a stop during the backoff leaves the task pending, not failed', async () => {
    const h = harness([s503, ok]);
    const pending = executeTask(task(), h.ctx);
    await vi.advanceTimersByTimeAsync(10);
    expect(h.client.calls).toBe(1);
    h.stop.stop('interrupted');
    await vi.runAllTimersAsync();
    expect(await pending).toEqual({ kind: 'stopped' });
    expect(h.client.calls).toBe(1);
    expect(h.writer.events).toEqual(['attempt SERVER_ERROR']);
  });
});

describe('executeTask: 429s', () => {
  it('pause every call for the Retry-After and use up no retry (even with retries 0)', async () => {
    const h = harness([s429(7000), s429(7000), ok], { retry: { retries: 0 } });
    const { outcome, elapsedMs } = await run(h.ctx);
    expect(outcome.kind).toBe('done');
    expect(h.client.calls).toBe(3);
    expect(h.gate.totalPausedMs).toBe(14_000);
    expect(elapsedMs).toBeGreaterThanOrEqual(14_000);
  });

  it('wait at least the backoff base when the Retry-After is 0 or in the past', async () => {
    const h = harness([s429(0), s429(-5000), ok]);
    const { outcome, elapsedMs } = await run(h.ctx);
    expect(outcome.kind).toBe('done');
    expect(h.gate.totalPausedMs).toBe(2000);
    expect(elapsedMs).toBeGreaterThanOrEqual(2000);
  });

  it('do not use up the retries of other errors in between', async () => {
    const h = harness([s503, s429(0), s503, s429(0), s503, s429(0)], { then: s503, retry: { retries: 2 } });
    const { outcome } = await run(h.ctx);
    expect(outcome).toMatchObject({ kind: 'failed', retryable: true, code: 'SERVER_ERROR' });
    // 1 + 2 retries of the 5xx, and the two 429s between them.
    expect(h.client.calls).toBe(5);
  });

  it("stop the run as throttled at the task's cap of throttled attempts, leaving the task pending", async () => {
    const h = harness([], { then: s429(0), ctx: { maxThrottledAttemptsPerTask: 3 } });
    const { outcome } = await run(h.ctx);
    expect(outcome).toEqual({ kind: 'stopped' });
    expect(h.stop.reason).toBe('throttled');
    expect(h.client.calls).toBe(3);
    expect(h.writer.events).toEqual(['attempt THROTTLED', 'attempt THROTTLED', 'attempt THROTTLED']);
  });

  it('stop the run at the first 429 whose Retry-After is past the cap, even one too big to count (Infinity), pausing no longer than the cap', async () => {
    // Before: Infinity was read as no wait, and the run sent the task's 20 throttled calls 500 ms apart.
    for (const asked of [Infinity, 8e15]) {
      const h = harness([], { then: s429(asked), ctx: { maxThrottleWaitMs: 10_000 } });
      const { outcome } = await run(h.ctx);
      expect(outcome).toEqual({ kind: 'stopped' });
      expect(h.stop.reason).toBe('throttled');
      expect(h.client.calls).toBe(1);
      expect(h.gate.totalPausedMs).toBe(10_001);
    }
  });

  it("stop the run as throttled once the run's total wait passes its cap", async () => {
    const h = harness([], { then: s429(6000), ctx: { maxThrottleWaitMs: 10_000 } });
    const { outcome } = await run(h.ctx);
    expect(outcome).toEqual({ kind: 'stopped' });
    expect(h.stop.reason).toBe('throttled');
    expect(h.stop.error).toBeInstanceOf(ThrottledError);
    expect(h.client.calls).toBe(2);
  });
});

describe('executeTask: stops', () => {
  it('a 402 stops the run on credits, marks the guard out of credits and leaves the task pending', async () => {
    const h = harness([throws(() => new CreditsExhaustedError({ call: call(402) }))]);
    const { outcome } = await run(h.ctx);
    expect(outcome).toEqual({ kind: 'stopped' });
    expect(h.stop.reason).toBe('credits');
    expect(h.stop.error).toBeInstanceOf(CreditsExhaustedError);
    expect(h.guard.stopDetail?.reason).toBe('out-of-credits');
    expect(h.writer.events).toEqual(['attempt OUT_OF_CREDITS']);
  });

  it('a balance at the reserve stops the run on credits before any call is sent', async () => {
    const h = harness([ok]);
    const guard = new CreditGuard({ reserve: 50, maxPerRun: null });
    guard.seed({ total_credits: 100, credits_used: 60, credits_remaining: 40 });
    const { outcome } = await run({ ...h.ctx, guard });
    expect(outcome).toEqual({ kind: 'stopped' });
    expect(h.stop.reason).toBe('credits');
    expect(guard.stopDetail?.reason).toBe('reserve');
    expect(h.client.calls).toBe(0);
  });

  it.each([
    ['a 401', () => new AuthError({ call: call(401) }), 'auth'],
    ['a TLS failure', () => new TlsError({ call: call(null) }, 'self-signed certificate'), 'fatal'],
    ['a bug (not an ApiError)', () => new Error('boom'), 'fatal'],
  ] as const)('%s stops the run (%s) at once, leaving the task pending', async (_what, make, reason) => {
    const h = harness([throws(make)], { then: ok });
    const { outcome } = await run(h.ctx);
    expect(outcome).toEqual({ kind: 'stopped' });
    expect(h.stop.reason).toBe(reason);
    expect(h.client.calls).toBe(1);
    expect(h.writer.events.filter((e) => !e.startsWith('attempt'))).toEqual([]);
  });

  it('a lost lock sends no call and hands the reservation back', async () => {
    const h = harness([ok], { ctx: { holdsLock: () => false } });
    const { outcome } = await run(h.ctx);
    expect(outcome).toEqual({ kind: 'stopped' });
    expect(h.client.calls).toBe(0);
    // Before any counters the guard lets one call at a time: a reservation kept would hold this one forever.
    const next = h.guard.acquire('post-details');
    await vi.runAllTimersAsync();
    expect(await next).not.toBeNull();
  });
});

describe('executeTask: paid answers that cannot be used', () => {
  it('a 200 that is not JSON is retried within paidRetries, each charged, then fails retryable', async () => {
    const h = harness([], { then: notJson, retry: { retries: 4, paidRetries: 1 } });
    const { outcome } = await run(h.ctx);
    expect(outcome).toMatchObject({ kind: 'failed', retryable: true, code: 'INVALID_JSON' });
    expect(h.client.calls).toBe(2);
    expect(h.guard.estimatedAnswers).toBe(2);
  });

  it('paidRetries 0 allows no retry of a paid failure', async () => {
    const h = harness([], { then: notJson, retry: { retries: 4, paidRetries: 0 } });
    await run(h.ctx);
    expect(h.client.calls).toBe(1);
  });

  it('failures without a 200 do not use the paid allowance', async () => {
    const h = harness([reset, notJson, reset, s503, ok], { retry: { retries: 4, paidRetries: 1 } });
    const { outcome } = await run(h.ctx);
    expect(outcome.kind).toBe('done');
    expect(h.client.calls).toBe(5);
  });

  it('a body of the wrong shape is never retried: the task fails for good, its body kept for reprocess', async () => {
    const h = harness([wrongShape], { then: ok });
    const { outcome } = await run(h.ctx);
    expect(outcome).toMatchObject({ kind: 'failed', retryable: false, code: 'SCHEMA' });
    expect(h.client.calls).toBe(1);
    // Its api_calls row goes with the kept body, in one write.
    expect(h.writer.events).toEqual(['rejected SCHEMA after 1']);
  });

  it('an answer whose rows the database refused fails its task for good, counted as an unusable answer', async () => {
    const h = harness([ok], { then: ok });
    h.writer.refusal = 'the database refused this answer\'s rows: no [23514]';
    const { outcome } = await run(h.ctx);
    expect(outcome).toMatchObject({ kind: 'failed', retryable: false, code: 'STORE_REFUSED', message: h.writer.refusal });
    expect(h.client.calls).toBe(1);
    expect(policyOf((outcome as { error: unknown }).error)).toMatchObject({ unusable: true, fails: 'reprocess' });
  });
});

describe('executeTask with the breakers, wired as the run wires them', () => {
  /** Runs tasks one after the other until one is left pending by a stop; returns how many ended. */
  async function runTasks(ctx: ExecutorContext, outage: OutageBreaker, unusable: UnusableAnswerBreaker, n: number): Promise<number> {
    for (let id = 1; id <= n; id++) {
      const { outcome } = await run(ctx, task(id));
      if (outcome.kind === 'stopped') return id - 1;
      outage.record(outcome);
      unusable.record('post-details', outcome);
    }
    return n;
  }

  it('tasks that fail after every retry on a dropped connection trip the outage stop; the next task sends nothing', async () => {
    const h = harness([], { then: reset, retry: { retries: 1 } });
    const unusable = new UnusableAnswerBreaker(h.stop, () => 1);
    const ended = await runTasks(h.ctx, new OutageBreaker(h.stop, 3), unusable, 5);
    expect(ended).toBe(3);
    expect(h.stop.reason).toBe('outage');
    expect((h.stop.error as Error).message).toMatch(/^the API is unreachable: connection reset \[NETWORK\]; 3 tasks in a row failed/);
    expect(h.client.calls).toBe(6);
  });

  it('paid answers of the wrong shape in a row trip the unusable stop, without a retry each', async () => {
    const h = harness([], { then: wrongShape });
    const unusable = new UnusableAnswerBreaker(h.stop, () => 1);
    unusable.setThreshold(2);
    const ended = await runTasks(h.ctx, new OutageBreaker(h.stop, 3), unusable, 5);
    expect(ended).toBe(2);
    expect(h.stop.reason).toBe('unusable');
    expect(h.client.calls).toBe(2);
  });
});
