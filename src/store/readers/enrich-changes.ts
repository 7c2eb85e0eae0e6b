/**
 * `enrich --changes-since`: per lead, what the `changes` table recorded since a time, as a count and one short text
 * (`staff_total 120 -> 131; lookalike added https://...`); the lead's entities and keys are its operation's.
 */
import type { ChangeRow } from '../history/record-changes.ts';
import type { Job } from '../../jobs/schema.ts';
import { specOf } from '../../operations/index.ts';
import type { HistoryKey } from '../../operations/operation-spec.ts';
import { rows, type Reads } from '../read-steps.ts';
import { sql, param, fragment } from '../../statement.ts';

/** The columns enrich appends with `--changes-since` (docs/export.md: public names). */
export const CHANGES_SINCE_COLUMNS = ['changes_count', 'changes_since'] as const;

/** Longest value shown in full; a longer one (a job description) is cut with `…`. */
const VALUE_CHARS = 60;

/** A change as the lookup reads it: the history's row without where it came from. */
type Change = Pick<ChangeRow, 'entity' | 'key' | 'change' | 'field' | 'old' | 'new'>;

/** A lead's CHANGES_SINCE_COLUMNS cells since `sinceIso` (ISO-8601 UTC): how many things changed, the changes in words (null: none). */
export function changesLookup(job: Job, sinceIso: string): (inputKey: string) => Reads<[count: number, text: string | null]> {
  const keysOf = specOf(job.operation).enrich.changeKeys(job);
  return function* (inputKey) {
    const keys = yield* keysOf(inputKey);
    if (keys.length === 0) return [0, null];
    const found = yield* rows<Change>(
      sql`SELECT entity, key, change, field, old, new FROM changes
        WHERE at >= ${param} AND (${fragment(keys.flatMap((k, i) => [i === 0 ? '' : ' OR ', '(entity = ', param, ' AND key = ', param, k.changedOnly ? " AND change = 'changed')" : ')']))})
        ORDER BY at, id`,
      [sinceIso, ...keys.flatMap((k: HistoryKey) => [k.entity, k.key])],
    );
    const lines = changesInWords(found);
    return [lines.length, lines.length === 0 ? null : lines.join('; ')];
  };
}

/** The changes in words, oldest first; a value changed twice is one line from its first old to its last new. */
export function changesInWords(changes: readonly Change[]): string[] {
  const merged: Change[] = [];
  const byValue = new Map<string, Change>();
  for (const c of changes) {
    const id = `${c.entity}\u0000${c.key}\u0000${c.field}`;
    const earlier = c.change === 'changed' ? byValue.get(id) : undefined;
    if (earlier) {
      earlier.new = c.new;
      continue;
    }
    const copy = { ...c };
    if (c.change === 'changed') byValue.set(id, copy);
    merged.push(copy);
  }
  return merged.filter((c) => c.change !== 'changed' || c.old !== c.new).map(inWords);
}

function inWords(c: Change): string {
  // A list's members: a lookalike or a job come or gone.
  if (c.entity === 'lookalike' || c.entity === 'search') return `${c.entity === 'search' ? 'job' : 'lookalike'} ${c.change} ${c.new ?? c.old}`;
  // A search lead's jobs are several: name the one.
  const whose = c.entity === 'job' ? `job ${c.key} ` : '';
  if (c.field === null) return `${whose}${c.entity} ${c.change}`;
  if (c.change === 'changed') return `${whose}${c.field} ${short(c.old)} -> ${short(c.new)}`;
  return `${whose}${c.field} ${c.change} ${short(c.new ?? c.old)}`;
}

function short(value: string | null): string {
  if (value === null) return 'null';
  const flat = value.replace(/\s+/g, ' ');
  return flat.length <= VALUE_CHARS ? flat : `${flat.slice(0, VALUE_CHARS - 1)}…`;
}
