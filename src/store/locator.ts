/**
 * Which engine holds the dataset: `--db postgres://...` (or `postgresql://`), else NETINGEST_DATABASE_URL, selects
 * PostgreSQL; a file path or nothing keeps SQLite. Parses and validates only.
 */
import { UsageError } from '../errors.ts';
import { hasAtAfterAuthority, isPostgresUrl, looksLikeMistypedUrl, redactDatabaseUrl } from './pg/database-url.ts';

export const DATABASE_URL_ENV = 'NETINGEST_DATABASE_URL';

/** The SQLite file, relative to the current directory, when neither `--db` nor NETINGEST_DATABASE_URL names one. */
export const DEFAULT_DB = 'data/netingest.db';

export type DatasetLocation =
  | { engine: 'sqlite'; file: string }
  /** `url` is the URL to connect with; `shownUrl` the one to print (password hidden). */
  | { engine: 'postgres'; url: string; shownUrl: string };

export interface LocateDatasetOptions {
  db?: string;
  /** The flag `db` came from, as messages name it (`copy --to`). @default '--db' */
  flag?: string;
  /** Where NETINGEST_DATABASE_URL is read from. */
  env?: Readonly<Record<string, string | undefined>>;
}

const DEFAULTS = { env: process.env, flag: '--db' };

/** libpq's sslmode values, and node-postgres's own `no-verify`. */
const SSL_MODES = new Set(['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify']);

/** Where the dataset is; a UsageError (exit 2) for a value that cannot be one. */
export function locateDataset(options: LocateDatasetOptions = {}): DatasetLocation {
  const opts = { ...DEFAULTS, ...options };
  const db = opts.db?.trim();
  if (db) return fromDbOption(db, opts.flag);
  // Given but empty (`--db "$UNSET_VAR"`): not the default dataset, which a cron line meant for another would write to.
  if (db === '') throw new UsageError(`${opts.flag} is empty: give a SQLite file path or a postgres:// URL (or leave ${opts.flag} out for ${DEFAULT_DB})`);
  const envUrl = opts.env[DATABASE_URL_ENV]?.trim();
  if (envUrl) {
    if (!isPostgresUrl(envUrl)) {
      throw new UsageError(`${DATABASE_URL_ENV} must be a postgres:// or postgresql:// URL (got ${redactDatabaseUrl(envUrl)}); for a SQLite file use --db <file>`);
    }
    return postgresLocation(envUrl, DATABASE_URL_ENV);
  }
  return { engine: 'sqlite', file: DEFAULT_DB };
}

function fromDbOption(db: string, flag: string): DatasetLocation {
  if (isPostgresUrl(db)) return postgresLocation(db, flag);
  // `mysql://...` or `sqlite://...` as a file name is surely a mistake, not a folder named "mysql:".
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(db);
  if (scheme) {
    throw new UsageError(`${flag} ${redactDatabaseUrl(db)}: ${scheme[1]}:// is not a database netingest can use; give a SQLite file path or a postgres:// URL`);
  }
  if (looksLikeMistypedUrl(db)) {
    throw new UsageError(`${flag} ${redactDatabaseUrl(db)}: not a postgres:// URL (postgres://user:password@host:5432/database), and not taken for a SQLite file's path`);
  }
  return { engine: 'sqlite', file: db };
}

function postgresLocation(url: string, source: string): DatasetLocation {
  const shownUrl = redactDatabaseUrl(url);
  const invalid = (why: string) => new UsageError(`${source} ${shownUrl}: ${why}`);
  const notValid = invalid('not a valid URL (postgres://user:password@host:5432/database; percent-encode special characters in the password)');
  // A `/`, `?` or `#` in the password would be read as the start of the path or query: the parts quoted below
  // would then hold pieces of the password.
  if (hasAtAfterAuthority(url)) throw notValid;
  // `user:password@` and no host, a `host=` parameter naming it (a Unix socket's folder, as Cloud SQL's proxy has it):
  // node-postgres takes it, a URL parser does not, so it is read with the parameter as its host.
  const noHost = /^(postgres(?:ql)?:\/\/[^/?#]*@)(?=[/?#])/i.exec(url);
  const parsed = noHost ? urlOrNull(`${noHost[1]!}host-parameter${url.slice(noHost[1]!.length)}`) : urlOrNull(url);
  if (!parsed) throw notValid;
  if ((noHost || !parsed.hostname) && !parsed.searchParams.get('host')) throw invalid('names no host');
  // node-postgres decodes them as it connects: a stray `%` would stop it there with "URI malformed".
  if (![parsed.username, parsed.password, parsed.pathname].every(decodes)) {
    throw invalid('holds a % not followed by two hex digits (write a % in the user, password or database name as %25)');
  }
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (!database) throw invalid('names no database (postgres://host:5432/<database>)');
  if (database.includes('/')) throw invalid(`"${database}" is not a database name`);
  const sslmode = parsed.searchParams.get('sslmode');
  if (sslmode !== null && !SSL_MODES.has(sslmode)) throw invalid(`sslmode=${sslmode} is not one of ${[...SSL_MODES].join(', ')}`);
  return { engine: 'postgres', url, shownUrl };
}

const decodes = (part: string): boolean => {
  try {
    decodeURIComponent(part);
    return true;
  } catch {
    return false;
  }
};

const urlOrNull = (text: string): URL | null => (URL.canParse(text) ? new URL(text) : null);
