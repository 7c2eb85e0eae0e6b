import { NetingestError } from '../errors.ts';

/** Codes of the errors raised while opening or migrating the database. */
export type DatabaseErrorCode =
  | 'DB_TOO_NEW'
  | 'DB_NEEDS_MIGRATION'
  | 'DB_CORRUPT'
  | 'DB_READONLY'
  | 'DB_LOCKED'
  | 'DB_NOT_FOUND'
  | 'DB_NOT_NETINGEST'
  | 'DB_OPEN_FAILED'
  | 'DB_WRITE_FAILED'
  /** A PostgreSQL server that went away while a command used it (pg/open.ts connectionLostError). */
  | 'DB_CONNECTION_LOST'
  | 'DB_CHANGED';

/** The database file cannot be used as it is; the message names the file and what to do. Fatal for a run. */
export class DatabaseError extends NetingestError {
  declare readonly code: DatabaseErrorCode;

  constructor(code: DatabaseErrorCode, readonly file: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** The file was written by a newer netingest: it has migrations this build does not know (`createdAt`: ms since the epoch). */
export class DatabaseTooNewError extends DatabaseError {
  constructor(file: string, unknownMigrations: ReadonlyArray<{ hash: string; createdAt: number }>) {
    const named = unknownMigrations.map((m) => `${new Date(m.createdAt).toISOString()} (${m.hash.slice(0, 12)})`);
    super(
      'DB_TOO_NEW',
      file,
      `database ${file} was created or upgraded by a newer version of netingest ` +
        `(unknown migrations: ${named.join(', ')}); upgrade netingest to use it`,
    );
  }
}

/** Read-only open of a database that still needs migrating. */
export class DatabaseNeedsMigrationError extends DatabaseError {
  constructor(
    file: string,
    /** True when the file holds an older netingest schema (false: a blank SQLite file). */
    readonly olderSchema = false,
    /** Why upgrading it on the spot failed, when that was tried. */
    upgradeFailure?: string,
  ) {
    super(
      'DB_NEEDS_MIGRATION',
      file,
      upgradeFailure !== undefined
        ? `database ${file} was written by an older netingest and must be upgraded to this version's schema ` +
            `before it can be read; upgrading it failed: ${upgradeFailure}`
        : olderSchema
          ? `database ${file} needs upgrading to this version's schema, which a read-only open cannot do; ` +
            `run a command that writes (e.g. netingest run) or open it without read-only first`
          : // An empty file (a `touch`, a failed copy): "upgrading" would send the user looking for an old version.
            `database ${file} holds no netingest tables (an empty or blank SQLite file), and a read-only command ` +
            `does not create them: there is nothing to read until \`netingest run --db ${file}\` has filled it`,
    );
  }
}

/** The file or its folder cannot be written. */
export class DatabaseReadonlyError extends DatabaseError {
  constructor(file: string, detail: string, options?: { cause?: unknown }) {
    super(
      'DB_READONLY',
      file,
      `database ${file} cannot be written (${detail}); check the permissions of the file and its folder`,
      options,
    );
  }
}

/** A read-only open, in an unwritable folder, of a database with writes still in its -wal: reading it needs a -shm. */
export class DatabaseWalUnreadableError extends DatabaseError {
  constructor(file: string, detail: string, options?: { cause?: unknown }) {
    super(
      'DB_READONLY',
      file,
      `database ${file} cannot be read by this user (${detail}): its latest writes are still in ${file}-wal, which ` +
        `SQLite reads only through ${file}-shm, and this user cannot create that file in the database's folder; ` +
        'read it once no run is writing it (a run that ends moves its writes into the database), or as a user who ' +
        'can write the folder',
      options,
    );
  }
}

/** A lock-free read (read-without-shm.ts) saw the file change: what it read may be inconsistent, so nothing is kept. */
export class DatabaseChangedError extends DatabaseError {
  constructor(file: string, options?: { cause?: unknown }) {
    super(
      'DB_CHANGED',
      file,
      `database ${file} changed while this command read it (most likely a run writing to it); since this user ` +
        'cannot write its folder, it was read without SQLite\'s locks, so what was read may be inconsistent: no ' +
        '--out file was written and rows already printed cannot be trusted; run the command again',
      options,
    );
  }
}
