/** The job's input read again, each row with what the planner made of it (for enrich and the invalid rows' file). */
import type { CsvHeader } from '../input/csv-header.ts';
import { readCsv, type CsvItem } from '../input/read-csv.ts';
import { planTasks, type PlannedItem } from '../jobs/plan-tasks.ts';
import type { Job } from '../jobs/schema.ts';

/** Why the planner refused a row, as `netingest_error` and the invalid rows' file say it. */
export function invalidReason(item: Extract<PlannedItem, { kind: 'invalid' }>): string {
  if (item.field === null) return item.reason;
  const value = item.value === null || item.value === '' ? '' : ` "${item.value}"`;
  return `${item.field}${value}: ${item.reason}`;
}

/** Every input row with the planner's items of its line, the planner reading the same file in step. */
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
