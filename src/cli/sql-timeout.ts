import { z } from 'zod';
import { numberFlag, numberOption } from './number-flags.ts';
import { STATEMENT_DEFAULTS } from '../store/dataset-store.ts';

/** `--timeout` of `query` and `export --sql`. */
export const TIMEOUT_OPTION = numberOption(
  `seconds the statement may run before it is stopped (exit 124); 0: no limit. Default: none on a terminal, ` +
    `${STATEMENT_DEFAULTS.unattendedTimeoutSeconds} without one (cron)`,
);

/** At most a week: a longer timer would overflow Node's (24.8 days) and fire at once. */
const TIMEOUT_SECONDS_RULE = z.number().min(0).max(7 * 86_400);

/**
 * The statement's time limit in ms (0: none), from --timeout, else the default for where the command runs: none
 * when a user at a terminal (stdin or stderr is one) can stop it with Ctrl-C, an hour without one (cron).
 */
export function sqlTimeoutMs(raw: unknown, stderr: NodeJS.WritableStream & { isTTY?: boolean }): number {
  const atTerminal = Boolean(process.stdin.isTTY || stderr.isTTY);
  const byDefault = atTerminal ? STATEMENT_DEFAULTS.terminalTimeoutSeconds : STATEMENT_DEFAULTS.unattendedTimeoutSeconds;
  return Math.round((numberFlag('--timeout', raw, TIMEOUT_SECONDS_RULE) ?? byDefault) * 1000);
}
