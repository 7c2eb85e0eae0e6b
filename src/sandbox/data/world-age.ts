/**
 * The world `days` after the seed's, as the ageDays option describes it, each change drawn by a hash of seed, day and
 * record. Day 0 is the seed's world to the byte, so every other use of the sandbox is unchanged.
 */
import { hashFraction } from '../prng.ts';

/** The data's fixed "today": dates are relative to it, not to the clock, so a request gets the same answer any day. */
export const REFERENCE_DATE_MS = Date.UTC(2025, 5, 30); // 2025-06-30T00:00:00Z

const DAY_MS = 86_400_000;

/** Midnight UTC `daysAgo` days before the reference date, in ms. */
export function daysBefore(daysAgo: number): number {
  return REFERENCE_DATE_MS - daysAgo * DAY_MS;
}

/** `YYYY-MM-DD` of a UTC time. */
export const isoDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** `DD-MM-YYYY` of a UTC time, the form of post timestamps. */
export const dayMonthYear = (ms: number): string => isoDate(ms).split('-').reverse().join('-');

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
    const growthDays = this.draws(`grow:${key}`).filter((draw) => draw < GROWTH_CHANCE);
    return growthDays.reduce((out, draw) => Math.round(out * (1 + 0.01 + (draw / GROWTH_CHANCE) * 0.07)), value);
  }

  /** `value` plus what the record `key` gained per day: up to 5% of it and a few more. */
  gained(value: number, key: string): number {
    return this.draws(`gain:${key}`).reduce((out, draw) => out + Math.floor(out * 0.05 * draw) + Math.floor(draw * 4), value);
  }

  /** Whether the entry `key` of a list has left it by now (it never comes back). */
  left(key: string): boolean {
    // Day by day, not draws(): it stops on the day the entry leaves, which over years (3650 days) is 12 times faster.
    for (let day = 1; day <= this.days; day++) {
      if (hashFraction(this.seed, `age:leave:${key}:${day}`) < LEAVE_CHANCE) return true;
    }
    return false;
  }

  /** How many new entries the list `key` has gained by now. */
  newEntries(key: string): number {
    return this.draws(`new:${key}`).filter((draw) => draw < NEW_JOB_CHANCE).length;
  }

  /** One draw in [0, 1) per day since the seed's world, of day 1 first, fixed by seed, `what` and day. */
  private draws(what: string): number[] {
    return Array.from({ length: this.days }, (_, i) => hashFraction(this.seed, `age:${what}:${i + 1}`));
  }
}

/** What each generator is made from: the seed, the share of inputs with no data, and the world's age. */
export abstract class SeededData {
  constructor(
    protected readonly seed: number,
    protected readonly notFoundRate: number,
    protected readonly age: WorldAge,
  ) {}
}
