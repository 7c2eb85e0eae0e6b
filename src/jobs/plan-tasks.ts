import { overSeveralLines, readCsv, type CsvRecordItem } from '../input/read-csv.ts';
import { readCsvHeader } from '../input/csv-header.ts';
import { specOf } from '../operations/index.ts';
import type { Job } from './schema.ts';
import { SeenKeys } from './seen-keys.ts';

/** One call to make: an input (by its key) and a page, with the exact request to send. */
export interface PlannedTask {
  kind: 'task';
  /** The input's key (its operation's: a canonical URL, a search key); the same for every page. */
  inputKey: string;
  /** 1-based page number. */
  page: number;
  /** The request of the job's operation (its spec's rowReader made it). */
  request: unknown;
  /** Line of the input CSV where the row starts. */
  line: number;
  /** On page 1 only: fields with a value past the header's columns, left out (see CsvRecordItem); absent when none. */
  extraFields?: number;
}

/** A row that cannot become a task, with what is wrong; recorded, never fatal. */
export interface PlannedInvalid {
  kind: 'invalid';
  line: number;
  /** The column at fault; null when the row as a whole is (malformed CSV, no search parameters). */
  field: string | null;
  value: string | null;
  reason: string;
}

/** A row asking for an input already planned earlier in the same file: no second task. */
export interface PlannedDuplicate {
  kind: 'duplicate';
  line: number;
  inputKey: string;
}

export type PlannedItem = PlannedTask | PlannedInvalid | PlannedDuplicate;

/** A job's input as tasks, one per input and page in order, or why a row makes none; a missing file or column throws InputFileError first. */
export async function* planTasks(job: Job): AsyncGenerator<PlannedItem, void, undefined> {
  const file = job.input.csv;
  const header = await readCsvHeader(job.input.csvPath, { displayName: file });
  const readRow = specOf(job.operation).rowReader(job, header);
  const seen = new SeenKeys();
  for await (const item of readCsv(job.input.csvPath, { header, displayName: file })) {
    if ('error' in item) {
      yield { kind: 'invalid', line: item.line, field: null, value: null, reason: `malformed CSV row: ${item.error}` };
      continue;
    }
    const read = readRow(item.record);
    if (!read.ok) {
      yield { kind: 'invalid', line: item.line, field: read.field, value: read.value, reason: invalidReason(item, read) };
      continue;
    }
    if (!seen.add(read.inputKey)) {
      yield { kind: 'duplicate', line: item.line, inputKey: read.inputKey };
      continue;
    }
    for (let i = 0; i < read.requests.length; i++) {
      const task: PlannedTask = { kind: 'task', inputKey: read.inputKey, page: i + 1, request: read.requests[i], line: item.line };
      if (i === 0 && item.extraFields !== undefined) task.extraFields = item.extraFields;
      yield task;
    }
  }
}

/**
 * Why a row is invalid. A cell the job reads that holds a line break (a stray quote ran on): which lines it swallowed,
 * or they would vanish unseen behind "not a URL".
 */
function invalidReason(item: CsvRecordItem, read: { value: string | null; reason: string }): string {
  if (item.lastLine === undefined || !/[\r\n]/.test(read.value ?? '')) return read.reason;
  return overSeveralLines(item.line, item.lastLine, read.reason);
}
