/** The rate gate on fake timers: spacing, sliding windows, pauses and aborts, without a server or a clock. */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RATE_GATE_DEFAULTS, RateGate } from '../../src/rate/rate-gate.ts';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Lets `n` callers take the gate at once and returns the fake instant each one was let through. */
async function starts(gate: RateGate, n: number, signal?: AbortSignal): Promise<number[]> {
  const at: number[] = [];
  const all = Array.from({ length: n }, () => gate.take(signal).then(() => at.push(performance.now())));
  await vi.runAllTimersAsync();
  await Promise.all(all);
  return at;
}

/** The most starts in any window of `windowMs` (closed at its start, open at its end, as a server counts). */
function busiestWindow(at: number[], windowMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; i < at.length; i++) {
    while (at[i]! - at[j]! >= windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('RateGate', () => {
  it('spaces starts a full interval plus the safety margin apart, so no sliding minute exceeds the limit', async () => {
    const gate = new RateGate({ requestsPerMinute: 120 });
    const interval = (60_000 / 120) * (1 + RATE_GATE_DEFAULTS.safetyMargin);
    expect(gate.intervalMs).toBeCloseTo(interval);
    const at = await starts(gate, 300);
    expect(at[0]).toBe(0);
    for (let i = 1; i < at.length; i++) expect(at[i]! - at[i - 1]!).toBeGreaterThanOrEqual(interval - RATE_GATE_DEFAULTS.lateCreditMs);
    expect(busiestWindow(at, 60_000)).toBeLessThanOrEqual(120);
    // ...and gives up no more than the margin: 300 starts take about 300 intervals.
    expect(at.at(-1)).toBeLessThanOrEqual(299 * interval + 1);
  });

  it('lets every call through at once when there is no limit', async () => {
    const at = await starts(new RateGate({ requestsPerMinute: null }), 50);
    expect(new Set(at)).toEqual(new Set([0]));
  });

  it('a pause holds every caller until it ends; overlapping pauses do not add up', async () => {
    const gate = new RateGate({ requestsPerMinute: null });
    gate.pause(5_000);
    gate.pause(3_000); // inside the first: changes nothing
    expect(gate.totalPausedMs).toBe(5_000);
    const at = await starts(gate, 3);
    expect(at).toEqual([5_000, 5_000, 5_000]);
    gate.pause(-10); // a negative Retry-After is no pause
    expect(gate.totalPausedMs).toBe(5_000);
  });

  it('tells a pause that holds a call over 5 s once, with how long, until when and when it was asked; shorter ones not', async () => {
    const gate = new RateGate({ requestsPerMinute: null });
    const told: Array<{ waitMs: number; until: string; askedAt: string; shared: boolean }> = [];
    gate.onWait = (w) => told.push(w);
    gate.pause(4_000);
    await starts(gate, 2);
    expect(told).toEqual([]);
    const askedAt = Date.now();
    gate.pause(30_000);
    await starts(gate, 3);
    expect(told).toHaveLength(1);
    expect(told[0]!.waitMs).toBe(30_000);
    expect(told[0]!.shared).toBe(false);
    expect(Date.parse(told[0]!.askedAt)).toBeGreaterThanOrEqual(askedAt);
    expect(Date.parse(told[0]!.until) - Date.parse(told[0]!.askedAt)).toBeGreaterThanOrEqual(29_000);
    // The next 429's pause is told again.
    gate.pause(10_000);
    await starts(gate, 1);
    expect(told).toHaveLength(2);
  });

  it('a change of rate keeps the larger spacing across the change, then the new one', async () => {
    const gate = new RateGate({ requestsPerMinute: 60, safetyMargin: 0 });
    await starts(gate, 1);
    gate.setRequestsPerMinute(600);
    const at = await starts(gate, 3);
    expect(at).toEqual([1_000, 1_100, 1_200]);
  });

  it('a waiter whose signal aborts is rejected with the reason, and the ones behind it go on', async () => {
    const gate = new RateGate({ requestsPerMinute: 60, safetyMargin: 0 });
    await starts(gate, 1);
    const controller = new AbortController();
    const aborted = gate.take(controller.signal);
    const after = gate.take();
    const rejected = expect(aborted).rejects.toBe('stop');
    await vi.advanceTimersByTimeAsync(100);
    controller.abort('stop');
    await rejected;
    await vi.runAllTimersAsync();
    await after;
    expect(performance.now()).toBe(1_000);
  });
});
