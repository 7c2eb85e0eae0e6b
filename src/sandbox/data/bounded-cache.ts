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
