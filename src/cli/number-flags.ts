import { z } from 'zod';
import { UsageError } from '../errors.ts';
import { jobErrorMap } from '../jobs/format-issues.ts';
import { STATEMENT_DEFAULTS } from '../store/dataset-store.ts';
import { TABLE_DEFAULTS } from '../export/table-format.ts';

/**
 * A numeric flag read as typed (yargs would make `abc` NaN, which passes every limit check), shown as [number]
 * in --help: yargs' parser keeps a flag that is both a string and a number as a string, its help names the last.
 * Its default is only shown: the command applies it, for yargs would give a yargs default to the flag typed without
 * a value (`--keep-days --dry-run`), which numberFlag refuses.
 */
export function numberOption(describe: string, shownDefault?: number) {
  return { string: true, number: true, describe, ...(shownDefault === undefined ? {} : { defaultDescription: String(shownDefault) }) } as const;
}

/** A numeric flag checked by `rule` (undefined if absent), else a UsageError quoting it, worded as for the job-file `field` of that rule. */
export function numberFlag(flag: string, raw: unknown, rule: z.ZodType<number>, field?: string): number | undefined {
  if (raw === undefined) return undefined;
  const typed = String(raw).trim();
  if (typed === '') throw new UsageError(`${flag} needs a number`);
  const value = Number(typed);
  // The rule's complaint in the words job file errors use.
  const parsed = Number.isNaN(value) ? null : rule.safeParse(value, { error: jobErrorMap });
  if (parsed?.success) return value;
  const problem = parsed === null ? 'must be a number' : (parsed.error.issues[0]?.message ?? 'is not allowed');
  throw new UsageError(`${flag} ${typed}: ${field ? `${field} ` : ''}${problem}`);
}

/** `--timeout` of `query` and `export --sql`. */
export const TIMEOUT_OPTION = numberOption(
  `seconds the statement may run before it is stopped (exit 124); 0: no limit. Default: none on a terminal, ` +
    `${STATEMENT_DEFAULTS.unattendedTimeoutSeconds} without one (cron)`,
);

/** At most a week: a longer timer would overflow Node's (24.8 days) and fire at once. */
const TIMEOUT_SECONDS_RULE = z.number().min(0).max(7 * 86_400);

/** The statement's time limit in ms (0: none): --timeout, else none at a terminal (Ctrl-C), a limit under cron. */
export function sqlTimeoutMs(raw: unknown, stderr: NodeJS.WritableStream & { isTTY?: boolean }): number {
  const atTerminal = Boolean(process.stdin.isTTY || stderr.isTTY);
  const byDefault = atTerminal ? STATEMENT_DEFAULTS.terminalTimeoutSeconds : STATEMENT_DEFAULTS.unattendedTimeoutSeconds;
  return Math.round((numberFlag('--timeout', raw, TIMEOUT_SECONDS_RULE) ?? byDefault) * 1000);
}

/** `--max-width` of the commands that print query's table (query, changes). */
export const MAX_WIDTH_OPTION = numberOption('widest column of the table format, in characters', TABLE_DEFAULTS.maxColumnWidth);

/** `--max-width` as the table takes it: NaN would size every column NaN; any real number is clamped to a usable width. */
export function maxColumnWidthOf(raw: unknown): number {
  const width = numberFlag('--max-width', raw, z.number().min(1).max(10_000)) ?? TABLE_DEFAULTS.maxColumnWidth;
  return Math.max(TABLE_DEFAULTS.minColumnWidth, Math.trunc(width));
}
