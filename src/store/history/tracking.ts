/**
 * How each normalized table shows in the history: its entity, its key, and which columns are values. Not values:
 * bookkeeping, derived columns, and what moves nightly (a lookalike's rank and score, a job's search position).
 */
import { EMPTY_FILTER_KEY } from '../../jobs/request-keys.ts';
import { SEARCH_JOBS_PAGE_SIZE } from '../../spec/types.ts';

export const HISTORY_ENTITIES = ['company', 'post', 'job', 'lookalike', 'search'] as const;
export type HistoryEntity = (typeof HISTORY_ENTITIES)[number];

export const CHANGE_KINDS = ['added', 'removed', 'changed'] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

/** A table of things that name themselves: a row first seen is `added`, a value that differs is `changed`. */
export interface EntityTracking {
  kind: 'entity';
  entity: HistoryEntity;
  key: string;
  /** Columns that are not values of the thing. */
  ignored: ReadonlySet<string>;
}

/** A set owned by an entity and replaced whole by each answer: an item is `added` or `removed` under `field`. */
export interface SetTracking {
  kind: 'set';
  entity: HistoryEntity;
  owner: string;
  field: string;
  /** The columns that make an item (its position in the list is not part of it). */
  item: readonly string[];
}

/**
 * A paged list (a company's lookalikes, a search's results), an answer per page: a member is `added` when on no page as
 * last seen, `removed` when its last page drops it, or an earlier page ends the list, and no other page of the run shows it.
 */
export interface ListTracking {
  kind: 'list';
  entity: HistoryEntity;
  /** The column the list is read by; `listOf` tells the lists apart within it. */
  by: string;
  listOf: (row: Readonly<Record<string, unknown>>) => string;
  member: string;
  /** The page a row was seen on. */
  pageOf: (row: Readonly<Record<string, unknown>>) => number;
}

export type Tracking = EntityTracking | SetTracking | ListTracking;

const SEEN = ['first_seen_at', 'updated_at', 'last_seen_at'];

const companySet = (field: string, item: readonly string[] = ['value']): SetTracking => ({ kind: 'set', entity: 'company', owner: 'company_url', field, item });

/** Every table the history follows; a table not listed (job_searches: a query's own terms) records nothing. */
export const TRACKING: Readonly<Record<string, Tracking>> = {
  companies: { kind: 'entity', entity: 'company', key: 'url', ignored: new Set(SEEN) },
  posts: { kind: 'entity', entity: 'post', key: 'post_id', ignored: new Set([...SEEN, 'posted_raw', 'posted_on']) },
  jobs: { kind: 'entity', entity: 'job', key: 'url', ignored: new Set(SEEN) },
  company_locations: companySet('locations', ['is_headquarter', 'city', 'country', 'geographic_area', 'line1', 'line2', 'postal_code']),
  company_industries: companySet('industries'),
  company_specialities: companySet('specialities'),
  company_hashtags: companySet('hashtags'),
  post_media: { kind: 'set', entity: 'post', owner: 'post_id', field: 'media', item: ['url'] },
  similar_companies: {
    kind: 'list',
    entity: 'lookalike',
    by: 'reference_url',
    // The same reference asked with other filters is another list; the plain one is keyed by its URL alone.
    listOf: (row) => (row['filter_key'] === EMPTY_FILTER_KEY ? String(row['reference_url']) : `${String(row['reference_url'])} ${String(row['filter_key'])}`),
    member: 'company_url',
    pageOf: (row) => Number(row['page']),
  },
  job_search_results: {
    kind: 'list',
    entity: 'search',
    by: 'search_key',
    listOf: (row) => String(row['search_key']),
    member: 'job_url',
    // The page the answer was asked for, not position / 10: a page of 12 would overlap the next. Without one (an older
    // release's run, open across the upgrade, wrote the row), the page the migration gave the rows before it.
    pageOf: (row) => (row['page'] == null ? Math.floor(Number(row['position']) / SEARCH_JOBS_PAGE_SIZE) + 1 : Number(row['page'])),
  },
};
