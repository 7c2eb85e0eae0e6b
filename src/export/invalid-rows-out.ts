/** `--invalid-out`: refused input rows as written, with why; read again, as `invalid_inputs` lacks the row. */
import { basename, dirname, extname, join } from 'node:path';
import type { Job } from '../jobs/schema.ts';
import { planTasks, type PlannedItem } from '../jobs/plan-tasks.ts';
import { inputValues, readCsv, type CsvItem } from '../input/read-csv.ts';
import { readCsvHeader, type CsvHeader } from '../input/csv-header.ts';
import { assertOutputIsNotInput, jobInputs } from './output-is-not-input.ts';
import { csvEncoder } from './row-encoders.ts';
import { writeRows, type WriteResult } from './write-output.ts';

/** The columns after the input's. */
export const INVALID_OUT_COLUMNS = ['netingest_line', 'netingest_reason'] as const;

/** Writes the invalid rows of `job` to `out` (replaced whole at the end), never over a file it reads. */
export async function writeInvalidRows(job: Job, out: string, options: { databaseFiles?: readonly string[]; signal?: AbortSignal } = {}): Promise<WriteResult> {
  assertOutputIsNotInput(out, jobInputs(job, options.databaseFiles ?? []), '--invalid-out');
  const header = await readCsvHeader(job.input.csvPath, { displayName: job.input.csv });
  const inputColumns = header.columns.filter((c) => c !== '');

  async function* rows(): AsyncGenerator<unknown[]> {
    for await (const { item, planned } of plannedRows(job, header)) {
      // A malformed CSV row is among them: the planner refuses it as such.
      const refused = planned.find((p) => p.kind === 'invalid');
      if (refused?.kind === 'invalid') yield [...inputValues(item, header.columns), item.line, invalidReason(refused)];
    }
  }

  const encoder = csvEncoder([...inputColumns, ...INVALID_OUT_COLUMNS], { delimiter: header.delimiter, bom: header.bom });
  return writeRows(rows(), encoder, { out, signal: options.signal });
}

/** The file of one job's invalid rows: `out` itself for one job, `<stem>.<job><ext>` beside it for several. */
export function invalidOutPath(out: string, jobName: string, jobCount: number): string {
  if (jobCount <= 1) return out;
  const ext = extname(out);
  return join(dirname(out), `${basename(out, ext)}.${jobName}${ext}`);
}

/** Why the planner refused a row, as `netingest_error` and the invalid rows' file say it. */
export function invalidReason(item: Extract<PlannedItem, { kind: 'invalid' }>): string {
  if (item.field === null) return item.reason;
  const value = item.value === null || item.value === '' ? '' : ` "${item.value}"`;
  return `${item.field}${value}: ${item.reason}`;
}

/** Every input row with the planner's items of its line, the planner reading the same file in step (enrich reads so too). */
export async function* plannedRows(job: Job, header: CsvHeader): AsyncGenerator<{ item: CsvItem; planned: PlannedItem[] }> {
  const items = planTasks(job);
  try {
    let head = await items.next();
    for await (const item of readCsv(job.input.csvPath, { header, displayName: job.input.csv })) {
      const planned: PlannedItem[] = [];
      for (; !head.done && head.value.line <= item.line; head = await items.next()) {
        if (head.value.line === item.line) planned.push(head.value);
      }
      yield { item, planned };
    }
  } finally {
    await items.return(undefined);
  }
}
