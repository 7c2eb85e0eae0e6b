import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { SharedRateGate, SharedRunGate } from '../../src/store/pg/coordination/shared-rate-gate.ts';
import { RateGate } from '../../src/rate/rate-gate.ts';
import { coordinationTestBed, startWorker, waitFor } from './coordination-fixtures.ts';
import { pgClusterUrl, pgSkipReason } from './use-pg.ts';

const bed = coordinationTestBed();
const workers = bed.workers;

async function rateDatabase(): Promise<{ url: string; pool: pg.Pool }> {
  const { url, pool } = await bed.database('rate');
  return { url, pool };
}

/** The shortest time, in µs, over which `limit + 1` consecutive slots went: under the window means a window held too many. */
function shortestSpan(sortedUs: number[], limit: number): number {
  let shortest = Infinity;
  for (let i = 0; i + limit < sortedUs.length; i++) shortest = Math.min(shortest, sortedUs[i + limit]! - sortedUs[i]!);
  return shortest;
}

/** The mean time, in µs, that `limit` calls took to go, across the run: the window when the limit is fully used. */
function meanSpan(sortedUs: number[], limit: number): number {
  let total = 0;
  let n = 0;
  for (let i = 0; i + limit < sortedUs.length; i++, n++) total += sortedUs[i + limit]! - sortedUs[i]!;
  return total / n;
}

describe.skipIf(!pgClusterUrl)(`the shared rate limit on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('grants a batch of slots in one round trip, each a full window after the slot `limit` places back', async () => {
    const { pool } = await rateDatabase();
    const windowMs = 1_000;
    const limit = 5;
    const startSlackMs = 50;
    // Scheduled by a clock stopped in 2000: no take() waits, so the slots' times are the admission arithmetic alone.
    const clockSql = `'2000-01-01 00:00:00+00'::timestamptz`;
    const gate = new SharedRateGate(pool, { gate: 'https://api.example/a', limit, windowMs, startSlackMs, clockSql });
    const other = new SharedRateGate(pool, { gate: 'https://api.example/b', limit, windowMs, startSlackMs, clockSql });
    const slots = (await Promise.all(Array.from({ length: 12 }, () => gate.take()))).map((s) => s.startUs).sort((a, b) => a - b);
    // At most `limit` slots per round trip: 12 callers at once take three.
    expect(gate.roundTripCount).toBe(3);
    const windowUs = (windowMs + startSlackMs) * 1_000;
    for (let i = limit; i < slots.length; i++) expect(slots[i]! - slots[i - limit]!).toBeGreaterThanOrEqual(windowUs);
    // Another gate (another account) is not held back by this one's 12 slots: its `limit` slots all go in the first
    // window, before this gate's slot `limit`. Held back, they would come after this gate's last slot.
    const others = (await Promise.all(Array.from({ length: limit }, () => other.take()))).map((s) => s.startUs);
    expect(Math.max(...others)).toBeLessThan(slots[limit]!);
    expect(Math.min(...others)).toBe(slots[0]);
  });

  it('holds a rate under one a minute, or not whole, exactly: 0.2 a minute is a call per five minutes, as on SQLite', { timeout: 30_000 }, async () => {
    const { pool } = await rateDatabase();
    // The schedule is made by a clock stopped in 2000: every slot is long past by the server's real clock, so no
    // take() waits, and the slots' spacing is the admission arithmetic alone.
    const frozen = `'2000-01-01 00:00:00+00'::timestamptz`;
    const slackMs = 500;
    const cases: Array<[requestsPerMinute: number, gapMs: number]> = [
      [0.2, 300_000 + slackMs],
      [1.5, 40_000 + slackMs],
      [90.5, 60_000 / 90.5],
    ];
    for (const [requestsPerMinute, gapMs] of cases) {
      const name = `https://api.example/rpm-${requestsPerMinute}`;
      const gate = new SharedRunGate(pool, name, 60_000, { clockSql: frozen });
      gate.setRequestsPerMinute(requestsPerMinute);
      for (let i = 0; i < 3; i++) await gate.take();
      const { rows } = await pool.query<{ ms: number }>(
        `SELECT extract(epoch FROM started_at - ${frozen})::float8 * 1000 AS ms FROM rate_slots WHERE gate = $1 ORDER BY started_at`,
        [name],
      );
      const gaps = rows.slice(1).map((r, i) => r.ms - rows[i]!.ms);
      expect(gaps, `${requestsPerMinute} a minute`).toHaveLength(2);
      for (const gap of gaps) expect(gap, `${requestsPerMinute} a minute`).toBeCloseTo(gapMs, 0);
      // SQLite's gate spaces calls by the same rate (and a 2% margin).
      expect(new RateGate({ requestsPerMinute }).intervalMs).toBeCloseTo((60_000 / requestsPerMinute) * 1.02, 6);
    }
  });

  it('two workers granting at once wait for each other: the lock and the slots it guards are one transaction', async () => {
    const { pool } = await rateDatabase();
    // A slow server: each slot takes 100 ms to write, so a grant that did not hold the lock to its end (the lock
    // let go before the slots are in) would let the other read the slots without them and grant the same ones.
    await pool.query(`CREATE FUNCTION slow_slot() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.1); RETURN NEW; END $$`);
    await pool.query(`CREATE TRIGGER slow_slots BEFORE INSERT ON rate_slots FOR EACH ROW EXECUTE FUNCTION slow_slot()`);
    // Scheduled by a clock stopped in 2000: every slot is long past, so no take() waits for it.
    const frozen = `'2000-01-01 00:00:00+00'::timestamptz`;
    const options = { gate: 'https://api.example/together', limit: 3, windowMs: 60_000, startSlackMs: 500, clockSql: frozen };
    const [a, b] = [new SharedRateGate(pool, options), new SharedRateGate(pool, options)];
    await Promise.all([a, b].flatMap((gate) => Array.from({ length: options.limit }, () => gate.take())));
    expect([a.roundTripCount, b.roundTripCount]).toEqual([1, 1]);
    const { rows } = await pool.query<{ us: string }>(
      `SELECT (extract(epoch FROM started_at) * 1000000)::bigint::text AS us FROM rate_slots WHERE gate = $1 ORDER BY started_at`, [options.gate]);
    expect(rows).toHaveLength(2 * options.limit);
    expect(shortestSpan(rows.map((r) => Number(r.us)), options.limit)).toBeGreaterThanOrEqual((options.windowMs + options.startSlackMs) * 1_000);
  });

  it('a pause (429) holds every worker of the gate until it ends', async () => {
    const { pool } = await rateDatabase();
    // Scheduled by a clock stopped in 2000: no take() waits, so the slots' times are the pause's arithmetic alone.
    const frozenUs = Date.UTC(2000, 0, 1) * 1_000;
    const options = { gate: 'https://api.example', limit: 50, windowMs: 1_000, startSlackMs: 10, clockSql: `'2000-01-01 00:00:00+00'::timestamptz` };
    const one = new SharedRateGate(pool, options);
    const other = new SharedRateGate(pool, options);
    expect((await one.take()).startUs).toBe(frozenUs);
    await one.pause(1_500);
    const [a, b] = await Promise.all([other.take(), one.take()]);
    // The first as the pause ends, and only until then: the next a spacing (window / limit) on, not a window later.
    expect([a.startUs, b.startUs].sort((x, y) => x - y)).toEqual([frozenUs + 1_500_000, frozenUs + 1_520_000]);
  });

  it('a worker held by another\'s 429 is told once how long and since when; a short hold is not told', async () => {
    const { pool } = await rateDatabase();
    const options = { gate: 'https://api.example/told', limit: 600_000, windowMs: 60_000 };
    const told: Array<{ waitMs: number; startUs: number; askedUs: number }> = [];
    const one = new SharedRateGate(pool, options);
    const worker = () => new SharedRateGate(pool, { ...options, onPauseWait: (w) => told.push(w) });
    await one.pause(2_000);
    // Under the 5 s a wait must last to be said (a progress line's interval).
    await worker().take();
    expect(told).toEqual([]);
    const askedAt = Date.now();
    await one.pause(60_000);
    // A worker (or run) starting now, two calls waiting.
    const later = worker();
    const stop = new AbortController();
    const held = [later.take(stop.signal), later.take(stop.signal)].map((t) => t.catch(() => 'aborted'));
    await waitFor(async () => told.length > 0, 5_000, 'the wait told');
    stop.abort();
    expect(await Promise.all(held)).toEqual(['aborted', 'aborted']);
    // Once for the 429, not per caller; asked then, and the slot a minute on.
    expect(told).toHaveLength(1);
    expect(Math.abs(told[0]!.askedUs / 1000 - askedAt)).toBeLessThan(1_000);
    expect(Math.abs(told[0]!.startUs / 1000 - (askedAt + 60_000))).toBeLessThan(1_000);
    expect(told[0]!.waitMs).toBeGreaterThan(55_000);
  });

  it('a pause shorter than the window holds only until it ends, with one row however high the limit', async () => {
    const { pool } = await rateDatabase();
    // 600,000 a minute (the tests' fast rate): a pause must not write a row per call the limit allows. Scheduled by a
    // clock stopped in 2000: no take() waits, so the slots' times are the pause's arithmetic alone.
    const frozenUs = Date.UTC(2000, 0, 1) * 1_000;
    const options = { gate: 'https://api.example/short', limit: 600_000, windowMs: 60_000, clockSql: `'2000-01-01 00:00:00+00'::timestamptz` };
    const one = new SharedRateGate(pool, options);
    const other = new SharedRateGate(pool, options);
    expect((await one.take()).startUs).toBe(frozenUs);
    const rows = async () => Number((await pool.query('SELECT count(*) AS n FROM rate_slots WHERE gate = $1', [options.gate])).rows[0].n);
    const marks = async () => Number((await pool.query(`SELECT count(*) AS n FROM rate_slots WHERE gate LIKE $1 || ' 429 %'`, [options.gate])).rows[0].n);
    const rowsBefore = await rows();
    await one.pause(300);
    // One row (the slots before it: the call's, and any taken ahead with it), and the 429's two marks (asked, until).
    expect(await rows()).toBe(rowsBefore + 1);
    expect(await marks()).toBe(2);
    const [a, b] = await Promise.all([other.take(), one.take()]);
    // The first as the pause ends, not a window (a minute) after the last call: the 429 asked for 300 ms. The other
    // comes after the slots the first round trip took (4 at most, ahead), each a spacing (0.1 ms) on.
    expect(Math.min(a.startUs, b.startUs)).toBe(frozenUs + 300_000);
    expect(Math.max(a.startUs, b.startUs)).toBeLessThanOrEqual(frozenUs + 300_000 + 4 * 100);
  });

  it('a grant far under the limit reads a few of the gate\'s slots, not every one it holds', async () => {
    const { url, pool } = await rateDatabase();
    // The gate's statements on one connection, whose table statistics are sent on demand (PostgreSQL 15+). They are
    // planned once, at its first grant, while the table is small: as in a run, where the table grows afterwards.
    const own = new pg.Pool({ connectionString: url, max: 1 });
    try {
      const options = { limit: 600_000, windowMs: 60_000 };
      await new SharedRateGate(own, { ...options, gate: 'https://api.example/first' }).take();
      // 20,000 slots of the last minute, far under 600,000 a minute.
      const gate = 'https://api.example/many';
      await pool.query(`INSERT INTO rate_slots (gate, started_at)
        SELECT $1, clock_timestamp() - interval '30 seconds' + g * interval '1 millisecond' FROM generate_series(1, 20000) g`, [gate]);
      const fetched = async () => Number((await pool.query(`SELECT coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) AS n
        FROM pg_stat_user_tables WHERE relname = 'rate_slots'`)).rows[0].n);
      const flushed = () => own.query('SELECT pg_stat_force_next_flush()');
      const shared = new SharedRateGate(own, { ...options, gate });
      // Its first round trip also deletes the slots older than two windows (once a window): not the grant's reads.
      await shared.take();
      await shared.take();
      await flushed();
      const before = { rows: await fetched(), trips: shared.roundTripCount };
      await shared.take();
      await flushed();
      expect(shared.roundTripCount).toBe(before.trips + 1);
      // The newest slot and the window's oldest (max(id) - min(id) over the gate read all 20,000 from the table).
      expect(await fetched() - before.rows).toBeLessThan(100);
    } finally {
      await own.end();
    }
  });

  it('a pause behind the newest slot still counts in the window, so the limit holds after it', async () => {
    const { pool } = await rateDatabase();
    // Scheduled by a clock stopped in 2000: no take() waits, and the pause's end is before the slots granted.
    const options = { gate: 'https://api.example/behind', limit: 5, windowMs: 1_000, startSlackMs: 50, clockSql: `'2000-01-01 00:00:00+00'::timestamptz` };
    const gate = new SharedRateGate(pool, options);
    await Promise.all(Array.from({ length: 4 }, () => gate.take()));
    // A pause ending before the slots already granted: its placeholder goes at the newest, not before them, so the
    // window's slots stay in the order of their ids (grants count the window by them). Before them, it was the
    // window's oldest slot with its newest id, and the next grant found room for 4 more within the window.
    await gate.pause(0);
    await Promise.all(Array.from({ length: 4 }, () => gate.take()));
    const { rows } = await pool.query<{ us: string }>(`SELECT (extract(epoch FROM started_at) * 1000000)::bigint::text AS us FROM rate_slots
      WHERE gate = $1 ORDER BY started_at`, [options.gate]);
    expect(rows).toHaveLength(9);
    expect(shortestSpan(rows.map((r) => Number(r.us)), options.limit)).toBeGreaterThanOrEqual((options.windowMs + options.startSlackMs) * 1_000);
  });

  it('slots taken ahead of callers are used without a round trip, and the limit still holds in every window', async () => {
    const { pool } = await rateDatabase();
    // 300 per second with a 100 ms start slack: a slot taken ahead may be used 20 ms after it begins, so a round
    // trip takes up to 6 ahead (one per 3.3 ms spacing). Two gates (two workers) of 4 callers each, back to back.
    const limit = 300;
    const windowMs = 1_000;
    const options = { gate: 'https://api.example/ahead', limit, windowMs, startSlackMs: 100 };
    const gates = [new SharedRateGate(pool, options), new SharedRateGate(pool, options)];
    const endAt = performance.now() + 2_500;
    const used: number[] = [];
    await Promise.all(gates.flatMap((gate) => Array.from({ length: 4 }, async () => {
      while (performance.now() < endAt) {
        used.push((await gate.take()).startUs);
        // The call itself: a turn of the event loop.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    })));
    used.sort((a, b) => a - b);
    const roundTrips = gates[0]!.roundTripCount + gates[1]!.roundTripCount;
    expect(roundTrips).toBeLessThan(used.length / 2);
    // Every slot used, and every slot dropped unused (rows), within the limit in any window of the slot window.
    expect(shortestSpan(used, limit)).toBeGreaterThanOrEqual(windowMs * 1_000);
    const { rows } = await pool.query<{ us: string }>(`SELECT (extract(epoch FROM started_at) * 1000000)::bigint::text AS us FROM rate_slots
      WHERE gate = $1 ORDER BY started_at`, [options.gate]);
    expect(shortestSpan(rows.map((r) => Number(r.us)), limit)).toBeGreaterThanOrEqual((windowMs + 100) * 1_000);
  });

  it('a round trip under way when a pause comes keeps none of its slots ahead: the next take asks again, after the pause', async () => {
    const { pool } = await rateDatabase();
    const gate = new SharedRateGate(pool, { gate: 'https://api.example/pause-in-flight', limit: 2_000, windowMs: 1_000, startSlackMs: 100 });
    // The first take's round trip also takes a slot ahead; the pause is asked while it is under way.
    const first = gate.take();
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    expect(gate.roundTripCount).toBe(1);
    const nowUs = async () => Number((await pool.query<{ t: string }>(`SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text AS t`)).rows[0]!.t);
    const pausedAt = await nowUs();
    await Promise.all([first, gate.pause(200)]);
    const next = await gate.take();
    // Before, the slot taken ahead was kept and used at once, inside the pause.
    expect(gate.roundTripCount).toBe(2);
    expect(next.startUs).toBeGreaterThanOrEqual(pausedAt + 200_000);
  });

  it('four worker processes together never exceed the limit in any sliding window, and reach 93% of it', async () => {
    const { url, pool } = await rateDatabase();
    await pool.query(`CREATE TABLE go (end_us bigint NOT NULL)`);
    const limit = 200;
    const windowMs = 2_000;
    const runMs = 5_000;
    // 200 calls per 2 s: the rate of 6,000 a minute, in a window short enough for a test. A 20 ms start slack (of
    // the 2 s window) as the default 500 ms is of a minute.
    const settings = { url, gate: 'https://api.example', limit, windowMs, startSlackMs: 20, lanes: 4 };
    const started = Array.from({ length: 4 }, () => startWorker('rate-worker.ts', settings));
    workers.push(...started);
    await waitFor(async () => started.every((w) => w.stdout().includes('ready') || w.child.exitCode !== null), 60_000, 'workers to start');
    await pool.query(`INSERT INTO go SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint + $1 * 1000`, [runMs]);
    const reports: Array<{ slots: number[]; roundTrips: number }> = [];
    for (const w of started) {
      expect(await w.exited, w.stderr()).toBe(0);
      reports.push(JSON.parse(w.stdout().split('\n').filter(Boolean).at(-1)!));
    }
    const slots = reports.flatMap((r) => r.slots).sort((a, b) => a - b);
    // Every worker took part, with fewer round trips than slots.
    for (const r of reports) {
      expect(r.slots.length).toBeGreaterThan(limit / 4);
      expect(r.roundTrips).toBeLessThan(r.slots.length);
    }
    // Exact, by the server's clock: no `limit + 1` slots within one window.
    expect(shortestSpan(slots, limit)).toBeGreaterThanOrEqual(windowMs * 1_000);
    // Spread, not a burst: a tenth of the window never holds more than a tenth of the limit (+1), as a service
    // limiting per second too would demand (the four processes want 4x the limit).
    expect(shortestSpan(slots, limit / 10)).toBeGreaterThanOrEqual((windowMs / 10) * 1_000 - (windowMs / limit) * 1_000);
    // The rate reached: `limit` calls per window, against how long `limit` calls took on average. 0.93, not the
    // bench's 0.99: at load 10-12 a process woken late misses its slot's start slack and the slot is dropped, still
    // counted (0.954 in one such CI run). What it guards: slots dropped unused stay few; the bench measures 0.99.
    const reached = (windowMs * 1_000) / meanSpan(slots, limit);
    expect(reached).toBeGreaterThanOrEqual(0.93);
    // And over the run: 90% of the slots the limit allows from the first slot to the end. From the first, not from the
    // go: at the suite's load the four processes may wake to it late (428 of 500 once, 0.7 s lost before any take).
    const ranMs = (slots.at(-1)! - slots[0]!) / 1_000;
    expect(ranMs).toBeGreaterThan(runMs / 2);
    expect(slots.length).toBeGreaterThan(limit * (ranMs / windowMs) * 0.9);
  }, 90_000);
});
