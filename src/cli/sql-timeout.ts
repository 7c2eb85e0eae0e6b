import { z } from 'zod';
import { numberFlag, numberOption } from './number-flags.ts';
import { defaultTimeoutSeconds, STATEMENT_DEFAULTS } from '../store/dataset-store.ts';

/** `--timeout` of `query` and `export --sql`. */
export const TIMEOUT_OPTION = numberOption(
  `seconds the statement may run before it is stopped (exit 124); 0: no limit. Default: none on a terminal, ` +
    `${STATEMENT_DEFAULTS.unattendedTimeoutSeconds} without one (cron)`,
);

/** At most a week: a longer timer would overflow Node's (24.8 days) and fire at once. */
const TIMEOUT_SECONDS_RULE = z.number().min(0).max(7 * 86_400);

/** The statement's time limit in ms (0: none), from --timeout or the default for where the command runs. */
export function sqlTimeoutMs(raw: unknown, atTerminal: boolean): number {
  const seconds = numberFlag('--timeout', raw, TIMEOUT_SECONDS_RULE) ?? defaultTimeoutSeconds(atTerminal);
  return Math.round(seconds * 1000);
}

/** Whether a user at a terminal can stop the command with Ctrl-C: stdin or stderr is one. */
export function atTerminal(stderr: NodeJS.WritableStream & { isTTY?: boolean }): boolean {
  return Boolean(process.stdin.isTTY || stderr.isTTY);
}
