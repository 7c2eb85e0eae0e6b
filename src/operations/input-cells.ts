/** Reading an input row's cells, shared by the operations' row readers: mangled cells and one-URL-column inputs. */
import { assertColumns, type CsvHeader } from '../input/csv-header.ts';
import { networkHost, type Canonicalize } from '../urls/canonical.ts';
import type { RowRead } from './operation-spec.ts';

export const NOT_UTF8 = 'not valid UTF-8 text (a Latin-1 or Windows-1252 export?): save the file as UTF-8';

/** True when the cell held non-UTF-8 bytes (read as U+FFFD): sent, it would pay for a lookup of something else. Only a task's own cells count. */
export function isMangled(cell: string): boolean {
  return cell.includes('\uFFFD');
}

/** Rows naming one page URL in `column`, keyed by its canonical form on the network's host (else invalid, no call). */
export function urlColumnReader<Q>(file: string, header: CsvHeader, column: string, canonical: Canonicalize, requestsOf: (url: string) => Q[]) {
  assertColumns(file, header, [column]);
  // Read once per plan.
  const host = networkHost();
  return (record: Readonly<Record<string, string>>): RowRead<Q> => {
    const cell = (record[column] ?? '').trim();
    if (cell === '') return { ok: false, field: column, value: '', reason: 'empty' };
    if (isMangled(cell)) return { ok: false, field: column, value: cell, reason: NOT_UTF8 };
    const url = canonical(cell, host);
    if (!url.ok) return { ok: false, field: column, value: cell, reason: url.reason };
    return { ok: true, inputKey: url.url, requests: requestsOf(url.url) };
  };
}
