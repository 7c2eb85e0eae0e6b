/** Drift: how answers differ from the spec, per member path (`data.content[].phone`) and kind, out of the times its parent was there. */
import type { Operation } from '../spec/types.ts';
import { shortened } from './storable-text.ts';
import { terminalValue } from '../text-width.ts';

/**
 * `missing`, `null` (where the spec forbids it), `renamed` (read from another member), `variant` (a lossless variant,
 * read as the value), `type` (another type: stored as NULL), `capped` (a smaller page size than asked), `text` (a NUL
 * or lone surrogate: stored without, storable-text.ts), `host` (a record named by another site's page: not stored).
 */
export const DRIFT_KINDS = ['missing', 'null', 'renamed', 'variant', 'type', 'capped', 'text', 'host'] as const;
export type DriftKind = (typeof DRIFT_KINDS)[number];

/** One path's count of one kind of drift. */
export interface DriftCount {
  path: string;
  kind: DriftKind;
  count: number;
  /** How many times the member's parent was there (the denominator). */
  of: number;
  /** The other member (`renamed`), types (`variant`, `type`), sizes (`capped`), the fix (`text`), the site (`host`). */
  detail: string | null;
}

/** One line of drift, as a run's `--json` summary gives it (`message` is the text line). */
export type DriftLine = DriftCount & { operation: Operation; message: string };

/** A count as noted: the path of the member's parent stands for the denominator, counted apart. */
type Note = Omit<DriftCount, 'of'> & { parent: string };

/** Counts of drift, mergeable: one per answer, summed per operation over a run. */
export class DriftTally {
  private readonly seenCounts = new Map<string, number>();
  private readonly notes = new Map<string, Note>();

  /** An object (or list element) at `path` was there: the denominator of its members. */
  seen(path: string, times = 1): void {
    this.seenCounts.set(path, (this.seenCounts.get(path) ?? 0) + times);
  }

  /** One member at `path` (whose parent is at `parent`) drifted; the first detail given is kept. */
  note(fullPath: string, fullParent: string, kind: DriftKind, detail: string | null = null, times = 1): void {
    const path = shortened(fullPath, MAX_DRIFT_PATH);
    const parent = shortened(fullParent, MAX_DRIFT_PATH);
    const key = `${path}\u0000${kind}`;
    const n = this.notes.get(key);
    if (n) n.count += times;
    else this.notes.set(key, { path, parent, kind, count: times, detail });
  }

  merge(other: DriftTally): void {
    for (const [path, n] of other.seenCounts) this.seen(path, n);
    for (const n of other.notes.values()) this.note(n.path, n.parent, n.kind, n.detail, n.count);
  }

  get empty(): boolean {
    return this.notes.size === 0;
  }

  /** Every count, by path then kind. */
  counts(): DriftCount[] {
    return [...this.notes.values()]
      .map((n) => ({ path: n.path, kind: n.kind, count: n.count, of: Math.max(n.count, this.seenCounts.get(n.parent) ?? 0), detail: n.detail }))
      .sort((a, b) => (a.path === b.path ? DRIFT_KINDS.indexOf(a.kind) - DRIFT_KINDS.indexOf(b.kind) : a.path < b.path ? -1 : 1));
  }
}

/**
 * The longest path kept, in UTF-16 units: a text fix's path names the body's own members, and one of 1,500 CJK characters
 * is refused by PostgreSQL's index on answer_drift (the run failing at its end). Past it, the start and an ellipsis.
 */
export const MAX_DRIFT_PATH = 200;

/** A drift count's one line: `post-details author.network_url: missing in 40/40, read from author.acmenet_url`. */
export function driftLine(operation: string, d: DriftCount): string {
  return `${operation} ${d.path}: ${driftPhrase(d)}`;
}

/**
 * One line per operation and path, its kinds together: `similar-companies data.content[].phone: missing in
 * 7/145, null in 5/145, stored as NULL`. Counts come sorted by operation, path and kind (DriftTally.counts()).
 * For a terminal or log: paths and details name the answer's members, whose controls are blanked (terminalValue).
 */
export function driftPathLines(counts: ReadonlyArray<DriftCount & { operation: string }>): string[] {
  const lines: string[] = [];
  for (let i = 0; i < counts.length; ) {
    const { operation, path } = counts[i]!;
    const nullish: string[] = [];
    const other: string[] = [];
    for (; i < counts.length && counts[i]!.operation === operation && counts[i]!.path === path; i++) {
      const c = counts[i]!;
      if (c.kind === 'missing' || c.kind === 'null') nullish.push(`${c.kind} in ${c.count}/${c.of}`);
      else other.push(driftPhrase(c));
    }
    const parts = nullish.length > 0 ? [`${nullish.join(', ')}, stored as NULL`, ...other] : other;
    lines.push(terminalValue(`${operation} ${path}: ${parts.join('; ')}`));
  }
  return lines;
}

function driftPhrase(d: DriftCount): string {
  const share = `${d.count}/${d.of}`;
  switch (d.kind) {
    case 'missing':
    case 'null':
      return `${d.kind} in ${share}, stored as NULL`;
    case 'renamed':
      return `missing in ${share}, read from ${d.detail ?? 'another member'}`;
    case 'variant':
      return `of another type in ${share} (${d.detail ?? 'a variant'}), stored as the value`;
    case 'type':
      return `of another type in ${share} (${d.detail ?? '?'}), stored as NULL`;
    case 'text':
      return `text no database stores as sent in ${share} (${d.detail ?? 'NUL or lone surrogate'}), stored so`;
    case 'host':
      return `a page on another host than the network's in ${share} (${d.detail ?? '?'}), not stored`;
    case 'capped':
      return `page size capped by the service in ${share} answers (${d.detail ?? ''}); paging follows the service's size`;
  }
}
