/**
 * Reads that ride in a group's round trip (pg-pipeline.ts), for readers whose statements do not depend on the rows
 * read (the history's read of a group's keys): run once with no rows to learn its statements, again with theirs.
 */
import type { ReadStep, Reads } from '../../read-steps.ts';
import { pgValues } from '../../statement.ts';
import type { BoundStatement } from './pg-statements.ts';

/** The statements `reads` sends, learned by running it with no rows (it must not depend on them). */
export function plannedReads(reads: Reads<unknown>): ReadStep[] {
  const steps: ReadStep[] = [];
  for (let step = reads.next(); !step.done; step = reads.next([])) {
    if (step.value.raw || typeof step.value.sql === 'string') throw new Error('internal: only statements read by column fold into a query');
    steps.push(step.value);
  }
  return steps;
}

/** Each read as its statement's own PostgreSQL text, bound to its values. */
export function foldedReadSql(steps: readonly ReadStep[]): BoundStatement[] {
  return steps.map((step) => {
    if (typeof step.sql === 'string') throw new Error('internal: a plain read does not fold');
    return { text: step.sql.postgres, values: pgValues(step.sql, step.params) };
  });
}

/** Runs `reads` again on the rows its planned statements returned, checking it asks the same statements in order. */
export function replayReads<T>(reads: Reads<T>, planned: readonly ReadStep[], results: readonly unknown[][]): T {
  let step = reads.next();
  for (let i = 0; !step.done; i++) {
    const p = planned[i];
    if (!p || p.sql !== step.value.sql || JSON.stringify(p.params) !== JSON.stringify(step.value.params)) {
      throw new Error('internal: a folded reader asked other statements than it planned');
    }
    step = reads.next(results[i]!);
  }
  return step.value;
}
