import { describe, expect, it } from 'vitest';
import { freshSince } from '../../src/runner/plan-into-ledger.ts';

const NOW = Date.parse('2026-11-23T03:00:00.000Z');
const HOUR = 3_600_000;

describe('freshSince', () => {
  it('takes a tenth of refreshAfterDays off, so answers of a run N nights ago are due when the schedule comes round', () => {
    // 2 days less 4.8 hours: an answer from 03:20 two nights ago (2 days less 20 minutes) is due.
    expect(freshSince(2, NOW)).toBe(new Date(NOW - 48 * HOUR + 4.8 * HOUR).toISOString());
    expect('2026-11-21T03:20:00.000Z' < freshSince(2, NOW)).toBe(true);
    // ...and one from last night is not.
    expect('2026-11-22T03:20:00.000Z' < freshSince(2, NOW)).toBe(false);
  });

  it('caps the tolerance at 12 hours, and 0 days makes everything due', () => {
    expect(freshSince(30, NOW)).toBe(new Date(NOW - 30 * 24 * HOUR + 12 * HOUR).toISOString());
    expect(freshSince(0, NOW)).toBe(new Date(NOW).toISOString());
  });

  it('keeps a search-jobs answer (0.5 days) fresh for a resume hours later the same night', () => {
    expect('2026-11-23T00:30:00.000Z' < freshSince(0.5, NOW)).toBe(false);
    expect('2026-11-22T03:10:00.000Z' < freshSince(0.5, NOW)).toBe(true);
  });
});
