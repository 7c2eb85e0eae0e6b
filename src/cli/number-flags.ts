import type { z } from 'zod';
import { UsageError } from '../errors.ts';
import { jobErrorMap } from '../jobs/format-issues.ts';

/**
 * Declares a numeric flag as a string: yargs would turn `abc` into NaN, and NaN passes every `<`/`>` check a
 * limit makes, silently switching the limit off. As a string, numberFlag sees what was typed and can quote it.
 */
export function numberOption(describe: string) {
  return { type: 'string' as const, describe };
}

/**
 * The value of a numeric flag checked by `rule` (undefined when the flag is absent); anything else is a
 * UsageError naming the flag and the value as typed. `field` names the job file field the flag stands for, whose
 * rule it shares, so that the message reads like the one a job file gets.
 */
export function numberFlag(flag: string, raw: unknown, rule: z.ZodType<number>, field?: string): number | undefined {
  if (raw === undefined) return undefined;
  // yargs makes an array of a flag given twice: neither value can be assumed to be the one meant.
  if (Array.isArray(raw)) throw new UsageError(`${flag} is given more than once (${raw.join(', ')}): give it once`);
  const typed = String(raw).trim();
  if (typed === '') throw new UsageError(`${flag} needs a number`);
  const value = Number(typed);
  const problem = Number.isNaN(value) ? 'must be a number' : ruleProblem(rule, value);
  if (problem === null) return value;
  throw new UsageError(`${flag} ${typed}: ${field ? `${field} ` : ''}${problem}`);
}

/** The rule's complaint about a value, in the words job file errors use; null when the value passes. */
function ruleProblem(rule: z.ZodType<number>, value: number): string | null {
  const parsed = rule.safeParse(value, { error: jobErrorMap });
  return parsed.success ? null : (parsed.error.issues[0]?.message ?? 'is not allowed');
}
