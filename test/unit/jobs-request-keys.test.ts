import { describe, expect, it } from 'vitest';
import { EMPTY_FILTER_KEY, filterKey, searchKey } from '../../src/jobs/request-keys.ts';
import { SeenKeys } from '../../src/jobs/seen-keys.ts';

describe('searchKey', () => {
  it('is q_ and 16 hex chars, stable across key order, whitespace, empty values and start', () => {
    const a = searchKey({ keywords: 'nurse', location: 'germany', jobTypes: ['full time', 'part time'], start: 0 });
    const b = searchKey({ jobTypes: [' full time', 'part time ', ''], start: 20, location: ' germany ', keywords: 'nurse', timePosted: '', companyIds: [] });
    expect(a).toMatch(/^q_[0-9a-f]{16}$/);
    expect(b).toBe(a);
  });

  it('tells different queries apart, including list order and a value moved between parameters', () => {
    const base = searchKey({ keywords: 'nurse', jobTypes: ['full time', 'part time'] });
    expect(searchKey({ keywords: 'nurse', jobTypes: ['part time', 'full time'] })).not.toBe(base);
    expect(searchKey({ keywords: 'nurse' })).not.toBe(base);
    expect(searchKey({ location: 'nurse', jobTypes: ['full time', 'part time'] })).not.toBe(base);
    expect(searchKey({ keywords: 'a,b' })).not.toBe(searchKey({ keywords: 'a', location: 'b' }));
  });
});

describe('filterKey', () => {
  it('gives the empty filter set a fixed key, however it is spelled', () => {
    expect(filterKey(undefined)).toBe(EMPTY_FILTER_KEY);
    expect(filterKey({})).toBe(EMPTY_FILTER_KEY);
    expect(filterKey({ location: [] })).toBe(EMPTY_FILTER_KEY);
  });

  it('is f_ and 16 hex chars, independent of key order at every level', () => {
    const a = filterKey({ location: ['germany'], employeeSize: { type: 'RANGE', range: [{ start: 1, end: 10 }] } });
    const b = filterKey({ employeeSize: { range: [{ end: 10, start: 1 }], type: 'RANGE' }, location: ['germany'] });
    expect(a).toMatch(/^f_[0-9a-f]{16}$/);
    expect(b).toBe(a);
    expect(filterKey({ location: ['france'] })).not.toBe(filterKey({ location: ['germany'] }));
    expect(filterKey({ location: ['germany'] })).not.toBe(a);
  });
});

describe('SeenKeys', () => {
  it('reports each key new once', () => {
    const seen = new SeenKeys();
    expect(seen.add('https://network.com/company/a')).toBe(true);
    expect(seen.add('https://network.com/company/b')).toBe(true);
    expect(seen.add('https://network.com/company/a')).toBe(false);
  });
});
