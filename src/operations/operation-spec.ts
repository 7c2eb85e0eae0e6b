/**
 * The shape of one operation: all the planner, client, runner, store and `enrich` need to know of it, one typed object
 * per file; nothing outside src/operations names an operation (adding one: docs/architecture.md). Functions are methods
 * on purpose: the registry holds specs of different request and answer types, which generic code takes as one type.
 */
import type { z } from 'zod';
import type { CsvHeader } from '../input/csv-header.ts';
import type { JobCommon, JobInputFile } from '../jobs/job-common.ts';
import type { JobIssue } from '../jobs/job-error.ts';
import type { JobDefinition } from '../jobs/schema.ts';
import type { Operation } from '../spec/types.ts';
import type { AnswerContract } from './answer-contract.ts';
import type { DriftTally } from './drift.ts';
import type { ListPage, StoredAnswer, RowContext } from './stored-rows.ts';
import type { Reads } from '../statement.ts';

/** What a stored answer is filed under: the request it answers, as raw_responses.request_json holds it. */
export interface Subject { operation: Operation }

/** A starter: a job file and the CSV it reads (its `input.csv`), as paths relative to the folder `init` runs in. */
export interface Starter {
  /** Job file without extension, under jobs/; also the job's name. */
  name: string;
  definition: JobDefinition;
  csv: string;
}

/** One input row read: its key and the request of each page (index = page - 1), or why it makes no task. */
export type RowRead<Q> =
  | { ok: true; inputKey: string; requests: Q[] }
  | { ok: false; field: string | null; value: string | null; reason: string };

/** How a request goes on the wire: the path under the base URL (query included) and the body. */
export interface Sent {
  path: string;
  body: string | null;
  /** Whether the call carries `Content-Type: application/json` (api.md's examples send it on one GET too). */
  json: boolean;
}

/** An entity and key of the history (`changes.entity`, `changes.key`). */
export interface HistoryKey {
  entity: 'company' | 'post' | 'job' | 'lookalike' | 'search';
  key: string;
  /** Only that entity's `changed` rows count (a search's jobs: their coming and going is the search's own). */
  changedOnly?: boolean;
}

/**
 * One operation. Q: the request sent, A: the 200 body as its contract reads it, S: its Subject, J: its job, D: its job
 * definition (exported beside the spec for JOB_DEFINITIONS: read from the specs, the registry's types would be circular).
 */
export interface OperationSpec<Q = unknown, A = unknown, S extends Subject = Subject, J = unknown, D = unknown> {
  name: Operation;

  // ---- its job ----
  /** A checked definition as a job, every default filled in; `base` is what every job shares, `file` its input CSV. */
  resolveJob(definition: D, base: JobCommon, file: JobInputFile, issues: JobIssue[]): J;

  /** The job and input CSV `netingest init` writes for this operation (cli/commands/init.ts). */
  starter: Starter;

  // ---- planning: an input row becomes requests ----
  /** Days before a stored result is fetched again, when the job does not say. */
  refreshAfterDays: number;
  /** Prepares the reading of `job`'s input rows (checks the header: throws InputFileError for a missing column). */
  rowReader(job: J, header: CsvHeader): (record: Readonly<Record<string, string>>) => RowRead<Q>;
  /** An input's requests rebuilt from its key alone, as rowReader makes them; null when the key cannot (a hash). */
  requestsOfKey(job: J, inputKey: string): Q[] | null;

  // ---- the request ----
  /** Checks a request read back from the ledger (tasks.request_json), once per task. */
  request: z.ZodType<Q>;
  /** How it is sent; its method is the spec's (OPERATION_METHODS in src/spec/types.ts). */
  send(request: Q): Sent;

  // ---- the answer ----
  answer: AnswerContract;
  /** Whether a page ends the input's list; `asked` is undefined for a stored body read again (reprocess). */
  lastPage(asked: Q | undefined, answer: A, drift: DriftTally): boolean;
  /** Whether a 404's body is this operation's "nothing found" (else a gateway's page: the run stops). */
  notFound: {
    /** `body`: the 404 body when it is a JSON object, else null; `message`: its string `message`, else null. */
    isAnswer(body: Readonly<Record<string, unknown>> | null, message: string | null): boolean;
    /** What the body must be, for the message of a 404 that is not one. */
    shape: string;
    /** Whether the API's 404 body looks like a gateway's, so a job of only 404s is warned of. */
    ambiguous: boolean;
  };

  // ---- storing ----
  /** What an answer to `request` (for input `inputKey`) is filed under. */
  subjectOf(inputKey: string, request: Q): S;
  /** Checks a subject read back from raw_responses.request_json (reprocess). */
  subject: z.ZodType<S>;
  /** raw_responses.request_key of a subject: stable, human-readable. */
  requestKey(subject: S): string;
  /** The rows an answer stores, by public table and column names (docs/schema.md); a pure function. */
  rows(subject: S, answer: A, ctx: RowContext): StoredAnswer;
  /** A paged list's page the subject asks for, as its rows name it: a page with no row (empty, a 404) still ends the list. */
  listPage?(subject: S, networkHost: string): ListPage;

  // ---- enrich ----
  /** The result columns `enrich` appends, and how one input's results are read (docs/export.md: public names). */
  enrich: {
    /** The columns of one result, in the order lookup rows hold them. */
    columns: readonly string[];
    /** One-row-per-input mode: the column counting results and the fields numbered per result; null: one at most. */
    numbered: { count: string; fields: readonly string[] } | null;
    /** One input's result rows in `columns` order; `floors`: per page, rows last seen before it are not its latest answer's. */
    lookup(floors: (inputKey: string) => Reads<Array<string | null>>, job: J): (inputKey: string) => Reads<unknown[][]>;
    /**
     * Whether a stored task request (tasks.request_json) asks what `job` asks of this input and page: the tasks
     * of every job asking the same question count for the latest answer (store/readers/latest-answers.ts).
     */
    sameQuestion(job: J): (requestJson: string, inputKey: string, page: number) => boolean;
    /** Whether a done task whose input has no results means the dataset lost them (a post answer always holds one). */
    doneMeansResult: boolean;
    /** Where the history (`changes`) files what changed about one input, for `enrich --changes-since`. */
    changeKeys(job: J): (inputKey: string) => Reads<HistoryKey[]>;
  };
}
