/**
 * The world `days` after the seed's: what a nightly client sees change. Each day, by a hash of seed, day and record,
 * some companies grow, posts gain reactions and comments, lookalikes and job results leave their lists and others
 * come in. Day 0 is the seed's world to the byte, so every other use of the sandbox is unchanged.
 */
import { hashFraction } from '../prng.ts';

/** Chance, per record and day, that a company grows (staff and followers), in 0..1. */
const GROWTH_CHANCE = 0.2;
/** Chance, per list entry and day, that a lookalike or a job result leaves its list for good. */
const LEAVE_CHANCE = 0.04;
/** Chance, per job search and day, that one new job is posted into its results. */
const NEW_JOB_CHANCE = 0.5;

export class WorldAge {
  constructor(
    private readonly seed: number,
    /** Days after the seed's world; 0 is that world itself. */
    readonly days: number,
  ) {}

  /** `value` grown by 1..8% on each day the record `key` grows (none on day 0). */
  grown(value: number, key: string): number {
    let out = value;
    for (let day = 1; day <= this.days; day++) {
      const draw = hashFraction(this.seed, `age:grow:${key}:${day}`);
      if (draw < GROWTH_CHANCE) out = Math.round(out * (1 + 0.01 + (draw / GROWTH_CHANCE) * 0.07));
    }
    return out;
  }

  /** `value` plus what the record `key` gained per day: up to 5% of it and a few more. */
  gained(value: number, key: string): number {
    let out = value;
    for (let day = 1; day <= this.days; day++) {
      const draw = hashFraction(this.seed, `age:gain:${key}:${day}`);
      out += Math.floor(out * 0.05 * draw) + Math.floor(draw * 4);
    }
    return out;
  }

  /** Whether the entry `key` of a list has left it by now (it never comes back). */
  left(key: string): boolean {
    for (let day = 1; day <= this.days; day++) {
      if (hashFraction(this.seed, `age:leave:${key}:${day}`) < LEAVE_CHANCE) return true;
    }
    return false;
  }

  /** How many new entries the list `key` has gained by now. */
  newEntries(key: string): number {
    let n = 0;
    for (let day = 1; day <= this.days; day++) if (hashFraction(this.seed, `age:new:${key}:${day}`) < NEW_JOB_CHANCE) n++;
    return n;
  }
}
