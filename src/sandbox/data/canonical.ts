/**
 * The sandbox's own reading of input URLs (it must not share src/urls with the client), keying the synthetic data so
 * spelling variants of one URL get the same answer: scheme optional, `www.` folded, no query, fragment or end slash.
 */
export function canonicalUrlKey(raw: string): string {
  const s = raw.trim().replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').replace(/[?#].*$/s, '');
  const slash = s.indexOf('/');
  const host = (slash === -1 ? s : s.slice(0, slash)).toLowerCase().replace(/^www\./, '');
  let path = (slash === -1 ? '' : s.slice(slash)).replace(/\/+$/, '');
  try {
    path = decodeURI(path);
  } catch {
    // Keep the raw path: a malformed escape is still a stable key.
  }
  return host + path;
}

/** True when the input names the word `notfound` anywhere: such inputs never have data. */
export function saysNotFound(text: string): boolean {
  return /notfound/i.test(text);
}

/** A URL-safe slug of a display name. */
export function slugify(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

/** A Map capped at `max` entries that forgets the oldest insertions first: enough for generated data. */
export class BoundedCache<K, V> {
  private readonly map = new Map<K, V>();

  constructor(private readonly max: number) {}

  /** The value kept for `key`, else the one `make` returns, kept. */
  get(key: K, make: () => V): V {
    const kept = this.map.get(key);
    if (kept !== undefined) return kept;
    const value = make();
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value!);
    this.map.set(key, value);
    return value;
  }
}
