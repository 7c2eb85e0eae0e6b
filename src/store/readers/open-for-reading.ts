import { existsSync } from 'node:fs';
import { openDatabase, type Database } from '../open.ts';
import { UsageError } from '../../errors.ts';
import { lockConnectionReadOnly } from './read-only-sql.ts';

/**
 * Opens the dataset for reading only: a read-only connection with `query_only` on. A file an older netingest
 * wrote is upgraded first (openDatabase's upgradeOlderSchema); nothing else is ever written.
 */
export function openForReading(file: string): Database {
  if (!existsSync(file)) throw new UsageError(`no database at ${file}: nothing has run yet (see --db)`, 'DB_NOT_FOUND');
  const database = openDatabase(file, { readonly: true, upgradeOlderSchema: true });
  try {
    lockConnectionReadOnly(database.sqlite);
  } catch (err) {
    database.close();
    throw err;
  }
  return database;
}
