import { UsageError } from '../errors.ts';

/** One problem in a job file: the field as a dotted path (empty for the file as a whole) and what is wrong. */
export interface JobIssue {
  field: string;
  message: string;
}

/** A job file that cannot be used (syntax, schema, load failure, duplicate name): the user must fix it. */
export class JobFileError extends UsageError {
  /** The job file as shown to the user. */
  readonly file: string;
  readonly issues: readonly JobIssue[];

  constructor(file: string, issues: readonly JobIssue[], options?: { cause?: unknown }) {
    super(issues.map((i) => (i.field ? `${file}: ${i.field}: ${i.message}` : `${file}: ${i.message}`)).join('\n'), 'JOB_INVALID', options);
    this.file = file;
    this.issues = issues;
  }
}
