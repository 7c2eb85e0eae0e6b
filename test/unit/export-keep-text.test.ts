/** enrich --excel's text kept as text (docs/export.md): what a spreadsheet would turn into a number or a date gets a `'`. */
import { describe, expect, it } from 'vitest';
import { csvEncoder } from '../../src/export/row-encoders.ts';

const excelRow = (values: unknown[]) => csvEncoder(values.map((_, i) => `c${i}`), { keepText: true, escapeFormulas: true }).encode([values]);

describe('keepText', () => {
  it('keeps staff ranges Excel would open as dates (1-10 as 10 Jan, 11-50 as Nov 1950) as text', () => {
    expect(excelRow(['1-10', '2-10', '11-50', '3/4'])).toBe("'1-10,'2-10,'11-50,'3/4\n");
  });

  it('leaves ranges no spreadsheet reads as a date, dates and plain numbers as they are', () => {
    expect(excelRow(['51-200', '201-500', '10001-50000', '2026-11-30', '12', 12, '1.5'])).toBe('51-200,201-500,10001-50000,2026-11-30,12,12,1.5\n');
  });

  it('still marks a leading + or zero and more than 15 digits', () => {
    expect(excelRow(['+4930123456', '01234', '12345678901234567'])).toBe("'+4930123456,'01234,'12345678901234567\n");
  });
});
