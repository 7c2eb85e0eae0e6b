import { hash } from 'node:crypto';

/**
 * The set of input keys seen so far in one plan, kept compact for inputs of millions of rows: each key is
 * stored as its 16-byte MD5 digest (a 16-character one-byte string, about 32 bytes) rather than the full URL.
 * MD5 is fine here: the inputs are the user's own, so only an accidental collision matters, and at 128 bits
 * that is out of reach (about 1 in 10^24 at 10 million rows).
 */
export class SeenKeys {
  private readonly seen = new Set<string>();

  /** Records the key; false when it was already there. */
  add(key: string): boolean {
    const digest = hash('md5', key, 'binary');
    if (this.seen.has(digest)) return false;
    this.seen.add(digest);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }
}
