/** Answer values as stored values (a number, string, bigint or null, as SQLite binds): the spec leaves several types "not shown". */
import { canonicalUrl, MAX_URL_LENGTH, otherSiteHost, type Canonicalize } from '../urls/canonical.ts';

export type SqlValue = string | number | bigint | null;

/** Stores a value as given: numbers as numbers, strings as strings, booleans as 0/1, objects as JSON text. */
export function sqlValue(value: unknown): SqlValue {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'bigint':
      return value;
    case 'boolean':
      return value ? 1 : 0;
    case 'undefined':
      return null;
    default:
      return value === null ? null : JSON.stringify(value);
  }
}

/** sqlValue for the untyped BLOB ("not shown") columns: better-sqlite3 binds numbers as REAL, so integers and booleans go as bigint (12, not 12.0) */
export function givenValue(value: unknown): SqlValue {
  if (typeof value === 'boolean') return value ? 1n : 0n;
  return typeof value === 'number' && Number.isSafeInteger(value) ? BigInt(value) : sqlValue(value);
}

/** Made on first use: building it loads ICU's region names, which every CLI start would pay. */
let regionNames: Intl.DisplayNames | undefined;

/**
 * A country by name, lower-case as jobs write `account.location` (`germany`): the service sends codes (`de`) in some
 * answers, names in others. Codes are named by Node's ICU (English), as the migration did (docs/schema.md).
 */
export function countryName(country: unknown): string | null {
  if (typeof country !== 'string') return null;
  const text = country.trim();
  if (text === '') return null;
  if (/^[a-z]{2}$/i.test(text)) {
    const name = (regionNames ??= new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' })).of(text.toUpperCase());
    // `zz` is ICU's "Unknown Region": not a country.
    if (name !== undefined && text.toLowerCase() !== 'zz') return name.toLowerCase();
  }
  return text.toLowerCase();
}

/** JSON text of a value, or null for null/missing. */
export function jsonText(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

/** Comma-joined list (the API's own list syntax), or null when absent. */
export function joinedList(value: readonly unknown[] | undefined): string | null {
  return value === undefined ? null : value.map(String).join(',');
}

/** The members of an object-valued member, or an empty object when it is missing or not an object. */
export function objectOf(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

/** The elements of an array-valued member, or none when it is null or missing. */
export function arrayOf(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * The key of a URL: its canonical form by `canonical`, else the general canonical URL, else the text as given
 * (trimmed); null only when missing, empty or past MAX_URL_LENGTH bytes. A row is never dropped for an odd URL.
 */
export function urlKey(value: unknown, canonical: Canonicalize, networkHost: string): string | null {
  const specific = canonical(value, networkHost);
  if (specific.ok) return specific.url;
  const general = canonicalUrl(value, networkHost);
  if (general.ok) return general.url;
  const text = typeof value === 'string' ? value.trim() : '';
  return text !== '' && Buffer.byteLength(text) <= MAX_URL_LENGTH ? text : null;
}

/**
 * A list's records by the urlKey() of their own page (`url`), each with its index; `skipped` counts those without one
 * or on another site than the network's (`host` drift, answer-contract.ts). A record listed twice on one page keeps the
 * place the service first lists it at: a later copy would move it down.
 */
export function recordsByUrl(list: unknown, canonical: Canonicalize, networkHost: string) {
  const records = new Map<string, [index: number, record: Record<string, unknown>]>();
  let skipped = 0;
  for (const [index, item] of arrayOf(list).entries()) {
    const record = objectOf(item);
    const url = otherSiteHost(record['url'], networkHost) === null ? urlKey(record['url'], canonical, networkHost) : null;
    if (url === null) skipped++;
    else if (!records.has(url)) records.set(url, [index, record]);
  }
  return { records, skipped };
}
