import { normalize } from 'node:path';
import type { Argv } from 'yargs';
import { DATABASE_URL_ENV, DEFAULT_DB, locateDataset } from '../store/locator.ts';
import { UsageError } from '../errors.ts';
import { givenTwice } from './given-twice.ts';

/** Where a command writes: injectable so tests can capture output without spawning a process. */
export interface CommandIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

/** One subcommand: yargs declares its flags; `run` returns the exit code (the CLI entry alone maps errors). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- yargs' Argv<A> is invariant in A; each command narrows it
export interface CommandSpec<A = any> {
  builder: (y: Argv) => Argv<A>;
  run: (argv: A, io: CommandIO) => Promise<number>;
}

/** Identity helper that keeps a command's argument type. */
export function defineCommand<A>(spec: CommandSpec<A>): CommandSpec<A> {
  return spec;
}

// The --help text says what a command really does with a missing `--db` file: only `run` creates it, a read command refuses it (exit 2).
const DB_DESCRIPTIONS = {
  create: 'SQLite database file (created, with its folder, when missing)',
  refuse: 'SQLite database file; it must exist (`netingest run` creates it)',
  'plan-empty': 'SQLite database file, read if it exists (none: planned as if nothing had run; never created)',
};

/** `--db`, a SQLite file or postgres:// URL: no yargs default or normalizing (a URL's `//` must stay); datasetOption() fills it in. */
export function withDb<T>(y: Argv<T>, whenMissing: keyof typeof DB_DESCRIPTIONS = 'refuse') {
  return y.option('db', {
    type: 'string',
    describe: `${DB_DESCRIPTIONS[whenMissing]}, or postgres://user@host:5432/database (default: $${DATABASE_URL_ENV}, else ${DEFAULT_DB})`,
  });
}

/** The dataset withDb's `--db` names: the PostgreSQL URL, or the SQLite file's normalized path. */
export function datasetOption(db: string | undefined): string {
  const location = locateDataset({ db });
  return location.engine === 'postgres' ? location.url : normalize(location.file);
}

/**
 * A file to write (`--out`, `--invalid-out`), normalized. Empty (`--out` given no value, `--out "$UNSET_VAR"`) is
 * refused: normalized it names the current folder, and a default in its place writes where nobody asked.
 */
export function outputFileOption(flag: string, describe: string) {
  return {
    type: 'string',
    describe,
    coerce: (value: string | string[] | undefined) => {
      if (typeof value === 'string' && value.trim() === '') throw new UsageError(`${flag} is empty: name the file to write`);
      return value === undefined ? value : pathCoerce(flag)(value);
    },
  } as const;
}

/** A path flag normalized as yargs' `normalize: true` would, which throws a TypeError on a flag given twice. */
export function pathCoerce(flag: string) {
  // yargs coerces only a flag present (given, or its default).
  return (value: string | string[]): string => {
    if (Array.isArray(value)) throw givenTwice(flag, value);
    return normalize(value);
  };
}

/** `--api-url` and `--token-file`, for commands that call the API. */
export function withApi<T>(y: Argv<T>) {
  return y
    .option('api-url', { type: 'string', describe: 'API base URL (default: $NETINGEST_API_URL)' })
    .option('token-file', { type: 'string', describe: 'file holding the API token (default: $NETINGEST_API_TOKEN)', coerce: pathCoerce('--token-file') });
}

/** `--log-format`, for commands that log while they work. */
export function withLogFormat<T>(y: Argv<T>) {
  return y.option('log-format', {
    choices: ['text', 'json'] as const,
    default: 'text' as const,
    describe: 'log lines on stderr: text, or one JSON object per line',
  });
}

/** `--bom` of the commands that write CSV for people (export, enrich, query): the spreadsheet case. */
export const BOM_OPTION = {
  type: 'boolean',
  default: false,
  describe: 'CSV only: start the file with a UTF-8 byte-order mark, so that Excel shows non-ASCII text right',
} as const;

/** `--escape-formulas` of the commands that write CSV (export, enrich, query): the spreadsheet case again. */
export const ESCAPE_FORMULAS_OPTION = {
  type: 'boolean',
  default: false,
  describe:
    "CSV only: put a ' before text starting with = + - @, tab or carriage return, so that a spreadsheet shows it instead of running it as a formula",
} as const;
