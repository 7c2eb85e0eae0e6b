/**
 * `netingest enrich`: the job's input CSV row by row, then what the dataset holds for each row or why there is none.
 * The input is read and planned again with the runner's own code, so the keys agree with the ledger's.
 */
import type { Job } from '../jobs/schema.ts';
import { loadJob } from '../jobs/load.ts';
import type { PlannedItem } from '../jobs/plan-tasks.ts';
import { inputValues } from '../input/read-csv.ts';
import { readCsvHeader, type CsvDelimiter } from '../input/csv-header.ts';
import { assertOutputIsNotInput, jobInputs } from './output-is-not-input.ts';
import type { StepSnapshot } from '../store/dataset-store.ts';
import { openStore } from '../store/open-store.ts';
import { otherJobsWithOperationReads } from '../store/ledger.ts';
import { resultLookup } from '../store/readers/latest-answers.ts';
import { ENRICH_STATUSES, taskStatusReader, type CurrentRequests, type EnrichStatus, type MissingResult } from '../store/readers/enrich-status.ts';
import type { Reads } from '../store/read-steps.ts';
import { assertEncoderOptions, encoderFor } from './row-encoders.ts';
import { verifiedBy, writeRows } from './write-output.ts';
import type { ExportCommonOptions } from './export-table.ts';
import { assertTop, resultLayout, type EnrichRowMode } from './enrich-layout.ts';
import { invalidReason, plannedRows } from './invalid-rows-out.ts';
import { specOf } from '../operations/index.ts';
import { CHANGES_SINCE_COLUMNS, changesLookup } from '../store/readers/enrich-changes.ts';
import { parseChangesSince } from '../store/history/changes-query.ts';
import { UsageError } from '../errors.ts';

/** Bookkeeping columns between the input's columns and the results. */
export const ENRICH_STATUS_COLUMNS = ['netingest_line', 'netingest_status', 'netingest_error', 'netingest_input_key'] as const;

/** Options of enrichJob(): an export's, and these. */
export interface EnrichOptions extends Omit<ExportCommonOptions, 'bom'> {
  /** A job file (its input CSV is read again), or a job already loaded. */
  job: string | Job;
  /** One output row per input row (results in numbered columns) or per result. Default 'per-input'. */
  rows?: EnrichRowMode;
  /** per-input: how many results get numbered columns (the count column tells how many exist). Default 5. */
  top?: number;
  /** CSV only: the field delimiter. Default: the input's. */
  delimiter?: CsvDelimiter;
  /** CSV only: start with a UTF-8 byte-order mark, for Excel. Default: as the input does. */
  bom?: boolean;
  /** CSV only, for spreadsheets: a BOM, formulas escaped, a `'` before lossy numbers (keepText). Default false. */
  excel?: boolean;
  /** Directory a relative job path (and its input path) resolves against. Default process.cwd(). */
  cwd?: string;
  /** An ISO date or time (UTC without a zone): adds what the history recorded since (CHANGES_SINCE_COLUMNS). */
  changesSince?: string;
}

/**
 * Input rows looked up together: on PostgreSQL each round of their reads is one round trip (a row's reads one after
 * another were ~20x slower than SQLite); enough to amortize the trip, few enough that memory stays flat.
 */
export const ENRICH_CHUNK_ROWS = 256;

export const ENRICH_DEFAULTS = { format: 'csv', rows: 'per-input', top: 5, escapeFormulas: false, excel: false } as const satisfies Partial<EnrichOptions>;

/**
 * Writes a job's enriched lead list; nothing is left at `out` on failure. Reports the input rows read (blank lines
 * are not rows) and by status (a row with several results counts once, as ok).
 */
export async function enrichJob(options: EnrichOptions) {
  const format = options.format ?? ENRICH_DEFAULTS.format;
  const excel = options.excel ?? ENRICH_DEFAULTS.excel;
  const mode = options.rows ?? ENRICH_DEFAULTS.rows;
  assertTop(options.top, mode);
  const top = options.top ?? ENRICH_DEFAULTS.top;
  const changesSince = changesSinceOf(options.changesSince);
  const asked = {
    bom: options.bom ?? (excel || undefined),
    escapeFormulas: excel || (options.escapeFormulas ?? ENRICH_DEFAULTS.escapeFormulas),
    delimiter: options.delimiter,
    keepText: excel,
  };
  assertEncoderOptions(format, asked);
  const job = typeof options.job === 'string' ? await loadJob(options.job, { cwd: options.cwd }) : options.job;
  const store = await openStore(options.db);
  assertOutputIsNotInput(options.out, jobInputs(job, store.files));
  const header = await readCsvHeader(job.input.csvPath, { displayName: job.input.csv });
  // The reader drops columns without a name: nothing could refer to them.
  const inputColumns = header.columns.filter((c) => c !== '');
  // A JSON Lines file never starts with a BOM, whatever the input did.
  const encoderOptions = {
    ...asked,
    bom: asked.bom ?? (format === 'csv' && header.bom),
    delimiter: format === 'csv' ? (asked.delimiter ?? header.delimiter) : undefined,
  };
  // No statement time limit: the lookups of a large input take as long as they take.
  return store.read(write, { statementTimeoutMs: 0 });

  /** Every row, read from one snapshot of the dataset (its lookups and ledger agree), on either engine. */
  async function write(snapshot: StepSnapshot) {
    const lookup = resultLookup(job, [job.name, ...(await snapshot.read(otherJobsWithOperationReads(job.operation, job.name)))]);
    const tasks = taskStatusReader(job.name, job.operation);
    const layout = resultLayout(job.operation, lookup.columns, mode, top);
    const changes = changesSince === undefined ? undefined : changesLookup(job, changesSince);
    const columns = [...inputColumns, ...ENRICH_STATUS_COLUMNS, ...layout.columns, ...(changes ? CHANGES_SINCE_COLUMNS : [])];
    const noChanges = changes ? [null, null] : [];
    const statuses = Object.fromEntries(ENRICH_STATUSES.map((s) => [s, 0])) as Record<EnrichStatus, number>;
    let inputRows = 0;
    /** Input rows holding U+FFFD, what bytes that are not UTF-8 are read as (a Latin-1 export's umlauts): said after. */
    const notUtf8 = { rows: 0, firstLine: null as number | null };

    /** An input row as read: its cells and line, and its key and plan, or why it is invalid. */
    interface Lead { input: unknown[]; line: number; key: string | null; why: string; planned: readonly PlannedItem[] }
    /** What the dataset holds for a valid lead: its results, its changes, and the ledger's word on it. */
    type Found = { results: unknown[][]; changed: unknown[]; partial: string | null; missing: MissingResult | null };

    function leadOf(item: { line: number }, planned: readonly PlannedItem[], input: unknown[]): Lead {
      const first = planned[0];
      if (first !== undefined && first.kind !== 'invalid') return { input, line: item.line, key: first.inputKey, why: '', planned };
      // A malformed CSV row is among them: the planner refuses it as such.
      return { input, line: item.line, key: null, why: first?.kind === 'invalid' ? invalidReason(first) : 'not planned', planned };
    }

    /** One lead's reads, run with its chunk's (readEach): results, changes, then the ledger's status. */
    function* found(key: string, planned: readonly PlannedItem[]): Reads<Found> {
      const results = yield* lookup.find(key);
      const changed = changes ? yield* changes(key) : noChanges;
      if (results.length > 0) return { results, changed, partial: yield* tasks.partialError(key), missing: null };
      return { results, changed, partial: null, missing: yield* tasks.missing(key, currentRequests(job, key, planned)) };
    }

    /** A chunk's output rows in input order, its valid leads looked up together. */
    async function* chunkRows(chunk: readonly Lead[]): AsyncGenerator<unknown[]> {
      const answers = await snapshot.readEach(chunk.flatMap((l) => (l.key === null ? [] : [found(l.key, l.planned)])));
      let next = 0;
      for (const { input, line, key, why } of chunk) {
        if (key === null) {
          statuses.invalid_input++;
          yield [...input, line, 'invalid_input', why, null, ...layout.empty, ...noChanges];
          continue;
        }
        const { results, changed, partial, missing } = answers[next++]!;
        if (missing === null) {
          statuses.ok++;
          for (const result of layout.rows(results)) yield [...input, line, 'ok', partial, key, ...result, ...changed];
          continue;
        }
        statuses[missing.status]++;
        yield [...input, line, missing.status, missing.error, key, ...layout.empty, ...changed];
      }
    }

    async function* rows(): AsyncGenerator<unknown[]> {
      let chunk: Lead[] = [];
      for await (const { item, planned } of plannedRows(job, header)) {
        inputRows++;
        const input = inputValues(item, header.columns);
        if (input.some((v) => typeof v === 'string' && v.includes('\ufffd'))) {
          notUtf8.rows++;
          notUtf8.firstLine ??= item.line;
        }
        chunk.push(leadOf(item, planned, input));
        if (chunk.length < ENRICH_CHUNK_ROWS) continue;
        yield* chunkRows(chunk);
        chunk = [];
      }
      yield* chunkRows(chunk);
    }

    const result = await writeRows(rows(), encoderFor(format, columns, encoderOptions), verifiedBy(snapshot, options));
    return { ...result, columns, inputRows, statuses, notUtf8 };
  }
}

/** `--changes-since` as an ISO time, or undefined when not asked; a run id or `last` is `netingest changes`' alone. */
function changesSinceOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const since = parseChangesSince(text);
  if (since === null || !('at' in since)) throw new UsageError(`--changes-since ${text}: expected an ISO date or time such as 2026-11-27 or 2026-11-27T06:00Z`);
  return since.at;
}

/**
 * Each page's request as the job plans it now, JSON-encoded as the ledger compares it. A repeated input's are rebuilt
 * from its key (requestsOfKey); null when the key cannot give them (a search's hash): the stored ones count as current.
 */
function currentRequests(job: Job, inputKey: string, planned: readonly PlannedItem[]): CurrentRequests {
  const out: string[] = [];
  for (const item of planned) if (item.kind === 'task') out[item.page - 1] = JSON.stringify(item.request);
  if (out.length > 0) return out;
  return specOf(job.operation).requestsOfKey(job, inputKey)?.map((request) => JSON.stringify(request)) ?? null;
}
