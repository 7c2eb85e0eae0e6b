import { UsageError } from '../errors.ts';
import { InputFileError } from '../input/input-error.ts';

/** One problem in a job file: the field as a dotted path (empty for the file as a whole) and what is wrong. */
export interface JobIssue {
  field: string;
  message: string;
  /** 1-based position in the file, when the problem has one (a JSON syntax error). */
  line?: number;
  column?: number;
}

/** A job file that cannot be used (syntax, schema, load failure, duplicate name): the user must fix it. */
export class JobFileError extends UsageError {
  /** `file`: the job file as shown to the user. */
  constructor(readonly file: string, readonly issues: readonly JobIssue[], options?: { cause?: unknown }) {
    super(issues.map((i) => formatJobIssue(file, i)).join('\n'), 'JOB_INVALID', options);
  }
}

/** `jobs/x.json: rate.concurrency: must be ...`, or `jobs/x.json:7:12: invalid JSON: ...` (the compiler's style). */
export function formatJobIssue(file: string, issue: JobIssue): string {
  const where = issue.line === undefined ? file : `${file}:${issue.line}${issue.column === undefined ? '' : `:${issue.column}`}`;
  return issue.field ? `${where}: ${issue.field}: ${issue.message}` : `${where}: ${issue.message}`;
}

/** Whether an error makes one job unusable (job or input file to fix), so it is skipped and the others run. */
export function isJobUnusable(err: unknown): err is JobFileError | InputFileError {
  return err instanceof JobFileError || err instanceof InputFileError;
}

/** Several problems as one error: itself if alone, else a message a line, under their shared code or USAGE. */
export function combineErrors(errors: readonly UsageError[]): UsageError {
  if (errors.length === 1) return errors[0]!;
  const codes = new Set(errors.map((e) => e.code));
  return new UsageError(errors.map((e) => e.message).join('\n'), codes.size === 1 ? errors[0]!.code : 'USAGE');
}
