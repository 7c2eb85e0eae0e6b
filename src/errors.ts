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
