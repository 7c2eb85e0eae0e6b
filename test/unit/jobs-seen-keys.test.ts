import { describe, expect, it } from 'vitest';
import { SeenKeys } from '../../src/jobs/seen-keys.ts';

describe('SeenKeys (hash table of digests)', () => {
  it('tells new keys from repeats through several table growths', () => {
    const seen = new SeenKeys();
    const n = 150_000; // the table starts at 65,536 slots and doubles at half load: grows three times
    // Wrong answers collected and compared once: an expect() per add was 2.3 s of the test's 2.6 s.
    const wrong: string[] = [];
    for (let i = 0; i < n; i++) {
      if (!seen.add(`https://network.com/company/co-${i}`)) wrong.push(`new key ${i} taken for a repeat`);
      // A repeat of an earlier key, some of them from before the last growth.
      const earlier = (i * 31) % (i + 1);
      if (i % 7 === 3 && seen.add(`https://network.com/company/co-${earlier}`)) wrong.push(`repeat of ${earlier} (at ${i}) taken for new`);
    }
    expect(wrong).toEqual([]);
    for (let i = 0; i < n; i += 997) if (seen.add(`https://network.com/company/co-${i}`)) wrong.push(`repeat of ${i} taken for new at the end`);
    expect(wrong).toEqual([]);
  });

  it('keeps near-identical and non-ASCII keys apart', () => {
    const seen = new SeenKeys();
    const keys = ['', ' ', 'a', 'A', 'a ', 'https://network.com/company/société', 'https://network.com/company/soci%C3%A9t%C3%A9', '日本語', '😀', '\u0000', 'q_0123456789abcdef'];
    for (const k of keys) expect(seen.add(k)).toBe(true);
    for (const k of keys) expect(seen.add(k)).toBe(false);
  });
});
