import type { Argv } from 'yargs';

/** The default dataset, relative to the current directory. */
export const DEFAULT_DB = 'data/netingest.db';

/** `--db`, shared by every command that touches the dataset. */
export function withDb<T>(y: Argv<T>) {
  return y.option('db', {
    type: 'string',
    default: DEFAULT_DB,
    describe: 'SQLite database file (its folder is created when missing)',
    normalize: true,
  });
}

/** `--api-url` and `--token-file`, for commands that call the API. */
export function withApi<T>(y: Argv<T>) {
  return y
    .option('api-url', { type: 'string', describe: 'API base URL (default: $NETINGEST_API_URL)' })
    .option('token-file', { type: 'string', describe: 'file holding the API token (default: $NETINGEST_API_TOKEN)', normalize: true });
}

/** `--log-format`, for commands that log while they work. */
export function withLogFormat<T>(y: Argv<T>) {
  return y.option('log-format', {
    choices: ['text', 'json'] as const,
    default: 'text' as const,
    describe: 'log lines on stderr: text, or one JSON object per line',
  });
}
