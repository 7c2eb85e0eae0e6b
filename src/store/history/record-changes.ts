/**
 * What a group of answers changes, for both engines: each answer compares with the state the one before left, so two on
 * one company compare in turn. Writes nothing: the caller inserts `changes` and deletes `withdrawn`.
 */
import type { ListPage, Row, RowWrite } from '../../operations/stored-rows.ts';
import { rows, type Reads } from '../read-steps.ts';
import type { StoredRow } from '../tables.ts';
import { TRACKING, type ChangeKind, type EntityTracking, type HistoryEntity, type ListTracking, type SetTracking } from './tracking.ts';
import { byShape, sql, param, literal, fragment, paramList } from '../../statement.ts';

export interface AnswerWrites {
  writes: readonly RowWrite[];
  runId: number | null;
  taskId: number | null;
  /** When the answer was received (ISO-8601 UTC): the change's `at`. */
  at: string;
  /** Its page ends the list (its contract's lastPage, or a 404): the members last seen on later pages are no longer in it. */
  endsList?: boolean | undefined;
  /** The list's page it answers (listPageOf): a page ending the list with no row is known by it alone. */
  list?: ListPage | undefined;
}

type Keyed = RowWrite | ListPage;

/** One row of the `changes` table as recorded (its id comes with the insert), its entity and change typed. */
export type ChangeRow = Omit<StoredRow<'changes'>, 'id' | 'entity' | 'change'> & { entity: HistoryEntity; change: ChangeKind };

export interface RecordedChanges {
  changes: ChangeRow[];
  /** Ids of `removed` rows an earlier commit of this pass over a list recorded for a member found on another page. */
  withdrawn: number[];
}

/** Keys per statement: well under SQLite's 32,766 and PostgreSQL's 65,535 parameters. */
const KEYS_PER_READ = 500;
const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/**
 * The stored rows under the keys read so far, by table and key value, kept as the answers recorded leave them; under
 * removalsOf(entity), by list, each member's latest `removed` (rows of `old` and `at`).
 */
type State = Map<string, Map<string, Row[]>>;

const removalsOf = (entity: string) => `changes\u0000${entity}`;

/**
 * State is read the first time a key comes up (before the group wrote it: a writer reads first), then kept in memory,
 * so the group's rows may be written in between, in batches. One recorder per transaction.
 */
export class ChangeRecorder {
  private readonly state: State = new Map();
  private out: RecordedChanges = { changes: [], withdrawn: [] };

  *prefetch(writes: readonly Keyed[]): Reads<void> {
    yield* readState(writes, this.state);
  }

  /** Records what `answer` changes; call it before its rows are written. */
  *record(answer: AnswerWrites): Reads<void> {
    yield* readState(answer.list ? [...answer.writes, answer.list] : answer.writes, this.state);
    yield* recordAnswer(answer, this.state, this.out);
  }

  /** What was recorded since the last take, for the writer to store (writeChanges, or its own statements). */
  take(): RecordedChanges {
    const out = this.out;
    this.out = { changes: [], withdrawn: [] };
    return out;
  }
}

/** Records and writes what `answer` changes: run before its rows are written, in the same transaction. */
export function* storeChanges(answer: AnswerWrites): Reads<void> {
  const recorder = new ChangeRecorder();
  yield* recorder.record(answer);
  yield* writeChanges(recorder.take());
}

function readColumn(t: EntityTracking | SetTracking | ListTracking): string {
  return t.kind === 'entity' ? t.key : t.kind === 'set' ? t.owner : t.by;
}

/** `SELECT *` of a table by a count of keys of one column (key: table, column and count joined by NULs). */
const readByKeys = byShape((key: string) => {
  const [table, column, count] = key.split('\u0000') as [string, string, string];
  return sql`SELECT * FROM ${literal(table)} WHERE ${literal(column)} IN (${paramList(Number(count))})`;
});

/** Each member's latest `removed` change of an entity's lists (a count of list keys). */
const readRemovals = byShape((count: number) =>
  sql`SELECT key, old, max(at) AS at FROM changes WHERE entity = ${param} AND change = 'removed' AND key IN (${paramList(count)}) GROUP BY key, old`);

/**
 * Adds to `state` the latest removals of the lists `writes` names that it lacks: a member a page ending the list
 * removed keeps its row (on its last page), so only the removal tells it is gone. Read by keys alone, as the rows.
 */
function* readListRemovals(writes: readonly Keyed[], state: State): Reads<void> {
  const wanted = new Map<HistoryEntity, Set<string>>();
  for (const w of writes) {
    const t = TRACKING[w.table];
    if (t?.kind !== 'list' || !('row' in w) || state.get(removalsOf(t.entity))?.has(t.listOf(w.row))) continue;
    entry(wanted, t.entity, () => new Set<string>()).add(t.listOf(w.row));
  }
  for (const [entity, lists] of wanted) {
    const read = (keys: string[]) => rows<Row>(readRemovals(keys.length), [entity, ...keys]);
    yield* readByKey(entry(state, removalsOf(entity), () => new Map()), lists, 'key', read);
  }
}

/** Adds to `state` the stored rows under keys of `writes` it lacks (one statement per table and 500 keys). */
function* readState(writes: readonly Keyed[], state: State): Reads<void> {
  yield* readListRemovals(writes, state);
  for (const [table, values] of unreadKeys(writes, state)) {
    const column = readColumn(TRACKING[table]!);
    if (!IDENTIFIER.test(table) || !IDENTIFIER.test(column)) throw new Error(`internal: cannot read ${table}.${column}`);
    const read = (keys: string[]) => rows<Row>(readByKeys(`${table}\u0000${column}\u0000${keys.length}`), keys);
    yield* readByKey(entry(state, table, () => new Map()), values, column, read);
  }
}

/** Reads the rows of `keys` (KEYS_PER_READ a statement) into `byKey` by their `column`, each key first set to none. */
function* readByKey(byKey: Map<string, Row[]>, keys: Set<string>, column: string, read: (keys: string[]) => Reads<Row[]>): Reads<void> {
  for (const key of keys) byKey.set(key, []);
  for (const slice of slices([...keys], KEYS_PER_READ)) {
    for (const row of yield* read(slice)) byKey.get(String(row[column]))?.push(row);
  }
}

function* slices<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}

/** The value of `key` in `map`, made and set first when it has none. */
function entry<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  return map.get(key) ?? map.set(key, make()).get(key)!;
}

/** Per followed table, the keys of `writes` that `state` holds nothing for yet. */
function unreadKeys(writes: readonly Keyed[], state: State): Map<string, Set<string>> {
  const wanted = new Map<string, Set<string>>();
  for (const w of writes) {
    const t = TRACKING[w.table];
    if (!t) continue;
    const column = readColumn(t);
    const value = 'row' in w ? (w.row as Row)[column] : w.owner[column];
    if (value === null || value === undefined || state.get(w.table)?.has(String(value))) continue;
    entry(wanted, w.table, () => new Set<string>()).add(String(value));
  }
  return wanted;
}

function* recordAnswer(answer: AnswerWrites, state: State, out: RecordedChanges): Reads<void> {
  const change: MakeChange = (entity, key, kind, field, old, now) => ({
    run_id: answer.runId, task_id: answer.taskId, at: answer.at, entity, key, change: kind, field, old, new: now,
  });
  // Entities this answer names for the first time: their sets are part of "added", not items of their own.
  const firstSeen = new Set<string>();
  const lists = new Map<string, ListPageRows>();
  for (const w of answer.writes) {
    const t = TRACKING[w.table];
    if (!t) continue;
    const rowsOf = state.get(w.table)!;
    if ('row' in w && t.kind === 'entity') entityChange(t, w.row, rowsOf, firstSeen, change, out.changes);
    else if (!('row' in w) && t.kind === 'set') setChange(t, w.owner, w.rows, rowsOf, firstSeen, change, out.changes);
    else if ('row' in w && t.kind === 'list') {
      const id = `${w.table}\u0000${t.listOf(w.row)}`;
      entry(lists, id, () => ({ t, table: w.table, head: w.row, rows: [] })).rows.push(w.row);
    }
  }
  addEmptyEnd(answer, lists);
  for (const { t, table, head, rows: page } of lists.values()) yield* listChange(t, head, page, state, table, answer, change, out);
}

/** A page of a list an answer holds: the list's tracking, its table, the row naming it and page, the page's rows. */
type ListPageRows = { t: ListTracking; table: string; head: Row; rows: Row[] };

/** A page that ends the list listing no one (an empty page, a 404) is recorded all the same: the page asked names it. */
function addEmptyEnd(answer: AnswerWrites, lists: Map<string, ListPageRows>): void {
  const page = answer.list;
  const t = page && answer.endsList === true ? TRACKING[page.table] : undefined;
  if (page === undefined || t?.kind !== 'list') return;
  const id = `${page.table}\u0000${t.listOf(page.row)}`;
  if (!lists.has(id)) lists.set(id, { t, table: page.table, head: page.row, rows: [] });
}

type MakeChange = (entity: HistoryEntity, key: string, kind: ChangeKind, field: string | null, old: string | null, now: string | null) => ChangeRow;

function entityChange(t: EntityTracking, row: Row, rowsOf: Map<string, Row[]>, firstSeen: Set<string>, change: MakeChange, changes: ChangeRow[]): void {
  const key = String(row[t.key]);
  const before = rowsOf.get(key)?.[0];
  if (!before) {
    firstSeen.add(`${t.entity}\u0000${key}`);
    changes.push(change(t.entity, key, 'added', null, null, null));
  } else {
    for (const column of Object.keys(row)) {
      if (t.ignored.has(column) || column === t.key) continue;
      const [old, now] = [valueText(before[column]), valueText(row[column])];
      if (old !== now) changes.push(change(t.entity, key, 'changed', column, old, now));
    }
  }
  rowsOf.set(key, [{ ...before, ...row }]);
}

function setChange(
  t: SetTracking, owner: Row, items: readonly Row[], rowsOf: Map<string, Row[]>, firstSeen: Set<string>, change: MakeChange, changes: ChangeRow[],
): void {
  const key = String(owner[t.owner]);
  const itemText = (row: Row) => (t.item.length === 1 ? valueText(row[t.item[0]!]) ?? '' : JSON.stringify(t.item.map((c) => valueText(row[c]))));
  if (!firstSeen.has(`${t.entity}\u0000${key}`)) {
    const before = (rowsOf.get(key) ?? []).map(itemText);
    const after = items.map(itemText);
    for (const gone of multisetMinus(before, after)) changes.push(change(t.entity, key, 'removed', t.field, gone, null));
    for (const come of multisetMinus(after, before)) changes.push(change(t.entity, key, 'added', t.field, null, come));
  }
  rowsOf.set(key, [...items]);
}

/** The items of `a` that `b` does not hold, each as often as `a` holds it more. */
function multisetMinus(a: readonly string[], b: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const x of b) left.set(x, (left.get(x) ?? 0) + 1);
  const out: string[] = [];
  for (const x of a) {
    const n = left.get(x) ?? 0;
    if (n > 0) left.set(x, n - 1);
    else out.push(x);
  }
  return out;
}

/** The members of a list as last seen: per page, the rows of that page's latest answer, but those removed since. */
function currentMembers(t: ListTracking, stored: readonly Row[], removals: readonly Row[]): Map<string, number> {
  const removedAt = new Map(removals.map((r) => [String(r['old']), String(r['at'])]));
  const latest = new Map<number, string>();
  for (const row of stored) {
    const page = t.pageOf(row);
    const at = String(row['last_seen_at']);
    if (at > (latest.get(page) ?? '')) latest.set(page, at);
  }
  const members = new Map<string, number>();
  for (const row of stored) {
    const [member, at] = [String(row[t.member]), String(row['last_seen_at'])];
    const removed = removedAt.get(member);
    if (at === latest.get(t.pageOf(row)) && (removed === undefined || removed < at)) members.set(member, t.pageOf(row));
  }
  return members;
}

/** What one page of a list changes; `head` names the list and page (its first row, or the page asked for when it has none). */
function* listChange(
  t: ListTracking, head: Row, page: readonly Row[], state: State, table: string, answer: AnswerWrites, change: MakeChange, out: RecordedChanges,
): Reads<void> {
  const rowsOf = state.get(table)!;
  const list = t.listOf(head);
  const by = String(head[t.by]);
  const stored = (rowsOf.get(by) ?? []).filter((row) => t.listOf(row) === list);
  const removals = state.get(removalsOf(t.entity))!.get(list)!;
  const members = currentMembers(t, stored, removals);
  const pageNo = t.pageOf(head);
  const now = new Set(page.map((row) => String(row[t.member])));
  out.changes.push(...pageRemovals(members, pageNo, now, answer, removals).map((member) => change(t.entity, list, 'removed', null, member, null)));
  // A member missing from the page it was on may have moved to this one: its removal is withdrawn, whether recorded by
  // this group or an earlier commit of this pass over the list (this run's, or a run's that stopped before this page).
  // Each looked up once per page, not per member (a page of 20,000 new lookalikes: minutes of a blocked run).
  let pending: Map<string, ChangeRow[]> | null = null;
  let earlier: Map<string, number[]> | null = null;
  const withdrawnHere = new Set<ChangeRow>();
  for (const member of now) {
    if (members.has(member)) continue;
    pending ??= removalsByMember(out.changes, t.entity, list);
    const removal = pending.get(member)?.shift();
    if (removal) {
      withdrawnHere.add(removal);
      continue;
    }
    earlier ??= yield* removedInPass(answer.runId, passStart(t, stored, pageNo, answer.at), t.entity, list);
    const ids = earlier.get(member);
    if (ids) out.withdrawn.push(...ids);
    else out.changes.push(change(t.entity, list, 'added', null, null, member));
  }
  if (withdrawnHere.size > 0) out.changes = out.changes.filter((c) => !withdrawnHere.has(c));
  // The state as this page leaves it: its members seen now, on this page.
  const kept = (rowsOf.get(by) ?? []).filter((row) => !(t.listOf(row) === list && now.has(String(row[t.member]))));
  rowsOf.set(by, [...kept, ...page]);
}

/**
 * The members the page drops: those last seen on it, and on the pages after it when it ends the list (the runner
 * settles those without a call). Their rows stay as last seen (an empty page writes none to outdate its own):
 * `removals` keeps them out for the group's later answers.
 */
function pageRemovals(members: Map<string, number>, pageNo: number, now: Set<string>, answer: AnswerWrites, removals: Row[]): string[] {
  const gone: string[] = [];
  for (const [member, onPage] of members) {
    if (now.has(member) || !(onPage === pageNo || (answer.endsList === true && onPage > pageNo))) continue;
    gone.push(member);
    if (onPage !== pageNo || now.size === 0) removals.push({ old: member, at: answer.at });
  }
  return gone;
}

function removalsByMember(changes: readonly ChangeRow[], entity: string, list: string): Map<string, ChangeRow[]> {
  const by = new Map<string, ChangeRow[]>();
  for (const c of changes) {
    if (c.entity !== entity || c.key !== list || c.change !== 'removed' || c.old === null) continue;
    entry(by, c.old, () => []).push(c);
  }
  return by;
}

/**
 * When the list's current pass began: its latest page 1 (this one, if this is page 1); null when no page 1 is stored.
 * A pass read over several runs (credits out after page 1) is one read of the list.
 */
function passStart(t: ListTracking, stored: readonly Row[], pageNo: number, at: string): string | null {
  if (pageNo === 1) return at;
  let start: string | null = null;
  for (const row of stored) if (t.pageOf(row) === 1 && (start === null || String(row['last_seen_at']) > start)) start = String(row['last_seen_at']);
  return start;
}

/** Ids of the list's `removed` changes committed earlier in this run or since `since` (the pass's start), by member. */
function* removedInPass(runId: number | null, since: string | null, entity: string, list: string): Reads<Map<string, number[]>> {
  // `run_id + 0`: read through the list's own rows (the entity and key index), not every change of the run.
  const found = yield* rows<{ id: number; old: string }>(
    sql`SELECT id, old FROM changes WHERE entity = ${param} AND key = ${param} AND change = 'removed' AND (run_id + 0 = ${param} OR at >= ${param})`,
    [entity, list, runId, since],
  );
  const by = new Map<string, number[]>();
  for (const r of found) entry(by, r.old, () => []).push(Number(r.id));
  return by;
}

/** A value as history text on both engines: numbers, booleans as SQLite has them; JSON keys sorted (jsonb reorders). */
export function valueText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'number' || typeof v === 'bigint') return String(v);
  const text = String(v);
  if (!/^\s*[[{]/.test(text)) return text;
  try {
    return JSON.stringify(sortedKeys(JSON.parse(text)));
  } catch {
    return text;
  }
}

function sortedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedKeys);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(Object.keys(v).sort().map((k) => [k, sortedKeys((v as Record<string, unknown>)[k])]));
}

const CHANGE_COLUMNS = ['run_id', 'task_id', 'at', 'entity', 'key', 'change', 'field', 'old', 'new'] as const;
/** The head of the `changes` INSERT, for a writer that puts its values in itself (PostgreSQL's literal statements). */
export const CHANGES_HEAD = `INSERT INTO changes (${CHANGE_COLUMNS.join(', ')})`;
export const changeValues = (c: ChangeRow): unknown[] => CHANGE_COLUMNS.map((col) => c[col]);
/** Rows per INSERT: 9 parameters each, well under either engine's limit. */
const CHANGES_PER_INSERT = 500;

const deleteByIds = byShape((count: number) => sql`DELETE FROM changes WHERE id IN (${paramList(count)}) RETURNING id`);
const CHANGE_TUPLE = fragment(['(', paramList(CHANGE_COLUMNS.length), ')']);
const insertChanges = byShape((count: number) =>
  sql`${literal(CHANGES_HEAD)} VALUES ${fragment(Array.from({ length: count }, (_, n) => (n === 0 ? [CHANGE_TUPLE] : [', ', CHANGE_TUPLE])).flat())} RETURNING id`);

/** Deletes the withdrawn removals and inserts the changes; statements that return rows, for either runner. */
export function* writeChanges({ changes, withdrawn }: RecordedChanges): Reads<void> {
  for (const ids of slices(withdrawn, KEYS_PER_READ)) yield* rows(deleteByIds(ids.length), ids);
  for (const chunk of slices(changes, CHANGES_PER_INSERT)) yield* rows(insertChanges(chunk.length), chunk.flatMap(changeValues));
}
