/**
 * The CSV encoder writes the bytes csv-stringify wrote before it (docs/export.md's CSV): the same quoting, NULL empty
 * and '' as `""`, numbers, blobs as base64, objects as JSON, the header and BOM, for every delimiter and option.
 */
import { stringify } from 'csv-stringify/sync';
import { describe, expect, it } from 'vitest';
import { csvEncoder, looksLikeFormula, looksLikeLossyNumber, type EncoderOptions } from '../../src/export/row-encoders.ts';

/** csv-stringify with the options netingest gave it until it wrote CSV itself. */
function byCsvStringify(rows: unknown[][], { delimiter, escapeFormulas, keepText, bom }: EncoderOptions): string {
  const marked = (value: string) => (escapeFormulas && looksLikeFormula(value)) || (keepText && looksLikeLossyNumber(value));
  return stringify(rows, {
    quoted_empty: false,
    bom: bom === true,
    ...(delimiter === undefined ? {} : { delimiter }),
    cast: {
      string: (value: string) => (value === '' ? { value: '', quoted_empty: true } : marked(value) ? `'${value}` : value),
      object: (value: object) => (Buffer.isBuffer(value) ? value.toString('base64') : JSON.stringify(value)),
    },
  });
}

const VALUES: unknown[] = [
  null, undefined, '', ' ', 'plain', 'a,b', 'a;b', 'a\tb', 'say "hi"', '"', '""', 'line\nbreak', 'cr\rhere', 'crlf\r\n',
  '{"url":"https://x","n":[1,2]}', '=HYPERLINK("http://x")', ' =1+2', '\tx', '-1 ok', '+4930', '01234', '1-10', 'a:', 'x::y',
  0, -2, -1.5, 1e21, Number.NaN, 9007199254740993n, true, false, Buffer.from([0, 1, 2, 250]), { k: 'v"q' }, [1, 'two'],
  new Date(Date.UTC(2026, 10, 22)), 'Ünïcödé ＝x', '😀,"',
];

describe('CSV bytes', () => {
  for (const options of [{}, { delimiter: ';' }, { delimiter: '\t' }, { delimiter: '::' }, { escapeFormulas: true }, { keepText: true, bom: true }] as EncoderOptions[]) {
    it(`are csv-stringify's for ${JSON.stringify(options)}`, () => {
      const columns = ['id', 'a,b', '=sum', 'x"y'];
      const rows = VALUES.map((value, i) => [i, value, value, 'tail']);
      const encoder = csvEncoder(columns, options);
      expect(encoder.header()).toBe(byCsvStringify([columns], options));
      expect(encoder.encode(rows)).toBe(byCsvStringify(rows, { ...options, bom: false }));
      expect(encoder.encode([])).toBe('');
    });
  }
});
