/**
 * The child process running `query`'s and `export --sql`'s statement (statement-rows.ts), a batch of raw rows per
 * `more`. Its only job is to be killable: a runaway statement blocks this process, never the parent.
 */
import { openUserStatement } from '../readers/read-only-sql.ts';
// Types only: the parent's module is not loaded here.
import type { FromStatementChild, ToStatementChild } from './statement-rows.ts';

const send = (message: FromStatementChild) => process.send!(message);

let rows: Iterator<unknown[]> | null = null;
let batchRows = 1000;
let close: () => void = () => undefined;

// The parent gone (killed, crashed): nothing is left to read for.
process.on('disconnect', () => process.exit(0));
process.on('message', (message: ToStatementChild) => {
  try {
    if (message.type === 'start') {
      const statement = openUserStatement(message.db, message.sql);
      close = statement.close;
      rows = statement.rows;
      batchRows = message.batchRows;
      return;
    }
    const batch: unknown[][] = [];
    let done = false;
    while (!done && batch.length < batchRows) {
      const next = rows!.next();
      if (next.done) done = true;
      else batch.push(next.value);
    }
    send({ type: 'rows', rows: batch, done });
    if (done) close();
  } catch (err) {
    const code = (err as { code?: unknown } | null)?.code;
    const text = err instanceof Error ? err.message : String(err);
    send({ type: 'failed', message: text, code: typeof code === 'string' ? code : undefined });
    close();
  }
});

