/** Seeded hashing and PRNG: everything the sandbox invents comes from here, so one seed reproduces a whole run. */

/** 32-bit FNV-1a hash of a string, mixed with a seed; stable across runs and platforms. */
export function hash32(seed: number, text: string): number {
  let h = (0x811c9dc5 ^ Math.imul(seed | 0, 0x9e3779b1)) >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  // Final avalanche (murmur3 fmix) so near-identical inputs land far apart.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** A fraction in [0, 1) fixed by seed and text: used for deterministic yes/no decisions such as "no data". */
export function hashFraction(seed: number, text: string): number {
  return hash32(seed, text) / 4294967296;
}

/** Small fast PRNG (mulberry32) with the helpers the data generators need. */
export class Prng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A PRNG whose stream is fixed by the seed and a text key. */
  static from(seed: number, key: string): Prng {
    return new Prng(hash32(seed, key));
  }

  /** Uniform float in [0, 1). */
  next(): number {
    let t = (this.state = (this.state + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  /** One element of a non-empty list. */
  pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.next() * list.length)] as T;
  }

  /** null with probability `nullRate`, [] with `emptyRate`, else `make()`: a client must store both forms of none. */
  nullOrList<T>(nullRate: number, emptyRate: number, make: () => T[]): T[] | null {
    const r = this.next();
    if (r < nullRate) return null;
    return r < nullRate + emptyRate ? [] : make();
  }

  /** `count` distinct elements of a list (or all of it when shorter), in random order. */
  sample<T>(list: readonly T[], count: number): T[] {
    const copy = list.slice();
    const n = Math.min(count, copy.length);
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(this.next() * (copy.length - i));
      [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
    }
    return copy.slice(0, n);
  }

  /** A string of decimal digits of the given length, never starting with 0. */
  digits(length: number): string {
    return String(this.int(1, 9)) + Array.from({ length: length - 1 }, () => this.int(0, 9)).join('');
  }

  /** A string of lower-case letters and digits. */
  alnum(length: number): string {
    const chars = 'abcdefghijklmnopqrstuvwxyz0123456789';
    return Array.from({ length }, () => chars[Math.floor(this.next() * chars.length)]).join('');
  }
}
