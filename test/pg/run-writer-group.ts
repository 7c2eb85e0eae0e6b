/**
 * A group written as the run's writer writes it (pg-outcome-writer.ts): on a connection in pipeline mode, BEGIN
 * with the history's reads, the rows, then the history's rows with COMMIT, in its own transaction.
 */
import type pg from 'pg';
import type { createPgGroupCommit } from '../../src/store/pg/pg-group-commit.ts';
import type { OutcomeOp } from '../../src/store/outcome-ops.ts';

export async function writeAsRunWriter(groups: ReturnType<typeof createPgGroupCommit>, client: pg.PoolClient, ops: readonly OutcomeOp[]): Promise<void> {
  const connection = client as unknown as { pipeline: boolean };
  connection.pipeline = true;
  try {
    const started = groups.start(client, groups.plan(ops));
    await (await started.commit(await started.reads)).committed;
  } finally {
    connection.pipeline = false;
  }
}
