/**
 * The child process that runs the SQL of `query` and `export --sql` (see statement-rows.ts): it opens its own
 * read-only connection, prepares the statement as the parent did, and answers each `more` with the next batch
 * of raw rows. Its only job is to be killable: a runaway statement blocks this process, never the parent's.
 */
import { openConnection } from '../store/connection.ts';
import { lockConnectionReadOnly, prepareReadQuery } from './read-only-sql.ts';
import type { FromStatementChild, ToStatementChild } from './statement-protocol.ts';

function send(message: FromStatementChild): void {
  process.send!(message);
}

function fail(err: unknown): void {
  const code = (err as { code?: unknown } | null)?.code;
  send({ type: 'failed', message: err instanceof Error ? err.message : String(err), code: typeof code === 'string' ? code : undefined });
}

let rows: Iterator<unknown[]> | null = null;
let batchRows = 1000;
let close: () => void = () => undefined;

// The parent gone (killed, crashed): nothing is left to read for.
process.on('disconnect', () => process.exit(0));
process.on('message', (message: ToStatementChild) => {
  try {
    if (message.type === 'start') {
      // Not openForReading(): the parent has checked the file and its schema, and a child that loads no drizzle
      // starts faster. openConnection() all the same, for a folder this user cannot write (read-without-shm.ts).
      const database = openConnection(message.db, { readonly: true });
      close = () => database.close();
      lockConnectionReadOnly(database.sqlite);
      rows = (prepareReadQuery(database.sqlite, message.sql).iterate() as IterableIterator<unknown[]>)[Symbol.iterator]();
      batchRows = message.batchRows;
      return;
    }
    const batch: unknown[][] = [];
    let done = false;
    while (batch.length < batchRows) {
      const next = rows!.next();
      if (next.done) {
        done = true;
        break;
      }
      batch.push(next.value);
    }
    send({ type: 'rows', rows: batch, done });
    if (done) close();
  } catch (err) {
    fail(err);
    close();
  }
});

