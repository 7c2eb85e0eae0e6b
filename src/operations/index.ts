/** The registry of operations: each spec by its name, where code outside src/operations finds an operation's rules. */
import type { z } from 'zod';
import type { Operation } from '../spec/types.ts';
import type { OperationSpec, Subject } from './operation-spec.ts';
import type { JobCommon, JobInputFile } from '../jobs/job-common.ts';
import type { JobIssue } from '../jobs/job-error.ts';
import { postDetails, postDetailsJobDefinition, type PostDetailsJob } from './post-details.ts';
import { searchJobs, searchJobsJobDefinition, type SearchJobsJob } from './search-jobs.ts';
import { similarCompanies, similarCompaniesJobDefinition, type SimilarCompaniesJob } from './similar-companies.ts';

export const OPERATION_SPECS = {
  'similar-companies': similarCompanies,
  'post-details': postDetails,
  'search-jobs': searchJobs,
} as const satisfies Record<Operation, OperationSpec<unknown, unknown, Subject, unknown>>;

/** Each operation's branch of the job schema, in the registry's order (jobs/schema.ts makes the union). */
export const JOB_DEFINITIONS = [similarCompaniesJobDefinition, postDetailsJobDefinition, searchJobsJobDefinition] as const;

/** A job definition as the job schema reads it. */
export type AnyJobDefinition = z.output<(typeof JOB_DEFINITIONS)[number]>;

export type AnyJob = SimilarCompaniesJob | PostDetailsJob | SearchJobsJob;

/** A checked definition as a job of its operation (its spec's resolveJob). */
export function resolveJobOf(def: AnyJobDefinition, base: JobCommon, file: JobInputFile, issues: JobIssue[]): AnyJob {
  // The definition's `operation` picks the spec whose resolveJob takes that definition and gives that job.
  const resolve = OPERATION_SPECS[def.operation].resolveJob as (d: AnyJobDefinition, b: JobCommon, f: JobInputFile, i: JobIssue[]) => AnyJob;
  return resolve(def, base, file, issues);
}

/** The spec registered under each name, with its own types. */
export type SpecOf<O extends Operation> = (typeof OPERATION_SPECS)[O];

/** What each operation's answers are filed under (raw_responses.request_json), as a union. */
export type AnySubject = { [O in Operation]: ReturnType<SpecOf<O>['subjectOf']> }[Operation];

/** A spec as generic code takes it: its request and answer unknown until its schema or contract reads them. */
export type AnySpec = OperationSpec<unknown, unknown, AnySubject, unknown>;

/** The spec of `operation`, as generic code takes it. */
export function specOf(operation: Operation): AnySpec {
  return OPERATION_SPECS[operation] as unknown as AnySpec;
}

/** The spec of a name read from the dataset, or undefined when no operation has it. */
export function findSpec(name: string): AnySpec | undefined {
  return Object.hasOwn(OPERATION_SPECS, name) ? specOf(name as Operation) : undefined;
}

/** The lookup key (raw_responses.request_key) of a subject. */
export function requestKeyOf(subject: AnySubject): string {
  return specOf(subject.operation).requestKey(subject);
}

/**
 * A value stored as JSON text (tasks.request_json, raw_responses.request_json), checked by `schema`; returned as parsed,
 * not zod's reordered copy: the body sent and raw_responses.request_json keep the stored text.
 */
export function readStored<T>(schema: z.ZodType<T>, json: string, what: string): T {
  const value: unknown = JSON.parse(json);
  const checked = schema.safeParse(value);
  if (!checked.success) throw new Error(`stored ${what} is not a request of this operation`);
  return value as T;
}
