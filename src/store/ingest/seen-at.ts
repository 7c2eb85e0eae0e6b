/** The one check of the time every answer's rows are stored with. */
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** Checks that a timestamp argument is ISO-8601 UTC text, the one format every *_at column holds. */
export function assertIsoTimestamp(seenAt: string): void {
  if (typeof seenAt !== 'string' || !ISO_UTC.test(seenAt)) {
    throw new TypeError(`seenAt must be an ISO-8601 UTC timestamp such as 2026-11-22T13:45:00.000Z, got ${String(seenAt)}`);
  }
}
