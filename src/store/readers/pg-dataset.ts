/**
 * openDataset() on PostgreSQL: no migration (a read-only analyst role can open it), each query() one READ ONLY
 * transaction, rows as better-sqlite3 gives them (STORE_TYPES). Loaded only for a postgres:// dataset: it imports pg.
 */
import type pg from 'pg';
import { UsageError } from '../../errors.ts';
import { withPgReadSnapshot } from '../pg/read-snapshot.ts';
import { STORE_TYPES } from '../pg/reader-values.ts';
import type { PgDataset } from './dataset.ts';
import { openPgForReading } from '../pg/open.ts';
import { BadQueryError, WriteRefusedError } from './query-errors.ts';
import { asPgQueryError, checkPgReadQuery } from './read-only-sql.ts';

/** Opens the PostgreSQL dataset at `url`; its errors name it by the shown URL, never with the password. */
export async function openPgDataset(url: string): Promise<PgDataset> {
  const store = await openPgForReading(url);
  let closed = false;
  const query = async <Row>(sql: string, params: readonly unknown[] = []): Promise<Row[]> => {
    if (closed) throw new UsageError(`openDataset(): ${store.shownUrl} was closed; open it again to read`, 'DATASET_CLOSED');
    if (!Array.isArray(params)) {
      throw new BadQueryError("on PostgreSQL, parameters are $1, $2, ... given as an array; named ones (:name, $name, @name) are SQLite's");
    }
    try {
      checkPgReadQuery(sql);
      // No statement timeout (0), as `netingest query` without --timeout: SQLite's all() has none either.
      return await withPgReadSnapshot(store.pool, async ({ client }) => {
        // Extended protocol even without parameters: one statement only, so no `; COMMIT; DELETE ...` can end
        // the READ ONLY transaction and write after it (the simple protocol runs every statement of the text).
        const statement: pg.QueryConfig & { queryMode: 'extended' } = { text: sql, values: [...params], types: STORE_TYPES, queryMode: 'extended' };
        return (await client.query(statement)).rows as Row[];
      }, { statementTimeoutMs: 0 });
    } catch (err) {
      throw asDatasetError(err);
    }
  };
  return {
    engine: 'postgres',
    file: store.shownUrl,
    all: allOnPostgres as never,
    query,
    async close() {
      closed = true;
      await store.close();
    },
  };
}

function allOnPostgres(): never {
  throw new UsageError(
    'openDataset(): all() reads SQLite synchronously; on PostgreSQL use `await dataset.query(sql, params)` (it works on SQLite too)',
    'DATASET_ALL_ON_POSTGRES',
  );
}

/** A failure in SQLite's all() words: a BadQueryError for SQL to fix (mismatched $1, $2... too) or a refused write. */
function asDatasetError(err: unknown): unknown {
  const mapped = asPgQueryError(err);
  if (mapped instanceof WriteRefusedError) return new BadQueryError(mapped.message, { cause: err });
  if ((err as { code?: unknown } | null)?.code === '08P01' && err instanceof Error) {
    return new BadQueryError(`SQL error: ${err.message} (parameters: $1, $2, ... from the array)`, { cause: err });
  }
  return mapped;
}
