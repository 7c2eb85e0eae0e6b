import { z } from 'zod';
import { isAbsolute, resolve } from 'node:path';
import { JOB_DEFAULTS } from './defaults.ts';
import { JOB_DEFINITIONS, resolveJobOf, specOf, type AnyJob } from '../operations/index.ts';
import { JobFileError, type JobIssue } from './job-error.ts';
import { checkJobValue } from './format-issues.ts';
import { common, NAME_PATTERN, NAME_RULE, text, type JobCommon } from './job-common.ts';

export { KEEP_RAW_DAYS_RULE, RUN_SETTING_RULES } from './job-common.ts';

/** The one schema of a job definition, JSON or `.ts`: one branch per operation (common settings, input, request). */
export const jobDefinitionSchema = z.discriminatedUnion('operation', JOB_DEFINITIONS);

/** What every operation shares: checked too when the union cannot tell the operation (it then checks nothing else), to name all that is wrong. */
const anyOperation = z.strictObject({
  ...common,
  operation: z.unknown().optional(),
  input: z.strictObject({ csv: text, column: z.unknown().optional() }),
  request: z.unknown().optional(),
});

/** A job as written by the user; every field but operation and input is optional. */
export type JobDefinition = z.input<typeof jobDefinitionSchema>;

/** A loaded job: validated, every default filled in, paths resolved. */
export type Job = AnyJob;

/** Where a definition came from, for names, paths and messages. */
export interface ResolveContext {
  /** The job file as shown in messages (e.g. `jobs/leads.json`). */
  displayName: string;
  /** Absolute path of the job file, if any. */
  file?: string;
  /** Name used when the definition has none (the file's base name). */
  defaultName?: string;
  /** Directory that relative input paths resolve against; default process.cwd(). */
  cwd?: string;
}

/** The job's name: its own, else the file's; an issue when there is none or it breaks the rule. */
function jobName(own: string | undefined, fromFile: string | undefined, issues: JobIssue[]): string | undefined {
  const name = own ?? fromFile;
  if (name === undefined) issues.push({ field: 'name', message: 'is required (no file name to take it from)' });
  else if (!NAME_PATTERN.test(name)) {
    issues.push({ field: 'name', message: `"${name}" (taken from the file name) ${NAME_RULE}; set "name" in the job` });
  }
  return name;
}

/** The settings every operation's job shares, defaults filled in. */
function commonSettings(def: JobDefinition, name: string, file: string | undefined, retry: JobCommon['retry']): JobCommon {
  return {
    name,
    description: def.description,
    file,
    pages: def.pages ?? JOB_DEFAULTS.pages,
    rate: { ...JOB_DEFAULTS.rate, ...def.rate },
    retry,
    credits: {
      reserve: def.credits?.reserve ?? JOB_DEFAULTS.credits.reserve,
      maxPerRun: def.credits?.maxPerRun ?? JOB_DEFAULTS.credits.maxPerRun,
    },
    refreshAfterDays: def.refreshAfterDays ?? specOf(def.operation).refreshAfterDays,
    keepRawDays: def.keepRawDays ?? JOB_DEFAULTS.keepRawDays,
  };
}

/** Validates a definition and fills in every default; throws JobFileError naming the file and each bad field. */
export function resolveJob(value: unknown, ctx: ResolveContext): Job {
  const parsed = checkJobValue(jobDefinitionSchema, value);
  if (!parsed.success) {
    const shared = parsed.issues.some((i) => i.field === 'operation') ? checkJobValue(anyOperation, value) : undefined;
    throw new JobFileError(ctx.displayName, shared?.success === false ? [...parsed.issues, ...shared.issues] : parsed.issues);
  }
  const def = parsed.data;
  const issues: JobIssue[] = [];
  const name = jobName(def.name, ctx.defaultName, issues);
  const retry = { ...JOB_DEFAULTS.retry, ...def.retry };
  if (retry.minTimeoutMs > retry.maxTimeoutMs) {
    issues.push({ field: 'retry.minTimeoutMs', message: `must not exceed retry.maxTimeoutMs (${retry.maxTimeoutMs})` });
  }
  const csv = def.input.csv.trim();
  const csvPath = isAbsolute(csv) ? csv : resolve(ctx.cwd ?? process.cwd(), csv);
  const base = commonSettings(def, name ?? '', ctx.file, retry);
  const job = resolveJobOf(def, base, { csv, csvPath }, issues);
  if (issues.length > 0) throw new JobFileError(ctx.displayName, issues);
  return job;
}
