/**
 * The one place the engine is chosen: `--db` (locator.ts) gives the DatasetStore every command uses. PostgreSQL's is
 * loaded only for a postgres:// dataset: a SQLite command (the nightly case) never pays pg's and drizzle's import.
 */
import { normalize } from 'node:path';
import { UsageError } from '../errors.ts';
import type { DatasetStore } from './dataset-store.ts';
import { locateDataset, type DatasetLocation } from './locator.ts';
import { sqliteDatasetStore } from './sqlite/dataset-store.ts';

/** The store of `db`, a SQLite file (as the CLI normalized it) or a postgres:// URL; a UsageError (exit 2) for a value naming neither. */
export async function openStore(db: string | DatasetLocation): Promise<DatasetStore> {
  const location = typeof db === 'string' ? locateDataset({ db, env: {} }) : db;
  if (location.engine === 'sqlite') return sqliteDatasetStore(location.file);
  const { pgDatasetStore } = await import('./pg/dataset-store.ts');
  return pgDatasetStore(location.url, location.shownUrl);
}

/**
 * `copy --from`'s SQLite file. A postgres:// URL there (the direction mistaken, or $NETINGEST_DATABASE_URL given) is
 * refused with its password hidden: read as a file name, it was printed whole in "no database at ...".
 */
export function copySource(from: string): string {
  if (from.trim() === '') throw new UsageError('--from is empty: name the SQLite database file to copy');
  const source = locateDataset({ db: from, flag: '--from', env: {} });
  if (source.engine === 'postgres') {
    throw new UsageError(`--from ${source.shownUrl}: copy reads a SQLite file (--from) into PostgreSQL (--to); give the SQLite file to copy`);
  }
  return normalize(source.file);
}

/** `copy --to`'s PostgreSQL target, from `to` or else NETINGEST_DATABASE_URL; a UsageError if not a postgres:// URL. */
export function copyTarget(to: string | undefined): { url: string; shownUrl: string } {
  const target = locateDataset({ db: to, flag: '--to', env: to ? {} : process.env });
  if (target.engine !== 'postgres') {
    throw new UsageError(to ? `--to ${to}: give a postgres:// URL` : '--to is missing: give a postgres:// URL (or set NETINGEST_DATABASE_URL)');
  }
  return target;
}
