import { existsSync } from 'node:fs';
import { openDatabase, type Database } from '../open.ts';
import { UsageError } from '../../errors.ts';
import type { PgStore } from '../pg/open.ts';

/**
 * Opens the dataset for reading only: a read-only connection with `query_only` on. A file an older netingest
 * wrote is upgraded first (openDatabase's upgradeOlderSchema); nothing else is ever written.
 */
export function openForReading(file: string): Database {
  if (!existsSync(file)) throw new UsageError(`no database at ${file}: nothing has run yet (see --db)`, 'DB_NOT_FOUND');
  return openDatabase(file, { readonly: true, upgradeOlderSchema: true });
}

/** Connections a reader opens: the snapshot's, and one to cancel the statement it runs. */
const PG_READER_CONNECTIONS = 2;

/**
 * Opens the PostgreSQL dataset at `url` for reading only: nothing is migrated or written (a read-only role can
 * open it); every read then runs in a READ ONLY transaction (withReadSnapshot).
 */
export async function openPgForReading(url: string): Promise<PgStore> {
  // Loaded here: a SQLite reader loads neither pg nor drizzle's pg-core.
  const { openPgStore } = await import('../pg/open.ts');
  return openPgStore(url, { readOnly: true, maxConnections: PG_READER_CONNECTIONS });
}
