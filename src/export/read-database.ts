import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { openDatabase, type Database } from '../db/open.ts';
import { UsageError } from '../errors.ts';
import { lockConnectionReadOnly } from './read-only-sql.ts';

/** Opens the dataset for reading only: a read-only connection with `query_only` on; never migrates. */
export function openForReading(file: string): Database {
  if (!existsSync(file)) throw new UsageError(`no database at ${file}: nothing has run yet (see --db)`, 'DB_NOT_FOUND');
  const database = openDatabase(file, { readonly: true });
  try {
    lockConnectionReadOnly(database.sqlite);
  } catch (err) {
    database.close();
    throw err;
  }
  return database;
}

/**
 * Refuses an --out that would replace a file the command reads (the database, its WAL files, the job's input
 * CSV): the rename at the end would destroy it.
 */
export function assertOutputIsNotInput(out: string | undefined, inputs: ReadonlyArray<{ path: string; what: string }>): void {
  if (out === undefined) return;
  const target = resolve(out);
  for (const { path, what } of inputs) {
    const input = resolve(path);
    if (target === input || target === `${input}-wal` || target === `${input}-shm` || target === `${input}-journal`) {
      throw new UsageError(`--out ${out} is the ${what}: writing there would destroy it; choose another file`, 'OUT_IS_INPUT');
    }
  }
}
