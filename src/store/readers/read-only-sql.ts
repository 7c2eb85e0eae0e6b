/**
 * User SQL for `query` and `export --sql`, locked to reading three times: a reading first keyword (which also refuses
 * ATTACH/DETACH and PRAGMA settings, read-only to SQLite), `stmt.readonly`, and a query_only connection.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { openConnection } from '../connection.ts';
import { BadQueryError, WriteRefusedError } from './query-errors.ts';

const READING_KEYWORDS = new Set(['SELECT', 'WITH', 'VALUES', 'EXPLAIN', 'PRAGMA']);
/**
 * The other keywords a SQLite statement can start with: all of them write or change the connection. A first word
 * in neither set is no statement at all (a typo such as `SELEC`): bad SQL, not a refused write.
 */
const WRITING_KEYWORDS = new Set([
  'ALTER', 'ANALYZE', 'ATTACH', 'BEGIN', 'COMMIT', 'CREATE', 'DELETE', 'DETACH', 'DROP', 'END', 'INSERT', 'REINDEX',
  'RELEASE', 'REPLACE', 'ROLLBACK', 'SAVEPOINT', 'UPDATE', 'VACUUM',
]);

/**
 * PRAGMAs that only report (an argument names a table, index or schema); each must also pass `stmt.readonly`. Not
 * `journal_mode`: SQLite prepares even its bare form as a write (`SELECT * FROM pragma_journal_mode` reads it).
 */
export const REPORTING_PRAGMAS: ReadonlySet<string> = new Set([
  'application_id', 'auto_vacuum', 'cache_size', 'collation_list', 'compile_options', 'data_version',
  'database_list', 'encoding', 'foreign_key_check', 'foreign_key_list', 'foreign_keys', 'freelist_count',
  'function_list', 'index_info', 'index_list', 'index_xinfo', 'integrity_check', 'module_list',
  'page_count', 'page_size', 'pragma_list', 'query_only', 'quick_check', 'schema_version', 'table_info', 'table_list',
  'table_xinfo', 'user_version',
]);
/** Of those, the ones whose argument is a name to report on, not a new value to set. */
const PRAGMAS_WITH_NAME_ARGUMENT = new Set([
  'foreign_key_check', 'foreign_key_list', 'index_info', 'index_list', 'index_xinfo', 'integrity_check',
  'quick_check', 'table_info', 'table_list', 'table_xinfo',
]);

const ALLOWED = 'only SELECT, WITH ... SELECT, VALUES, EXPLAIN and reporting PRAGMAs run';

/** Prepares `sql` in raw mode once it is known to only read and return rows; it comes back bound: run it without parameters. */
export function prepareReadQuery(sqlite: BetterSqlite3.Database, sql: string): BetterSqlite3.Statement<unknown[], unknown[]> {
  const { body, keyword } = firstKeyword(sql);
  if (WRITING_KEYWORDS.has(keyword)) {
    throw new WriteRefusedError(`refused: ${keyword} statements are not run here (read-only; ${ALLOWED})`);
  }
  if (!READING_KEYWORDS.has(keyword)) throw unknownStatement(sqlite, sql, keyword);
  if (keyword === 'PRAGMA') checkPragma(body);
  const stmt = prepareUserSql(sqlite, sql) as BetterSqlite3.Statement<unknown[], unknown[]>;
  if (!stmt.readonly) throw new WriteRefusedError(`refused: this statement writes to the database (read-only; ${ALLOWED})`);
  if (!stmt.reader) throw new BadQueryError(`this statement returns no rows; ${ALLOWED}`);
  try {
    // Nothing on the command line can fill a parameter; unbound, it would fail later as an internal error.
    stmt.bind();
  } catch (err) {
    throw new BadQueryError(
      `the statement has parameters (?, :name, $name), which nothing fills here; write the values into the SQL ` +
        `(${err instanceof Error ? err.message : String(err)})`,
      { cause: err },
    );
  }
  // A user's SQL may compute or read integers beyond 2^53, which JavaScript numbers would round: they come back
  // as bigints, and every encoder writes a bigint's exact digits.
  return stmt.raw(true).safeIntegers(true);
}

/** Starts `sql` (one statement: one snapshot) on a read-only connection of its own, as sqlite/statement-rows.ts's child does. */
export function openUserStatement(db: string, sql: string): { rows: Iterator<unknown[]>; close(): void } {
  // Not openForReading(): the parent has checked the file and its schema, and a child that loads no drizzle
  // starts faster. openConnection() all the same, for a folder this user cannot write (read-without-shm.ts).
  const database = openConnection(db, { readonly: true });
  try {
    const rows = (prepareReadQuery(database.sqlite, sql).iterate() as IterableIterator<unknown[]>)[Symbol.iterator]();
    return { rows, close: () => database.close() };
  } catch (err) {
    database.close();
    throw err;
  }
}

/** A first word that starts no statement: SQLite's own syntax error (the prepare runs nothing), else "unknown statement". */
function unknownStatement(sqlite: BetterSqlite3.Database, sql: string, keyword: string): BadQueryError {
  try {
    prepareUserSql(sqlite, sql);
  } catch (err) {
    return err as BadQueryError;
  }
  return new BadQueryError(`unknown statement '${keyword}'; ${ALLOWED}`);
}

/** A user's `sql` prepared (nothing runs); SQLite's refusal as a BadQueryError: SQL for the user to fix. */
export function prepareUserSql(sqlite: BetterSqlite3.Database, sql: string): BetterSqlite3.Statement {
  try {
    return sqlite.prepare(sql);
  } catch (err) {
    throw new BadQueryError(`SQL error: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
}

/** The statement without leading comments, and its first word in capitals; an empty statement is refused. */
function firstKeyword(sql: string): { body: string; keyword: string } {
  // Leading whitespace and comments: `-- ...` lines and block comments, either perhaps unclosed.
  const body = sql.replace(/^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?(?:\*\/|$))*/, '');
  if (body === '') throw new BadQueryError('the SQL statement is empty');
  return { body, keyword: (/^[A-Za-z]+/.exec(body)?.[0] ?? body.slice(0, 20)).toUpperCase() };
}

/**
 * PostgreSQL's keywords beyond SQLite's that write or change the session (TABLE and SHOW only read). The lock that
 * counts is the server's READ ONLY transaction, refusing any write (a DELETE inside a WITH: asPgQueryError).
 */
const PG_WRITING_KEYWORDS = new Set([
  ...WRITING_KEYWORDS, 'ABORT', 'CALL', 'CHECKPOINT', 'CLOSE', 'CLUSTER', 'COMMENT', 'COPY', 'DEALLOCATE', 'DECLARE',
  'DISCARD', 'DO', 'EXECUTE', 'FETCH', 'GRANT', 'IMPORT', 'LISTEN', 'LOAD', 'LOCK', 'MERGE', 'MOVE', 'NOTIFY',
  'PREPARE', 'REASSIGN', 'REFRESH', 'RESET', 'REVOKE', 'SECURITY', 'SET', 'START', 'TRUNCATE', 'UNLISTEN',
]);
const PG_ALLOWED = 'only SELECT, WITH ... SELECT, VALUES, TABLE, SHOW and EXPLAIN run';

/** Refuses, before it reaches PostgreSQL, a statement whose first word writes; the server judges the rest. */
export function checkPgReadQuery(sql: string): void {
  const { keyword } = firstKeyword(sql);
  if (PG_WRITING_KEYWORDS.has(keyword)) {
    throw new WriteRefusedError(`refused: ${keyword} statements are not run here (read-only; ${PG_ALLOWED})`);
  }
  if (keyword === 'PRAGMA') throw new BadQueryError(`PRAGMA is SQLite's; on PostgreSQL use SHOW or information_schema (${PG_ALLOWED})`);
}

/** SQLSTATE classes of SQL the user must fix (data, syntax or access, unsupported, cardinality, limits, functions). */
const PG_USER_ERROR_CLASSES = new Set(['22', '42', '0A', '21', '54', '2F', 'P0']);

/** A PostgreSQL error of a user's statement in the words SQLite's get: a write refused, or SQL to fix; others pass. */
export function asPgQueryError(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || code.length !== 5 || !(err instanceof Error)) return err;
  if (code === '25006') return new WriteRefusedError(`refused: this statement writes to the database (read-only; ${PG_ALLOWED}): ${err.message}`);
  if (PG_USER_ERROR_CLASSES.has(code.slice(0, 2))) return new BadQueryError(`SQL error: ${err.message}`, { cause: err });
  return err;
}

/** A SQLite error of a running user statement (bad cast, overflow, value too big) as a BadQueryError; others pass. */
export function asQueryError(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'SQLITE_TOOBIG') {
    return new BadQueryError(
      'the statement made a value larger than SQLite allows (string or blob too big); select less of it, for example with substr()',
      { cause: err },
    );
  }
  if (code === 'SQLITE_ERROR') {
    return new BadQueryError(`SQL error: ${(err as Error).message}`, { cause: err });
  }
  return err;
}

function checkPragma(body: string): void {
  const match = /^PRAGMA\s+(?:[A-Za-z_][\w]*\s*\.\s*)?([A-Za-z_]\w*)\s*(=|\()?/i.exec(body);
  const name = match?.[1]?.toLowerCase();
  if (!name || !REPORTING_PRAGMAS.has(name)) {
    throw new WriteRefusedError(`refused: PRAGMA ${name ?? ''} is not a reporting pragma (read-only; ${ALLOWED})`);
  }
  const argument = match?.[2];
  if (argument === '=' || (argument === '(' && !PRAGMAS_WITH_NAME_ARGUMENT.has(name))) {
    throw new WriteRefusedError(`refused: PRAGMA ${name} with a value changes a setting (read-only; ${ALLOWED})`);
  }
}
