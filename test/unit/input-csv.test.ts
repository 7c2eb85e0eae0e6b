import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, rm, writeFile, mkdir, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inputValues, readCsv, type CsvErrorItem, type CsvItem } from '../../src/input/read-csv.ts';
import { assertColumns, readCsvHeader, detectDelimiter } from '../../src/input/csv-header.ts';
import { InputFileError } from '../../src/input/input-error.ts';
import { UsageError } from '../../src/errors.ts';

/** A malformed row rather than a record. */
const isCsvError = (item: CsvItem): item is CsvErrorItem => 'error' in item;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'netingest-input-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

let seq = 0;
async function csvFile(text: string | Buffer): Promise<string> {
  const path = join(dir, `f${++seq}.csv`);
  await writeFile(path, text);
  return path;
}

async function collect(path: string, options: Parameters<typeof readCsv>[1] = {}): Promise<CsvItem[]> {
  const out: CsvItem[] = [];
  for await (const item of readCsv(path, options)) out.push(item);
  return out;
}

describe('readCsv', () => {
  it('reads a comma file with a header and trims header names', async () => {
    const path = await csvFile(' url , name\nhttps://a.example/x,Acme\nb.example/y,Beta\n');
    expect(await collect(path)).toEqual([
      { line: 2, record: { url: 'https://a.example/x', name: 'Acme' } },
      { line: 3, record: { url: 'b.example/y', name: 'Beta' } },
    ]);
  });

  it.each([
    ['comma', ','],
    ['semicolon', ';'],
    ['tab', '\t'],
  ])('detects the %s delimiter from the header line', async (_name, d) => {
    const path = await csvFile(`url${d}name${d}note\n"a${d}b"${d}x${d}y\n`);
    const header = await readCsvHeader(path);
    expect(header.delimiter).toBe(d);
    expect(header.columns).toEqual(['url', 'name', 'note']);
    expect(await collect(path)).toEqual([{ line: 2, record: { url: `a${d}b`, name: 'x', note: 'y' } }]);
  });

  it('ignores delimiters inside quoted header names when detecting', () => {
    expect(detectDelimiter('"a,b,c";d;e')).toBe(';');
    expect(detectDelimiter('single')).toBe(',');
  });

  it('strips a UTF-8 BOM so the first column keeps its name', async () => {
    const path = await csvFile(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('url;n\nx;1\n')]));
    const items = await collect(path);
    expect(items).toEqual([{ line: 2, record: { url: 'x', n: '1' } }]);
  });

  it('keeps quoted newlines in a field and numbers lines where records start and end', async () => {
    const text = 'url,comment\r\nu1,"two\r\nlines"\r\n\r\nu2,plain\r\nu3,"three\nmixed\r\nlines"\r\nu4,end';
    const items = await collect(await csvFile(text));
    expect(items).toEqual([
      { line: 2, record: { url: 'u1', comment: 'two\r\nlines' }, lastLine: 3 },
      { line: 5, record: { url: 'u2', comment: 'plain' } },
      { line: 6, record: { url: 'u3', comment: 'three\nmixed\r\nlines' }, lastLine: 8 },
      { line: 9, record: { url: 'u4', comment: 'end' } },
    ]);
  });

  it('numbers lines the same whatever the read chunk size (CRLF split across chunks)', async () => {
    const text = '\n\nurl,c\r\n"a\r\nb",1\r\n\r\nx,2,3\r\ny,3\r\n';
    const path = await csvFile(text);
    const expected = [
      { line: 4, record: { url: 'a\r\nb', c: '1' }, lastLine: 5 },
      { line: 7, record: { url: 'x', c: '2' }, extraFields: 1 },
      { line: 8, record: { url: 'y', c: '3' } },
    ];
    for (const readChunkBytes of [1, 2, 3, 7]) expect(await collect(path, { readChunkBytes })).toEqual(expected);
  });

  it('yields malformed rows as errors in file order and goes on', async () => {
    const text = [
      'url,name',
      'a,1',
      'b,2,extra', // one field too many: its columns are all there, read, the extra value counted
      'c', // too few: its own field kept
      'd,4,', // trailing empty field: harmless
      'e,5',
      ',', // blank row: skipped silently
      '"f,6', // quote never closed: swallows the rest, then reading resumes on the next line
      'g,7',
      'h,8',
    ].join('\n');
    const items = await collect(await csvFile(text));
    expect(items).toEqual([
      { line: 2, record: { url: 'a', name: '1' } },
      { line: 3, record: { url: 'b', name: '2' }, extraFields: 1 },
      { line: 4, error: 'expected 2 fields as in the header row, found 1', fields: ['c'] },
      { line: 5, record: { url: 'd', name: '4' } },
      { line: 6, record: { url: 'e', name: '5' } },
      { line: 8, error: expect.stringContaining('never closed') },
      { line: 9, record: { url: 'g', name: '7' } },
      { line: 10, record: { url: 'h', name: '8' } },
    ]);
    expect(items.filter(isCsvError)).toHaveLength(2);
  });

  it('names the span of a record a stray quote stretched over several lines, and says those lines were not rows', async () => {
    const rows = [
      'company_url,n',
      'network.com/company/a,1',
      '"network.com/company/globex,omar', // 3: a stray quote, closed by the one on line 5
      'network.com/company/c,3',
      'network.com/company/d,"4',
      'network.com/company/e,5', // 6
      '"network.com/company/f,6', // 7: closed on line 8
      'x",y,z', // 8: one field too many
      'network.com/company/g,7', // 9
    ];
    const span = (from: number, to: number, found: number, notRows: string) =>
      `lines ${from}-${to} were read as one record (a quoted field seems unclosed there): ` +
      `expected 2 fields as in the header row, found ${found}; ${notRows} not read as rows of their own`;
    const expected = (eol: string) => [
      { line: 2, record: { company_url: 'network.com/company/a', n: '1' } },
      { line: 3, lastLine: 5, error: span(3, 5, 1, 'lines 4-5 were'), fields: [['"network.com/company/globex,omar', 'network.com/company/c,3', 'network.com/company/d,"4'].join(eol)] },
      { line: 6, record: { company_url: 'network.com/company/e', n: '5' } },
      { line: 7, lastLine: 8, error: span(7, 8, 3, 'line 8 was'), fields: [`network.com/company/f,6${eol}x`, 'y', 'z'] },
      { line: 9, record: { company_url: 'network.com/company/g', n: '7' } },
    ];
    for (const eol of ['\n', '\r\n']) {
      const path = await csvFile(rows.join(eol) + eol);
      for (const readChunkBytes of [1, 2, 3, 7, 64 * 1024]) expect(await collect(path, { readChunkBytes })).toEqual(expected(eol));
    }
  });

  it('keeps stray quotes inside unquoted fields as text', async () => {
    const items = await collect(await csvFile('url,name\nab"c,"x"y\n'));
    expect(items).toEqual([{ line: 2, record: { url: 'ab"c', name: '"x"y' } }]);
  });

  it('yields nothing for a file with only a header', async () => {
    expect(await collect(await csvFile('url\n'))).toEqual([]);
  });

  it('gives records without a prototype so a column named __proto__ is plain data', async () => {
    const [item] = await collect(await csvFile('__proto__,b\nx,y\n'));
    expect(item && !isCsvError(item) && item.record['__proto__']).toBe('x');
  });

  it('rejects an unknown column, listing the available ones', async () => {
    const path = await csvFile('Company_URL;name\nx;y\n');
    const err = await readCsvHeader(path).then((header) => assertColumns('data/leads.csv', header, ['company_url'])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputFileError);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as InputFileError).code).toBe('INPUT_INVALID');
    expect((err as Error).message).toBe(
      'data/leads.csv: no column "company_url" (did you mean "Company_URL"? names are case-sensitive); the header row (line 1) has: "Company_URL", "name"',
    );
  });

  it('rejects a missing file, naming it', async () => {
    const path = join(dir, 'nope.csv');
    const err = await collect(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputFileError);
    expect((err as Error).message).toBe(`${path}: cannot read input file: file not found`);
  });

  it('rejects a directory', async () => {
    const sub = join(dir, 'adir');
    await mkdir(sub);
    await expect(collect(sub)).rejects.toThrow(/is a directory/);
  });

  // root reads any file whatever its mode, so this can only be checked as another user.
  it.skipIf(process.getuid?.() === 0)('rejects an unreadable file', async () => {
    const path = await csvFile('url\nx\n');
    await chmod(path, 0o000);
    await expect(collect(path)).rejects.toThrow(/permission denied/);
  });

  it.each([
    ['empty', ''],
    ['BOM only', '\ufeff'],
    ['blank lines only', '\n\r\n\n'],
  ])('rejects an %s file', async (_name, text) => {
    const path = await csvFile(text);
    const err = await collect(path).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputFileError);
    expect((err as Error).message).toBe(`${path}: input file is empty (expected a header row)`);
  });

  it('finds the header after blank lines, a quoted line break inside it, and names its line in errors', async () => {
    const header = await readCsvHeader(await csvFile('\n\r\n\rurl;"a\nb";x"y\nu;1;2\n'));
    expect(header).toEqual({ columns: ['url', 'a\nb', 'x"y'], delimiter: ';', line: 4, bom: false });
    await expect(readCsvHeader(await csvFile('\n\nurl,"note\n'))).rejects.toThrow(/: line 3: the header row has a quote that is never closed$/);
    await expect(readCsvHeader(await csvFile(`\n${'x'.repeat(2 * 1024 * 1024)}\n`))).rejects.toThrow(
      /: line 2: no end of the header row within 1048576 bytes; is this a CSV file\?$/,
    );
  });

  it("reads a header naming a column twice, the row's own fields kept; assertColumns refuses it only as a required column", async () => {
    const path = await csvFile('url,note,note\nu1,a,b\n');
    const [item] = await collect(path);
    expect(item).toEqual({ line: 2, record: { url: 'u1', note: 'b' }, fields: ['u1', 'a', 'b'] });
    const header = await readCsvHeader(path);
    expect(inputValues(item!, header.columns)).toEqual(['u1', 'a', 'b']);
    expect(() => assertColumns('leads.csv', header, ['url'])).not.toThrow();
    expect(() => assertColumns('leads.csv', header, ['note'])).toThrow(/^leads\.csv: line 1: column "note" appears twice in the header row$/);
  });

  it('stops reading when the consumer stops early', async () => {
    const rows = Array.from({ length: 5000 }, (_, i) => `u${i},${i}`).join('\n');
    const path = await csvFile(`url,n\n${rows}\n`);
    let seen = 0;
    for await (const item of readCsv(path, { readChunkBytes: 1024 })) {
      expect(isCsvError(item)).toBe(false);
      if (++seen === 3) break;
    }
    expect(seen).toBe(3);
  });
});
