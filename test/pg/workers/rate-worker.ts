/**
 * A test worker under the shared rate limit: `lanes` callers take slots back to back (as a run's concurrent
 * calls do, with no time spent on the call itself, the hardest case for the limit) until the test's end time,
 * then print the slots they got and the round trips it took.
 */
import pg from 'pg';
import { SharedRateGate } from '../../../src/store/pg/coordination/shared-rate-gate.ts';

const settings = JSON.parse(process.argv[2]!) as { url: string; gate: string; limit: number; windowMs: number; startSlackMs: number; lanes: number };
const pool = new pg.Pool({ connectionString: settings.url, max: 2 });
const gate = new SharedRateGate(pool, { gate: settings.gate, limit: settings.limit, windowMs: settings.windowMs, startSlackMs: settings.startSlackMs });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

process.stdout.write('ready\n');
let endUs: number | null = null;
while (endUs === null) {
  const { rows } = await pool.query(`SELECT end_us::text FROM go`);
  if (rows.length > 0) endUs = Number(rows[0].end_us);
  else await sleep(20);
}
const slots: number[] = [];
await Promise.all(
  Array.from({ length: settings.lanes }, async () => {
    for (;;) {
      const slot = await gate.take();
      slots.push(slot.startUs);
      if (slot.startUs >= endUs) return;
    }
  }),
);
await pool.end();
process.stdout.write(`${JSON.stringify({ slots, roundTrips: gate.roundTripCount })}\n`);
