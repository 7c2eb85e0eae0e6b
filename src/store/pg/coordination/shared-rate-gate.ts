/**
 * One requests-per-minute limit for an account's workers: the server grants evenly spread slots (a per-second limit
 * refuses bursts) and their wait, so no host's clock matters and a late wake-up delays one call only.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { RateGate, type GateWait } from '../../../rate/rate-gate.ts';
import type { RunGate } from '../../run-store.ts';
import { pipelineTransaction } from '../pg-pipeline.ts';
import { withPgClient } from '../transaction.ts';

export const SHARED_RATE_GATE_DEFAULTS = {
  /** The sliding window the limit is for: a minute in production; tests use a few seconds. */
  windowMs: 60_000,
  /**
   * Slots are kept apart by a window this much longer than the limit's: a call starts a little after its slot (the
   * round trip, a late timer), never before; half a second absorbs that and keeps 99% of a minute's limit.
   */
  startSlackMs: 500,
  /** Most slots taken in one round trip (callers waiting at once in one process, and slots taken ahead). */
  maxBatch: 32,
  /** A slot taken ahead may be used this share of the start slack after it begins, then it is dropped (still counted). */
  useByShareOfSlack: 0.2,
  /** The server's clock that slots are scheduled by and kept for; tests pass a fixed time to check the schedule. */
  clockSql: 'clock_timestamp()',
  /** A wait shorter than the progress log's interval needs no line of its own; tests shorten it, not their 429s' pauses. */
  longWaitMs: 5_000,
} as const;

export interface SharedRateGateOptions {
  /** What the limit is for, shared by the workers that share it: the API URL (and account). */
  gate: string;
  /** Calls allowed in any sliding window of `windowMs`. */
  limit: number;
  /** @default SHARED_RATE_GATE_DEFAULTS.windowMs; need not be whole (fractional rates: sharedLimitOf). */
  windowMs?: number;
  startSlackMs?: number;
  /** SQL for "now" in the schedule (the wait before a slot is always counted on the server's real clock). */
  clockSql?: string;
  /** Told once per 429 of a slot that waits over `longWaitMs` within that 429's pause (which worker or run met it). */
  onPauseWait?: (wait: PauseWait) => void;
  /** @default SHARED_RATE_GATE_DEFAULTS.longWaitMs */
  longWaitMs?: number;
}

/** A slot's wait that a pause explains: the wait, the slot's start and when the service asked (µs since the epoch). */
export type PauseWait = { waitMs: number; startUs: number; askedUs: number };

/** A slot granted: when the call may start, in microseconds since the epoch (the server's clock). */
export type RateSlot = { startUs: number };

/** A slot taken ahead: usable from `atMono` until `useByMono` (this process's monotonic clock). */
type Ahead = { slot: RateSlot; atMono: number; useByMono: number };

type Waiter = { resolve(slot: RateSlot): void; reject(err: unknown): void; signal?: AbortSignal };

/** One process's access to a shared rate limit; take() as RateGate's, across every worker of the gate. */
export class SharedRateGate {
  private readonly slotWindowMs: number;
  /** windowMs / limit: consecutive slots are at least this far apart, so the limit is spread, never a burst. */
  private readonly spacingMs: number;
  private readonly maxBatch: number;
  /** The gate's statements, built once for its clock: the same text each round trip, named once by it. */
  private readonly sql: { grant: string; prune: string; pause: string; pauseMarks: string };
  /** The 429 (asked, µs) last told to onPauseWait: one line per 429, not per slot held by it. */
  private toldAskedUs = 0;
  private readonly waiters: Waiter[] = [];
  private fetching = false;
  /** Round trips to the database so far (for the bench and the tests: slots per round trip). */
  roundTripCount = 0;
  /** How long a slot taken ahead stays usable after it begins. */
  private readonly useByMs: number;
  /** Most slots a round trip takes ahead: as many as begin within useByMs, so none waits long to be used. */
  private readonly maxAhead: number;
  /** Slots the next round trip takes ahead (adapts between 0 and maxAhead). */
  private ahead = 0;
  private readonly spare: Ahead[] = [];
  /** Counts pauses begun and written: a round trip under way across one keeps none of its slots ahead. */
  private pauses = 0;
  /** When this process last deleted old slots (performance.now()): once per window is enough. */
  private prunedAt = -Infinity;

  constructor(private readonly pool: pg.Pool, private readonly options: SharedRateGateOptions) {
    if (!Number.isInteger(options.limit) || options.limit < 1) throw new Error(`rate limit must be a positive integer, got ${options.limit}`);
    const d = SHARED_RATE_GATE_DEFAULTS;
    this.slotWindowMs = (options.windowMs ?? d.windowMs) + (options.startSlackMs ?? d.startSlackMs);
    this.spacingMs = (options.windowMs ?? d.windowMs) / options.limit;
    this.maxBatch = Math.min(d.maxBatch, options.limit);
    const clock = options.clockSql ?? d.clockSql;
    this.sql = { grant: grantSql(clock), prune: pruneSql(clock), pause: pauseSql(clock), pauseMarks: pauseMarksSql(clock) };
    this.useByMs = (options.startSlackMs ?? d.startSlackMs) * d.useByShareOfSlack;
    this.maxAhead = Math.min(this.maxBatch - 1, Math.floor(this.useByMs / this.spacingMs));
  }

  /** Resolves when the caller may start one call, with its slot; rejects with the signal's reason when aborted. */
  take(signal?: AbortSignal): Promise<RateSlot> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<RateSlot>((resolve, reject) => {
      const spare = this.takeSpare();
      if (spare) return wake({ resolve, reject, signal }, spare);
      this.waiters.push({ resolve, reject, signal });
      // After the callers of this tick have queued too: they share the round trip.
      if (this.waiters.length === 1) queueMicrotask(() => this.fetch());
    });
  }

  /** The earliest usable slot taken ahead and its wait; those past their use-by are dropped, and fewer taken ahead next. */
  private takeSpare(): { startUs: number; waitMs: number } | undefined {
    const now = performance.now();
    while (this.spare.length > 0 && this.spare[0]!.useByMono < now) {
      this.spare.shift();
      this.ahead = Math.floor(this.ahead / 2);
    }
    const spare = this.spare.shift();
    return spare && { startUs: spare.slot.startUs, waitMs: spare.atMono - now };
  }

  /** Takes slots for the callers waiting, one round trip at a time, until none waits. */
  private fetch(): void {
    if (this.fetching || this.waiters.length === 0) return;
    this.fetching = true;
    // Callers found no slot ahead: take more ahead next time (as many as the limit lets begin within useByMs).
    if (this.maxAhead > 0) this.ahead = Math.min(this.maxAhead, this.ahead * 2 + 1);
    const batch = this.waiters.splice(0, this.maxBatch);
    const ahead = Math.min(this.ahead, this.maxBatch - batch.length);
    const pauses = this.pauses;
    this.grant(batch.length + ahead).then(
      (slots) => {
        const receivedMono = performance.now();
        batch.forEach((w, i) => wake(w, slots[i]!));
        if (slots[0] && slots[0].waitMs > (this.options.longWaitMs ?? SHARED_RATE_GATE_DEFAULTS.longWaitMs)) this.tellPauseWait(slots[0]);
        // Granted before a pause that came meanwhile was written, they may fall within it.
        if (this.pauses !== pauses) return;
        for (const s of slots.slice(batch.length)) {
          const atMono = receivedMono + Math.max(0, s.waitMs);
          this.spare.push({ slot: { startUs: s.startUs }, atMono, useByMono: atMono + this.useByMs });
        }
      },
      (err) => batch.forEach((w) => w.reject(err)),
    ).finally(() => {
      this.fetching = false;
      // Callers that came during the round trip go on the slots it took ahead, then the rest on a new one.
      while (this.waiters.length > 0) {
        const spare = this.takeSpare();
        if (!spare) break;
        wake(this.waiters.shift()!, spare);
      }
      this.fetch();
    });
  }

  /**
   * Holds the gate's workers for `ms` (a 429's Retry-After) by a placeholder slot a spacing before its end, so the next
   * slot starts as the pause ends. Slots granted already still go; overlapping pauses do not add up.
   */
  async pause(ms: number): Promise<void> {
    // The slots taken ahead fall within the pause: none of them goes, nor any a round trip under way brings (counted
    // again once written, for a round trip sent meanwhile, whose slots may come before the pause's).
    this.dropSpares();
    try {
      await withPgClient(this.pool, (client) => pipelineTransaction(client, [
        { text: LOCK, values: [this.options.gate] },
        { text: this.sql.pause, values: [this.options.gate, Math.max(0, ms) - this.spacingMs] },
        { text: DROP_PAUSE_MARKS, values: [this.options.gate] },
        { text: this.sql.pauseMarks, values: [this.options.gate, Math.max(0, ms)] },
      ]));
    } finally {
      this.dropSpares();
    }
  }

  /**
   * Tells onPauseWait of a slot's long wait when the gate's last 429 holds it: the pause ends less than a window before
   * the slot (callers queued behind the pause wait past its end). Best effort: a failed read only leaves the wait unsaid.
   */
  private tellPauseWait(slot: { startUs: number; waitMs: number }): void {
    const tell = this.options.onPauseWait;
    if (!tell) return;
    this.pool.query<{ gate: string; us: string }>(PAUSE_MARKS, [this.options.gate]).then(({ rows }) => {
      const us = (suffix: string) => Number(rows.find((r) => r.gate === this.options.gate + suffix)?.us ?? NaN);
      const [askedUs, untilUs] = [us(ASKED), us(UNTIL)];
      if (!(askedUs > this.toldAskedUs) || !(untilUs >= slot.startUs - this.slotWindowMs * 1000)) return;
      this.toldAskedUs = askedUs;
      tell({ waitMs: slot.waitMs, startUs: slot.startUs, askedUs });
    }, () => undefined);
  }

  private dropSpares(): void {
    this.spare.length = 0;
    this.pauses += 1;
  }

  /**
   * One round trip and one transaction: the advisory lock serialises the gate's workers, so each statement after it
   * reads the slots committed before.
   */
  private async grant(count: number): Promise<Array<{ startUs: number; waitMs: number }>> {
    this.roundTripCount += 1;
    const now = performance.now();
    const prune = now - this.prunedAt >= this.slotWindowMs;
    if (prune) this.prunedAt = now;
    const values = [this.options.gate, this.slotWindowMs, this.options.limit - count, count, this.spacingMs];
    const statements = [
      // One generic plan, not a fresh plan per grant.
      'SET LOCAL plan_cache_mode = force_generic_plan',
      { text: LOCK, values: [this.options.gate] },
      { text: this.sql.grant, values },
      prune ? { text: this.sql.prune, values: [this.options.gate, this.slotWindowMs] } : null,
    ];
    const results = await withPgClient(this.pool, (client) => pipelineTransaction(client, statements));
    return results[2]!.rows.map((r: { start_us: string; wait_ms: number }) => ({ startUs: Number(r.start_us), waitMs: r.wait_ms }));
  }
}

/** The gate's lock ($1: the gate), held to the end of the transaction. */
const LOCK = `SELECT pg_advisory_xact_lock(hashtextextended('netingest.rate_slots:' || $1::text, 0))`;

/**
 * $4 slots of gate $1, $5 ms or more apart, `limit` ($3 + $4) per window of $2 ms. Slot i starts once the slot
 * `limit - 1 - i` back has left the window (the i granted before it share its window). The window is read only if it
 * may hold over $3, counted by ids in three index probes: a gate's slots are written in time order under its lock
 * (pauses too), so its ids run from its oldest slot's to the table's newest (other gates' only loosen the bound).
 */
const grantSql = (clock: string) => `WITH clock AS MATERIALIZED (
  SELECT ${clock} AS t, (SELECT max(started_at) FROM rate_slots WHERE gate = $1::text) AS latest, (SELECT max(id) FROM rate_slots) AS newest
), oldest AS MATERIALIZED (
  SELECT min(id) AS id FROM rate_slots WHERE gate = $1::text AND started_at = (SELECT min(started_at) FROM rate_slots
    WHERE gate = $1::text AND started_at > (SELECT t FROM clock) - $2::float8 * interval '1 millisecond')
), older AS (
  SELECT started_at, $4::integer - row_number() OVER (ORDER BY started_at DESC) AS i
  FROM (SELECT started_at FROM rate_slots WHERE gate = $1::text AND started_at > (SELECT t FROM clock) - $2::float8 * interval '1 millisecond'
      AND (SELECT newest FROM clock) - (SELECT id FROM oldest) >= $3::integer
    ORDER BY started_at DESC OFFSET $3::integer LIMIT $4::integer) o
), granted AS (
  INSERT INTO rate_slots (gate, started_at)
  SELECT $1::text, greatest(clock.t + s.i * ($5::float8 * interval '1 millisecond'), clock.latest + (s.i + 1) * ($5::float8 * interval '1 millisecond'),
    older.started_at + $2::float8 * interval '1 millisecond')
  FROM generate_series(0, $4::integer - 1) AS s(i) CROSS JOIN clock LEFT JOIN older ON older.i = s.i
  -- Ids in the order of the slots' times (see above).
  ORDER BY s.i
  RETURNING started_at
)
SELECT (extract(epoch FROM started_at) * 1000000)::bigint::text AS start_us,
  extract(epoch FROM started_at - clock_timestamp())::float8 * 1000 AS wait_ms
FROM granted ORDER BY started_at`;

/**
 * The pause's placeholder slot of gate $1, $2 ms from `clock` and never before the newest slot: a gate's slots are
 * written in time order (grantSql counts the window's slots by their ids).
 */
const pauseSql = (clock: string) => `INSERT INTO rate_slots (gate, started_at)
  SELECT $1::text, greatest(${clock} + $2::float8 * interval '1 millisecond', (SELECT max(started_at) FROM rate_slots WHERE gate = $1::text))`;

/**
 * A pause's 429 is also kept as two marks of the gate's own (under other gate names, so no grant counts them): when the
 * service asked ($1 || ASKED) and when the hold ends ($1 || UNTIL: $2 ms on, or a pause before it ending later), one pair per
 * gate, for the waits it explains.
 */
const ASKED = ' 429 asked';
const UNTIL = ' 429 until';
const DROP_PAUSE_MARKS = `DELETE FROM rate_slots WHERE gate IN ($1::text || '${ASKED}', $1::text || '${UNTIL}')`;
const pauseMarksSql = (clock: string) => `INSERT INTO rate_slots (gate, started_at)
  VALUES ($1::text || '${ASKED}', ${clock}), ($1::text || '${UNTIL}', greatest(${clock} + $2::float8 * interval '1 millisecond',
    (SELECT max(started_at) FROM rate_slots WHERE gate = $1::text)))`;
const PAUSE_MARKS = `SELECT gate, (extract(epoch FROM started_at) * 1000000)::bigint::text AS us FROM rate_slots
  WHERE gate IN ($1::text || '${ASKED}', $1::text || '${UNTIL}')`;

/** Old slots go, two windows of $2 ms kept; once per window per process, as a DELETE costs as much as a grant. */
const pruneSql = (clock: string) => `DELETE FROM rate_slots WHERE gate = $1::text AND started_at < ${clock} - 2 * ($2::float8 * interval '1 millisecond')`;

/**
 * Resolves a waiter once its slot has begun; one begun already goes at once, as a timer of 0 waits for the next timers
 * phase (1 ms at least), and far under the limit every slot has begun by the time it is given.
 */
function wake(w: Waiter, slot: { startUs: number; waitMs: number }): void {
  if (w.signal?.aborted) return w.reject(w.signal.reason);
  if (slot.waitMs <= 0) return w.resolve({ startUs: slot.startUs });
  sleep(Math.ceil(slot.waitMs), undefined, { signal: w.signal }).then(() => w.resolve({ startUs: slot.startUs }), () => w.reject(w.signal!.reason));
}

const MINUTE_MS = 60_000;

/** Whole calls per window, the window stretched to keep the rate exact: 0.2 a minute is one call per 5 minutes, 1.5 one per 40 s. */
export function sharedLimitOf(requestsPerMinute: number, windowMs: number): { limit: number; windowMs: number } {
  const perWindow = (requestsPerMinute * windowMs) / MINUTE_MS;
  const limit = Math.max(1, Math.floor(perWindow));
  return { limit, windowMs: (windowMs * limit) / perWindow };
}

/** A worker's RunGate: one requestsPerMinute for all the API URL's workers; a 429 pauses it (counted toward its cap on waiting) and the rest. */
export class SharedRunGate implements RunGate {
  private readonly local = new RateGate({ requestsPerMinute: null });
  private shared: SharedRateGate | null = null;
  onWait: ((wait: GateWait) => void) | null = null;

  /** `gate`: the API URL; `windowMs`, the clock and the long wait in `gateOptions` are scaled or fixed by tests. */
  constructor(
    private readonly pool: pg.Pool,
    private readonly gate: string,
    private readonly windowMs: number = SHARED_RATE_GATE_DEFAULTS.windowMs,
    private readonly gateOptions: Pick<SharedRateGateOptions, 'clockSql' | 'longWaitMs'> = {},
  ) {
    // This worker's own 429 holds it here first (every worker holds back too, by the shared pause).
    this.local.onWait = (w) => this.onWait?.({ ...w, shared: true });
  }

  setRequestsPerMinute(requestsPerMinute: number | null): void {
    const onPauseWait = (w: PauseWait) => this.onWait?.({ waitMs: w.waitMs, until: isoOf(w.startUs), askedAt: isoOf(w.askedUs), shared: true });
    this.shared = requestsPerMinute
      ? new SharedRateGate(this.pool, { ...this.gateOptions, gate: this.gate, ...sharedLimitOf(requestsPerMinute, this.windowMs), onPauseWait })
      : null;
  }

  async take(signal?: AbortSignal): Promise<void> {
    await this.local.take(signal);
    await this.shared?.take(signal);
  }

  pause(ms: number): void {
    this.local.pause(ms);
    // Best effort: a failed write leaves the other workers to meet the 429 themselves.
    this.shared?.pause(ms).catch(() => undefined);
  }

  get totalPausedMs(): number {
    return this.local.totalPausedMs;
  }
}

const isoOf = (us: number) => new Date(Math.floor(us / 1000)).toISOString();
