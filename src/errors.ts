import type { RunSummary } from './runner/run-summary.ts';

/** Base of every error netingest raises on purpose, with a stable `code` to match on; only the CLI maps exit codes. */
export class NetingestError extends Error {
  /** Stable, upper-snake identifier of the error kind. */
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad command-line usage, job file or input file: the user must fix something (exit 2). */
export class UsageError extends NetingestError {
  constructor(message: string, code = 'USAGE', options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** Missing or unsafe configuration (API URL, token): exit 2. */
export class ConfigError extends UsageError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'CONFIG', options);
  }
}

/**
 * A run whose end could not be written to its database (the connection lost, a write refused): its code and message
 * are the database error's (so it exits as that error does), `summary` what the process itself counted, to print.
 */
export class RunNotRecordedError extends NetingestError {
  constructor(
    readonly summary: RunSummary,
    error: { code: string; message: string },
  ) {
    super(error.code, error.message);
  }
}
