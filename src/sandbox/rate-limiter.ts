/** One sliding window: at most `limit` accepted requests per token in any `windowMs`. */
export interface RateWindow { limit: number; windowMs: number }

/** Why a request was refused: the window it did not fit and how long until that window admits one. */
export interface RateRefusal { window: RateWindow; waitMs: number }

/** Sliding windows per token; a request is recorded in every window only if it fits all, so a refusal uses up none. */
export class RateLimiter {
  /** Each token's accepted request times, oldest first, from `head` on (earlier slots are spent). */
  private readonly histories = new Map<string, { times: number[]; head: number }>();
  private readonly longestMs: number;

  constructor(private readonly windows: readonly RateWindow[]) {
    this.longestMs = Math.max(0, ...windows.map((w) => w.windowMs));
  }

  /** Records the request and returns null when it fits every window; otherwise the refusal (nothing recorded). */
  tryAcquire(token: string, nowMs: number): RateRefusal | null {
    let h = this.histories.get(token);
    if (!h) this.histories.set(token, (h = { times: [], head: 0 }));
    const { times } = h;
    while (h.head < times.length && (times[h.head] as number) <= nowMs - this.longestMs) h.head++;
    // Compact now and then rather than shifting on every request: a minute window may hold thousands.
    if (h.head > 1024 && h.head * 2 > times.length) {
      times.splice(0, h.head);
      h.head = 0;
    }
    // Every full window is looked at: the refusal names the one that admits a call last, or a Retry-After by
    // the second window would send the client back into a full minute window.
    let refusal: RateRefusal | null = null;
    for (const window of this.windows) {
      const first = firstAfter(times, h.head, nowMs - window.windowMs);
      const inWindow = times.length - first;
      if (inWindow >= window.limit) {
        // The request fits once enough of the oldest ones in the window have left it.
        const oldestToLeave = times[first + inWindow - Math.ceil(window.limit)] ?? times[first] ?? nowMs;
        const waitMs = Math.max(0, oldestToLeave + window.windowMs - nowMs);
        if (refusal === null || waitMs > refusal.waitMs) refusal = { window, waitMs };
      }
    }
    if (refusal === null) times.push(nowMs);
    return refusal;
  }
}

/** Index of the first time after `after` in the sorted `times[from..]` (times.length when none). */
function firstAfter(times: readonly number[], from: number, after: number): number {
  let lo = from;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((times[mid] as number) <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
