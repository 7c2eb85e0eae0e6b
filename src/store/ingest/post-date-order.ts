/**
 * The day/month order of a dataset's posts (see post-date.ts), kept while a normalizer writes: learned once
 * from the stored posts, then from each value written. When the order becomes known, the ambiguous days
 * stored so far are filled in; should posts ever prove both orders, they go back to NULL. Either happens at
 * most once or twice in a dataset's life, inside the caller's transaction.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { isoPostDate, readPostDate, type DayOrder } from './post-date.ts';

const NN_NN_YYYY = `posted_raw GLOB '[0-9][0-9]-[0-9][0-9]-[0-9][0-9][0-9][0-9]'`;
const FIRST = `CAST(substr(posted_raw, 1, 2) AS INTEGER)`;
const SECOND = `CAST(substr(posted_raw, 4, 2) AS INTEGER)`;
/** Both parts could be the month, and they differ: the same predicate as readPostDate's `ambiguous`. */
export const AMBIGUOUS_POST_DATE_SQL = `${NN_NN_YYYY} AND ${FIRST} BETWEEN 1 AND 12 AND ${SECOND} BETWEEN 1 AND 12 AND ${FIRST} <> ${SECOND}`;
const PROVES: Record<DayOrder, string> = {
  dmy: `SELECT EXISTS (SELECT 1 FROM posts WHERE ${NN_NN_YYYY} AND ${FIRST} > 12 AND posted_on IS NOT NULL)`,
  mdy: `SELECT EXISTS (SELECT 1 FROM posts WHERE ${NN_NN_YYYY} AND ${SECOND} > 12 AND posted_on IS NOT NULL)`,
};
const YEAR = `substr(posted_raw, 7, 4)`;
const FILL: Record<DayOrder, string> = {
  dmy: `UPDATE posts SET posted_on = ${YEAR} || '-' || substr(posted_raw, 4, 2) || '-' || substr(posted_raw, 1, 2) WHERE ${AMBIGUOUS_POST_DATE_SQL}`,
  mdy: `UPDATE posts SET posted_on = ${YEAR} || '-' || substr(posted_raw, 1, 2) || '-' || substr(posted_raw, 4, 2) WHERE ${AMBIGUOUS_POST_DATE_SQL}`,
};
const CLEAR = `UPDATE posts SET posted_on = NULL WHERE ${AMBIGUOUS_POST_DATE_SQL}`;

export interface PostDateOrder {
  /** The ISO day to store for a raw timestamp; learns from it first. */
  isoOf(raw: unknown): string | null;
}

export function preparePostDateOrder(sqlite: BetterSqlite3.Database): PostDateOrder {
  const seen: Record<DayOrder, boolean> = {
    dmy: sqlite.prepare(PROVES.dmy).pluck().get() === 1,
    mdy: sqlite.prepare(PROVES.mdy).pluck().get() === 1,
  };
  const order = (): DayOrder | null => (seen.dmy === seen.mdy ? null : seen.dmy ? 'dmy' : 'mdy');
  let fill: Record<DayOrder, BetterSqlite3.Statement> | null = null;
  return {
    isoOf(raw) {
      const { proves } = readPostDate(raw);
      if (proves !== null && !seen[proves]) {
        seen[proves] = true;
        fill ??= { dmy: sqlite.prepare(FILL.dmy), mdy: sqlite.prepare(FILL.mdy) };
        const now = order();
        if (now === null) sqlite.prepare(CLEAR).run();
        else fill[now].run();
      }
      return isoPostDate(raw, order());
    },
  };
}
