import { createHash } from 'node:crypto';

/**
 * The set of input keys seen so far in one plan, kept compact for inputs of millions of rows: each key is
 * stored as a 12-byte digest (a 12-character one-byte string) rather than the full URL. A false duplicate
 * needs a 96-bit collision: about 1 in 10^16 even at 10 million rows.
 */
export class SeenKeys {
  private readonly seen = new Set<string>();

  /** Records the key; false when it was already there. */
  add(key: string): boolean {
    const digest = createHash('sha1').update(key).digest().toString('latin1', 0, 12);
    if (this.seen.has(digest)) return false;
    this.seen.add(digest);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }
}
