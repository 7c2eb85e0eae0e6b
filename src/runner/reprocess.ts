/**
 * Rebuilds the normalized tables from raw_responses in one transaction (never half old, half new), no API call: bodies
 * replayed in id order, seenAt = received_at, through the run's contracts and store code, so an unchanged database ends
 * the same. A body archived with an error that now reads is stored and may settle its task (ReprocessReport.recovered).
 */
import { ApiSchemaError } from '../api/errors.ts';
import { parseJsonBody, readUsableAnswer } from '../api/schemas.ts';
import { openStore } from '../store/open-store.ts';
import { findSpec, readStored, type AnySubject } from '../operations/index.ts';
import { decodeRawBody } from '../store/raw-body.ts';
import type { ArchivedBody, ArchivedListEnd, ReprocessStore } from '../store/reprocess-store.ts';
import { terminalValue } from '../text-width.ts';

/** Options of the replay (replay, reprocessDatabase); every default here. */
export interface ReprocessOptions {
  /** Raw rows read per query. Default 200 (bodies can be large; this bounds memory). */
  batchSize?: number;
  /** Called after every batch with the number of bodies seen so far. */
  onProgress?: (seen: number) => void;
}

/** `maxListedInvalid`: how many rejected bodies the report lists in full. */
const DEFAULTS = { batchSize: 200, maxListedInvalid: 20 } as const;

/** A body that could not be replayed: its raw_responses id, request key, task, archived error code, and why. */
export type RejectedRaw = Pick<ArchivedBody, 'id' | 'operation' | 'requestKey' | 'taskId' | 'errorCode'> & { reason: string };

export interface ReprocessReport {
  /** raw_responses rows read. */
  responses: number;
  /** Bodies written back into the normalized tables. */
  replayed: number;
  /** Bodies left out: not JSON, no longer valid, or an unreadable request (counted, not fatal). */
  invalid: number;
  /** Of `invalid`, bodies archived as the wrong shape when received that still do not validate. */
  stillRejected: number;
  /** Bodies archived as the wrong shape when received that now validate: replayed and marked as answers. */
  recovered: number;
  /** Failed tasks set done by a recovered body (their latest outcome), with no call. */
  tasksRecovered: number;
  /** The first DEFAULTS.maxListedInvalid (20) of them. */
  rejected: RejectedRaw[];
  /** Normalized rows deleted before the replay. */
  rowsDeleted: number;
  /** False once `prune` dropped bodies: tables are not emptied (their rows could not be rebuilt) but replayed over. */
  rebuiltFromScratch: boolean;
  /** Row writes, inserts and updates alike: a row several bodies store counts once each, so it can exceed the rows. */
  rowsWritten: number;
}

/** The replay, in either engine's one transaction: tables emptied (unless bodies were pruned), bodies in id order. */
export async function replay(store: ReprocessStore, options: ReprocessOptions): Promise<ReprocessReport> {
  const opts = { ...DEFAULTS, ...options };
  const now = new Date().toISOString();
  const report: ReprocessReport = {
    responses: 0, replayed: 0, invalid: 0, stillRejected: 0, recovered: 0, tasksRecovered: 0, rejected: [], rowsDeleted: 0, rowsWritten: 0,
    rebuiltFromScratch: !(await store.bodiesWerePruned()),
  };
  if (report.rebuiltFromScratch) report.rowsDeleted = await store.clearNormalizedTables();
  // Rebuilt from the bodies with the rows (not counted among them: they are notes, not data).
  await store.clearKeptBodiesAnomalies();
  // Over tables kept (pruned bodies), the history is kept too: a 404 wrote no row, so it has nothing to rebuild.
  const listEndsBefore = report.rebuiltFromScratch ? listEndReplay(store, opts.batchSize) : async () => undefined;
  for (let lastId = 0; ; ) {
    const rows = await store.archivePage(lastId, opts.batchSize);
    if (rows.length === 0) break;
    for (const row of rows) {
      lastId = row.id;
      await listEndsBefore(row.receivedAt);
      report.responses++;
      try {
        const { rows: written, taskRecovered } = await replayOne(store, row, now);
        report.rowsWritten += written;
        report.replayed++;
        if (row.errorCode !== null) report.recovered++;
        if (taskRecovered) report.tasksRecovered++;
      } catch (err) {
        reject(report, row, describe(err, row.errorCode !== null));
      }
    }
    opts.onProgress?.(report.responses);
  }
  await listEndsBefore(null);
  return report;
}

/**
 * Replays the 404s that ended a paged list among the bodies, by time (a body first at the same time): a 404 keeps no
 * body, so its api_calls row and its task's request stand for it. The returned function replays those before `at`
 * (all that are left, for null).
 */
function listEndReplay(store: ReprocessStore, batchSize: number): (at: string | null) => Promise<void> {
  let page: ArchivedListEnd[] = [];
  let lastId = 0;
  let more = true;
  return async (at) => {
    for (;;) {
      if (page.length === 0 && more) {
        page = await store.listEndsPage(lastId, batchSize);
        more = page.length === batchSize;
        lastId = page.at(-1)?.id ?? lastId;
      }
      const next = page[0];
      if (next === undefined || (at !== null && next.at >= at)) return;
      page.shift();
      await replayListEnd(store, next);
    }
  };
}

/** One 404 that ended a list: what it removes, as the run recorded it; a task whose request no longer reads is left out. */
async function replayListEnd(store: ReprocessStore, end: ArchivedListEnd): Promise<void> {
  const spec = findSpec(end.operation);
  let request: AnySubject | undefined;
  try {
    request = spec?.subjectOf(end.inputKey, readStored(spec.request, end.requestJson, 'request_json'));
  } catch {
    return;
  }
  if (request) await store.storeListEnd({ request, runId: end.runId, taskId: end.taskId, at: end.at });
}

/** One body through its contract and the store, in a savepoint: a body that fails half-way leaves none of its rows. */
async function replayOne(store: ReprocessStore, row: ArchivedBody, now: string): Promise<{ rows: number; taskRecovered: boolean }> {
  const spec = findSpec(row.operation);
  if (spec === undefined) throw new Error(`unknown operation ${row.operation}`);
  const request = readStored(spec.subject, row.requestJson, 'request_json');
  const body = decodeRawBody(row.body, row.bodyEncoding);
  const { id: rawResponseId, requestKey, receivedAt: at, taskId, runId } = row;
  await store.savepoint();
  try {
    // The body read through its operation's contract as the client reads a live one (SyntaxError: not JSON).
    const { answer, setAside, lastPage } = readUsableAnswer(spec, parseJsonBody(body), { raw: body });
    // Whether the page ended the list, from the body alone: the history removes the later pages' members as live.
    const rows = await store.storeAnswer({ rawResponseId, runId, taskId, operation: spec.name, requestKey, request, answer, setAside, endsList: lastPage, at });
    // Only now, inside the same savepoint: a body that fails to validate or to normalize changes no task.
    let taskRecovered = false;
    if (row.errorCode !== null) {
      await store.acceptBody(row.id);
      taskRecovered = taskId !== null && (await store.markRecovered(taskId, row.id, row.errorCode, at, now));
    }
    await store.releaseSavepoint();
    return { rows, taskRecovered };
  } catch (err) {
    await store.rollbackToSavepoint();
    throw err;
  }
}

function reject(report: ReprocessReport, row: ArchivedBody, reason: string): void {
  report.invalid++;
  if (row.errorCode !== null) report.stillRejected++;
  if (report.rejected.length < DEFAULTS.maxListedInvalid) {
    const { id, operation, requestKey, taskId, errorCode } = row;
    report.rejected.push({ id, operation, requestKey, taskId, errorCode, reason });
  }
}

function describe(err: unknown, rejectedWhenReceived: boolean): string {
  if (err instanceof SyntaxError) return `not JSON: ${err.message}`;
  if (err instanceof ApiSchemaError) {
    return rejectedWhenReceived ? `still does not match the API's documented interface (its task stays failed): ${err.message}` : `no longer valid: ${err.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}

/**
 * `netingest reprocess` on `db` (an existing SQLite file or a postgres:// URL) under its lock as a run takes it, so no
 * run's writes interleave with the rebuild (PostgreSQL's dataset lock held exclusive: refused while any worker runs).
 */
export async function reprocessDatabase(db: string, options: ReprocessOptions = {}): Promise<ReprocessReport> {
  const store = await openStore(db);
  return store.reprocess((answers) => replay(answers, options));
}

/** The report as `netingest reprocess` prints it without --json. */
export function formatReprocessReport(r: ReprocessReport): string {
  const lines = [
    `Reprocessed ${r.responses} raw responses: ${r.replayed} replayed, ${r.invalid} skipped as invalid.`,
    r.rebuiltFromScratch
      ? `Normalized rows: ${r.rowsDeleted} deleted, then ${r.rowsWritten} row writes (inserts and updates: a row stored again counts again).`
      : `Normalized rows: ${r.rowsWritten} row writes over the tables as they were (prune dropped superseded bodies, so the rows built from them were kept, not rebuilt).`,
  ];
  if (r.recovered > 0) {
    lines.push(`Recovered ${r.recovered} bodies kept from wrong-shape answers: they validate now; ${r.tasksRecovered} failed tasks set done, no call made.`);
  }
  if (r.stillRejected > 0) {
    lines.push(`${r.stillRejected} bodies kept from wrong-shape answers still do not validate: their tasks stay failed (listed on stderr).`);
  }
  if (r.invalid > r.rejected.length) lines.push(`(${r.invalid - r.rejected.length} more invalid responses not listed)`);
  return lines.join('\n') + '\n';
}

/** One line per body left out, for stderr; V8's reason quotes the body, so its controls are blanked. */
export function rejectedLines(r: ReprocessReport): string[] {
  return r.rejected.map((rejected) => {
    const task = rejected.taskId === null ? '' : `, task ${rejected.taskId}`;
    return terminalValue(`raw response ${rejected.id} (${rejected.operation} ${rejected.requestKey}${task}) skipped: ${rejected.reason}`);
  });
}
