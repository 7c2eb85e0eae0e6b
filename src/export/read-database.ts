import { openDatabase, type Database } from '../db/open.ts';
import { lockConnectionReadOnly } from './read-only-sql.ts';

/** Opens the dataset for reading only: a read-only connection with `query_only` on; never migrates. */
export function openForReading(file: string): Database {
  const database = openDatabase(file, { readonly: true });
  try {
    lockConnectionReadOnly(database.sqlite);
  } catch (err) {
    database.close();
    throw err;
  }
  return database;
}
