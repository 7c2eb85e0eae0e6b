/**
 * A post's `timestamp` as an ISO day. `NN-NN-YYYY` does not say which part is the day: a part over 12 is; an ambiguous
 * value takes the order the dataset's posts show, if only one, else stays NULL (a wrong date is worse than none).
 */
// The migration that filled posted_on for existing rows applies the same patterns in SQL (GLOB).
const NN_NN_YYYY = /^(\d{2})-(\d{2})-(\d{4})$/;
const ISO_DAY = /^(\d{4})-(\d{2})-(\d{2})(?:[T ].*)?$/;

/** Which `NN-NN` order a dataset's posts use, as far as they show it. */
export type DayOrder = 'dmy' | 'mdy';

/** One raw value read: its day where the value alone decides it, and what it says of the order. */
export interface PostDateReading {
  iso: string | null;
  /** The order this value proves (its first or its second part is over 12). */
  proves: DayOrder | null;
  /** Both orders give a real, different day: the dataset's order decides. */
  ambiguous: boolean;
}

export function readPostDate(raw: unknown): PostDateReading {
  const none = { iso: null, proves: null, ambiguous: false };
  if (typeof raw !== 'string') return none;
  const text = raw.trim();
  const iso = ISO_DAY.exec(text);
  if (iso) return { ...none, iso: isoDay(Number(iso[1]), Number(iso[2]), Number(iso[3])) };
  const m = NN_NN_YYYY.exec(text);
  if (!m) return none;
  const [first, second, year] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (first > 12 && second <= 12) return proof(isoDay(year, second, first), 'dmy');
  if (second > 12 && first <= 12) return proof(isoDay(year, first, second), 'mdy');
  if (first === second) return { ...none, iso: isoDay(year, first, first) };
  if (first > 12) return none; // both over 12: no date
  return { ...none, ambiguous: first >= 1 && second >= 1 };
}

/** Only a real day proves an order: `13-00-2026` is no date at all. */
function proof(iso: string | null, order: DayOrder): PostDateReading {
  return { iso, proves: iso === null ? null : order, ambiguous: false };
}

/** The ISO day of a raw value, an ambiguous one read in `order` (none: left NULL). */
export function isoPostDate(raw: unknown, order: DayOrder | null = null): string | null {
  const reading = readPostDate(raw);
  if (!reading.ambiguous || order === null) return reading.iso;
  const [, a, b, year] = NN_NN_YYYY.exec((raw as string).trim()) as RegExpExecArray;
  return order === 'dmy' ? isoDay(Number(year), Number(b), Number(a)) : isoDay(Number(year), Number(a), Number(b));
}

function isoDay(year: number, month: number, day: number): string | null {
  const date = new Date(Date.UTC(year, month - 1, day));
  // Date.UTC rolls 31-02 over into March: a day that does not exist is not a date.
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}
