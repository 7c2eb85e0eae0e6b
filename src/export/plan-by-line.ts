/**
 * The planner's items read line by line in step with a second reading of the same input file, so that a
 * writer of the input's rows (enrich, the invalid rows' file) knows what the planner made of each.
 */
import type { PlannedItem } from '../jobs/plan-tasks.ts';

/** Why the planner refused a row, as `netingest_error` and the invalid rows' file say it. */
export function invalidReason(item: Extract<PlannedItem, { kind: 'invalid' }>): string {
  if (item.field === null) return item.reason;
  const value = item.value === null || item.value === '' ? '' : ` "${item.value}"`;
  return `${item.field}${value}: ${item.reason}`;
}

/** The planner's items, taken line by line in step with a second reading of the same file. */
export class PlanByLine {
  private head: PlannedItem | undefined;
  private done = false;

  constructor(private readonly items: AsyncGenerator<PlannedItem, void, undefined>) {}

  /** Every planned item of `line` (a task per page, or one invalid/duplicate item). */
  async take(line: number): Promise<PlannedItem[]> {
    const out: PlannedItem[] = [];
    for (;;) {
      if (this.head === undefined) {
        if (this.done) return out;
        const next = await this.items.next();
        if (next.done) {
          this.done = true;
          return out;
        }
        this.head = next.value;
      }
      if (this.head.line > line) return out;
      if (this.head.line === line) out.push(this.head);
      this.head = undefined;
    }
  }

  async close(): Promise<void> {
    await this.items.return(undefined);
  }
}
