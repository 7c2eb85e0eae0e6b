import { existsSync } from 'node:fs';
import { openDatabase, type Database } from '../open.ts';
import { UsageError } from '../../errors.ts';
import type { PgStore } from '../pg/open.ts';

/** A read-only connection (`query_only` on); a file of an older netingest is upgraded first, nothing else written. */
export function openForReading(file: string): Database {
  if (!existsSync(file)) throw new UsageError(`no database at ${file}: nothing has run yet (see --db)`, 'DB_NOT_FOUND');
  return openDatabase(file, { readonly: true, upgradeOlderSchema: true });
}

/** Connections a reader opens: the snapshot's, and one to cancel the statement it runs. */
const PG_READER_CONNECTIONS = 2;

/** The PostgreSQL dataset for reading: no migration (a read-only role may open it); reads run READ ONLY. */
export async function openPgForReading(url: string): Promise<PgStore> {
  // Loaded here: a SQLite reader loads neither pg nor drizzle's pg-core.
  const { openPgStore } = await import('../pg/open.ts');
  return openPgStore(url, { readOnly: true, maxConnections: PG_READER_CONNECTIONS });
}
