/** Sliding 1-second window per token: at most `limit` accepted requests in any 1000 ms. */
export class RateLimiter {
  /** Accepted request times per token, oldest first; a ring would be faster but the window is small. */
  private readonly windows = new Map<string, number[]>();

  constructor(private readonly limit: number) {}

  /** Records the request and returns true when it fits in the window; false (not recorded) when over. */
  tryAcquire(token: string, nowMs: number): boolean {
    let times = this.windows.get(token);
    if (!times) {
      times = [];
      this.windows.set(token, times);
    }
    let drop = 0;
    while (drop < times.length && (times[drop] as number) <= nowMs - 1000) drop++;
    if (drop > 0) times.splice(0, drop);
    if (times.length >= this.limit) return false;
    times.push(nowMs);
    return true;
  }
}
