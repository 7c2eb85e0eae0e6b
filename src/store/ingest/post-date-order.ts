/**
 * The day/month order of a dataset's posts (post-date.ts), learned as posts are written and kept in netingest_meta.
 * Once known, the ambiguous days stored so far are filled in; should posts prove both orders, they go back to NULL.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { isoPostDate, readPostDate, type DayOrder } from './post-date.ts';
import { dialect, fragment, literal, param, sql, type Statement } from '../../statement.ts';
import { readSync, rows, value, type Reads } from '../read-steps.ts';

const NN_NN_YYYY = dialect({
  sqlite: `posted_raw GLOB '[0-9][0-9]-[0-9][0-9]-[0-9][0-9][0-9][0-9]'`,
  postgres: `posted_raw ~ '^[0-9]{2}-[0-9]{2}-[0-9]{4}$'`,
});
const FIRST = literal('CAST(substr(posted_raw, 1, 2) AS INTEGER)');
const SECOND = literal('CAST(substr(posted_raw, 4, 2) AS INTEGER)');
/** Both parts could be the month, and they differ: the same predicate as readPostDate's `ambiguous`. */
const AMBIGUOUS = fragment([NN_NN_YYYY, ' AND ', FIRST, ' BETWEEN 1 AND 12 AND ', SECOND, ' BETWEEN 1 AND 12 AND ', FIRST, ' <> ', SECOND]);
const fillAs = (month: string, day: string) => sql`UPDATE posts SET posted_on = substr(posted_raw, 7, 4) || '-' || ${literal(month)} || '-' || ${literal(day)} WHERE ${AMBIGUOUS}`;

/** The day order's statements on both engines (run through read-steps). */
export const POST_DATE_SQL = {
  /** Whether a stored post proves the order (`e`: a part above 12 where the day would be). */
  proves: {
    dmy: sql`SELECT EXISTS (SELECT 1 FROM posts WHERE ${NN_NN_YYYY} AND ${FIRST} > 12 AND posted_on IS NOT NULL) AS e`,
    mdy: sql`SELECT EXISTS (SELECT 1 FROM posts WHERE ${NN_NN_YYYY} AND ${SECOND} > 12 AND posted_on IS NOT NULL) AS e`,
  } satisfies Record<DayOrder, Statement>,
  fill: { dmy: fillAs('substr(posted_raw, 4, 2)', 'substr(posted_raw, 1, 2)'), mdy: fillAs('substr(posted_raw, 1, 2)', 'substr(posted_raw, 4, 2)') } satisfies Record<DayOrder, Statement>,
  clear: sql`UPDATE posts SET posted_on = NULL WHERE ${AMBIGUOUS}`,
};

/** A proof kept in netingest_meta: a '1' for good, a read's '0' only where nothing is kept (another worker may keep a '1'). */
const KEEP_PROOF = sql`INSERT INTO netingest_meta (key, value) VALUES (${param}, ${param}) ON CONFLICT (key) DO UPDATE SET value = excluded.value WHERE excluded.value = '1'`;
/** Keeps whether the stored posts prove `order` (key posts_prove_dmy or posts_prove_mdy), in the caller's transaction. */
const keepProof = (order: DayOrder, proven: boolean) => rows(KEEP_PROOF, [`posts_prove_${order}`, proven ? '1' : '0']);
/** What reprocess forgets with the posts it empties (ingest/index.ts): its replay proves the order again. */
export const FORGET_PROOFS_SQL = `DELETE FROM netingest_meta WHERE key LIKE 'posts_prove_%'`;
const orderOf = (seen: Record<DayOrder, boolean>): DayOrder | null => (seen.dmy === seen.mdy ? null : seen.dmy ? 'dmy' : 'mdy');

/**
 * PostgreSQL workers learn the order in turn, before their group writes a post, so waiting holds nothing: two learning
 * at once locked netingest_meta's row and the ambiguous posts in opposite orders, and deadlocked.
 */
const LEARN_IN_TURN = sql`SELECT ${dialect({ sqlite: '1', postgres: `pg_advisory_xact_lock(hashtextextended('netingest posts day order', 0))` })} AS locked`;
export const learnInTurn = () => rows(LEARN_IN_TURN, []);

/** What the stored posts prove, as netingest_meta keeps it (the posts read where it keeps nothing). */
export function* provenOrders(): Reads<Record<DayOrder, boolean>> {
  yield* learnInTurn();
  const seen = { dmy: false, mdy: false };
  for (const order of ['dmy', 'mdy'] as const) {
    const kept = yield* value<string>(sql`SELECT value FROM netingest_meta WHERE key = ${param}`, [`posts_prove_${order}`]);
    seen[order] = kept === undefined ? Boolean(yield* value(POST_DATE_SQL.proves[order], [])) : kept === '1';
    if (kept === undefined) yield* keepProof(order, seen[order]);
  }
  return seen;
}

/** posts.posted_on for `raw` in the order `seen` holds; a proof it brings first fills (or clears) the ambiguous days and is kept. */
export function* postedOnOf(seen: Record<DayOrder, boolean>, raw: unknown): Reads<string | null> {
  const { proves } = readPostDate(raw);
  if (proves !== null && !seen[proves]) {
    yield* learnInTurn();
    seen[proves] = true;
    const now = orderOf(seen);
    yield* rows(now === null ? POST_DATE_SQL.clear : POST_DATE_SQL.fill[now], []);
    yield* keepProof(proves, true);
  }
  return isoPostDate(raw, orderOf(seen));
}

/** `isoOf`: the ISO day to store for a raw timestamp, learned from first; the order read at the first post written (none for other lookups). */
export function preparePostDateOrder(sqlite: BetterSqlite3.Database): { isoOf(raw: unknown): string | null } {
  let seen: Record<DayOrder, boolean> | null = null;
  return { isoOf: (raw) => readSync(sqlite, postedOnOf((seen ??= readSync(sqlite, provenOrders())), raw)) };
}
