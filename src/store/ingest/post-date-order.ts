/**
 * The day/month order of a dataset's posts (post-date.ts), learned once from the stored posts, then from each value
 * written. Once known, the ambiguous days stored so far are filled in; should posts prove both orders, they go back
 * to NULL (at most once or twice in a dataset's life, in the caller's transaction).
 */
import type BetterSqlite3 from 'better-sqlite3';
import { isoPostDate, readPostDate, type DayOrder } from './post-date.ts';
import { dialect, fragment, literal, sql, type Statement } from '../../statement.ts';

const NN_NN_YYYY = dialect({
  sqlite: `posted_raw GLOB '[0-9][0-9]-[0-9][0-9]-[0-9][0-9][0-9][0-9]'`,
  postgres: `posted_raw ~ '^[0-9]{2}-[0-9]{2}-[0-9]{4}$'`,
});
const FIRST = literal('CAST(substr(posted_raw, 1, 2) AS INTEGER)');
const SECOND = literal('CAST(substr(posted_raw, 4, 2) AS INTEGER)');
/** Both parts could be the month, and they differ: the same predicate as readPostDate's `ambiguous`. */
const AMBIGUOUS = fragment([NN_NN_YYYY, ' AND ', FIRST, ' BETWEEN 1 AND 12 AND ', SECOND, ' BETWEEN 1 AND 12 AND ', FIRST, ' <> ', SECOND]);
const fillAs = (month: string, day: string) => sql`UPDATE posts SET posted_on = substr(posted_raw, 7, 4) || '-' || ${literal(month)} || '-' || ${literal(day)} WHERE ${AMBIGUOUS}`;

/** The day order's statements on both engines (pg-answer-store.ts runs their PostgreSQL text). */
export const POST_DATE_SQL = {
  /** Whether a stored post proves the order (`e`: a part above 12 where the day would be). */
  proves: {
    dmy: sql`SELECT EXISTS (SELECT 1 FROM posts WHERE ${NN_NN_YYYY} AND ${FIRST} > 12 AND posted_on IS NOT NULL) AS e`,
    mdy: sql`SELECT EXISTS (SELECT 1 FROM posts WHERE ${NN_NN_YYYY} AND ${SECOND} > 12 AND posted_on IS NOT NULL) AS e`,
  } satisfies Record<DayOrder, Statement>,
  fill: { dmy: fillAs('substr(posted_raw, 4, 2)', 'substr(posted_raw, 1, 2)'), mdy: fillAs('substr(posted_raw, 1, 2)', 'substr(posted_raw, 4, 2)') } satisfies Record<DayOrder, Statement>,
  clear: sql`UPDATE posts SET posted_on = NULL WHERE ${AMBIGUOUS}`,
};

export interface PostDateOrder {
  /** The ISO day to store for a raw timestamp; learns from it first. */
  isoOf(raw: unknown): string | null;
}

export function preparePostDateOrder(sqlite: BetterSqlite3.Database): PostDateOrder {
  const seen: Record<DayOrder, boolean> = {
    dmy: sqlite.prepare(POST_DATE_SQL.proves.dmy.sqlite).pluck().get() === 1,
    mdy: sqlite.prepare(POST_DATE_SQL.proves.mdy.sqlite).pluck().get() === 1,
  };
  const order = (): DayOrder | null => (seen.dmy === seen.mdy ? null : seen.dmy ? 'dmy' : 'mdy');
  let fill: Record<DayOrder, BetterSqlite3.Statement> | null = null;
  return {
    isoOf(raw) {
      const { proves } = readPostDate(raw);
      if (proves !== null && !seen[proves]) {
        seen[proves] = true;
        fill ??= { dmy: sqlite.prepare(POST_DATE_SQL.fill.dmy.sqlite), mdy: sqlite.prepare(POST_DATE_SQL.fill.mdy.sqlite) };
        const now = order();
        if (now === null) sqlite.prepare(POST_DATE_SQL.clear.sqlite).run();
        else fill[now].run();
      }
      return isoPostDate(raw, order());
    },
  };
}
