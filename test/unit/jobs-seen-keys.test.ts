import { describe, expect, it } from 'vitest';
import { SeenKeys } from '../../src/jobs/seen-keys.ts';

describe('SeenKeys (hash table of digests)', () => {
  it('tells new keys from repeats through several table growths', () => {
    const seen = new SeenKeys();
    const n = 150_000; // the table starts at 65,536 slots and doubles at half load: grows three times
    for (let i = 0; i < n; i++) {
      expect(seen.add(`https://network.com/company/co-${i}`)).toBe(true);
      // A repeat of an earlier key, some of them from before the last growth.
      if (i % 7 === 3) expect(seen.add(`https://network.com/company/co-${(i * 31) % (i + 1)}`)).toBe(false);
    }
    expect(seen.size).toBe(n);
    for (let i = 0; i < n; i += 997) expect(seen.add(`https://network.com/company/co-${i}`)).toBe(false);
    expect(seen.size).toBe(n);
  });

  it('keeps near-identical and non-ASCII keys apart', () => {
    const seen = new SeenKeys();
    const keys = ['', ' ', 'a', 'A', 'a ', 'https://network.com/company/société', 'https://network.com/company/soci%C3%A9t%C3%A9', '日本語', '😀', '\u0000', 'q_0123456789abcdef'];
    for (const k of keys) expect(seen.add(k)).toBe(true);
    for (const k of keys) expect(seen.add(k)).toBe(false);
    expect(seen.size).toBe(keys.length);
  });
});
