import { hash } from 'node:crypto';

/** Words (32-bit) of the digest kept per key: 96 bits. */
const WORDS = 3;
const INITIAL_SLOTS = 1 << 16;

/**
 * The input keys of one plan, compact for millions of rows: 96 bits of each key's SHA-1 in an open-addressing Uint32Array
 * off the JS heap. SHA-1 suffices: inputs are the user's own, and chance collisions are out of reach at 95 bits.
 */
export class SeenKeys {
  private table = new Uint32Array(INITIAL_SLOTS * WORDS);
  private mask = INITIAL_SLOTS - 1;
  private count = 0;

  /** Records the key; false when it was already there. */
  add(key: string): boolean {
    // 'binary' (latin1) output: one char per digest byte, no Buffer to allocate.
    const d = hash('sha1', key, 'binary');
    // Word 0 is never 0 in a used slot, so 0 marks an empty one.
    const w0 = (word(d, 0) | 1) >>> 0;
    const w1 = word(d, 4);
    const w2 = word(d, 8);
    const table = this.table;
    const mask = this.mask;
    for (let slot = w1 & mask; ; slot = (slot + 1) & mask) {
      const at = slot * WORDS;
      const s0 = table[at]!;
      if (s0 === 0) {
        table[at] = w0;
        table[at + 1] = w1;
        table[at + 2] = w2;
        if (++this.count * 2 > mask + 1) this.grow();
        return true;
      }
      if (s0 === w0 && table[at + 1] === w1 && table[at + 2] === w2) return false;
    }
  }

  /** Doubles the table (keeps the load under one half, so probes stay short). */
  private grow(): void {
    const old = this.table;
    const slots = (this.mask + 1) * 2;
    const table = new Uint32Array(slots * WORDS);
    const mask = slots - 1;
    for (let at = 0; at < old.length; at += WORDS) {
      const w0 = old[at]!;
      if (w0 === 0) continue;
      const w1 = old[at + 1]!;
      let slot = w1 & mask;
      while (table[slot * WORDS] !== 0) slot = (slot + 1) & mask;
      const to = slot * WORDS;
      table[to] = w0;
      table[to + 1] = w1;
      table[to + 2] = old[at + 2]!;
    }
    this.table = table;
    this.mask = mask;
  }
}

/** The unsigned 32-bit word at byte `i` of a one-byte-per-char digest string. */
function word(d: string, i: number): number {
  return (d.charCodeAt(i) | (d.charCodeAt(i + 1) << 8) | (d.charCodeAt(i + 2) << 16) | (d.charCodeAt(i + 3) << 24)) >>> 0;
}
