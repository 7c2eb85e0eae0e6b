/**
 * The one-time rewrite of stored page URLs to `https://www.<host>/...` (migration 0008 marks it due). Not SQL alone:
 * telling the network's editions (`de.`, `m.`) from other hosts needs the canonicalizer's rule, as a SQL function.
 * Folded keys keep the freshest row (tasks: a done one first), seen spans cover both, dropped tasks' references move.
 */
import type BetterSqlite3 from 'better-sqlite3';
import { isNetworkHost } from '../../urls/canonical.ts';

/** netingest_meta key holding 'pending' (set by migration 0008) until the rewrite is done, then 'www'. */
export const CANONICAL_URLS_KEY = 'canonical_urls';
const DONE = 'www';

/** Paths of the network's pages: only such URLs on a bare domain of another host are moved to `www.`. */
const NETWORK_PATH = /^\/(?:company|posts|pulse|feed|embed|jobs|in)\//i;
const DOMAIN = /^(?:[a-z0-9-]+\.)+[a-z][a-z0-9-]*$/;

/**
 * `https://www.<host>/<path>` for a URL on the network's host or an edition, or on a bare two-label domain with a
 * network path, so a database filled before its host was configured is keyed as runs key it. Else the URL as it was.
 */
export function upgradedUrl(value: unknown, networkHost: string): unknown {
  if (typeof value !== 'string' || !value.startsWith('https://')) return value;
  const slash = value.indexOf('/', 8);
  const host = slash === -1 ? value.slice(8) : value.slice(8, slash);
  const path = slash === -1 ? '' : value.slice(slash);
  if (!DOMAIN.test(host)) return value;
  if (isNetworkHost(host, networkHost)) return `https://www.${networkHost}${path}`;
  const labels = host.split('.');
  const site = labels.slice(-2).join('.');
  if (labels.length > 3 || !NETWORK_PATH.test(path) || !isNetworkHost(host, site)) return value;
  return `https://www.${site}${path}`;
}

/** raw_responses.request_key: `<reference url> <filter key> page=.. num=..` or the post URL. */
export function upgradedRequestKey(operation: string, key: string, networkHost: string): string {
  if (operation === 'post-details') return upgradedUrl(key, networkHost) as string;
  if (operation !== 'similar-companies') return key;
  const space = key.indexOf(' ');
  if (space === -1) return upgradedUrl(key, networkHost) as string;
  return `${upgradedUrl(key.slice(0, space), networkHost) as string}${key.slice(space)}`;
}

/** JSON text with its string `member` upgraded, members in the same order (the ledger compares the text). */
export function upgradedJsonMember(json: string, member: string, networkHost: string): string {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return json;
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return json;
  const before = (value as Record<string, unknown>)[member];
  const after = upgradedUrl(before, networkHost);
  return after === before ? json : JSON.stringify({ ...value, [member]: after });
}

/** True when migration 0008 asked for the rewrite and it has not run yet. */
export function wwwUpgradeDue(sqlite: BetterSqlite3.Database): boolean {
  const hasMeta = sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'netingest_meta'`).get();
  if (hasMeta === undefined) return false;
  const value = sqlite.prepare(`SELECT value FROM netingest_meta WHERE key = ?`).pluck().get(CANONICAL_URLS_KEY);
  return value === 'pending';
}

/** Status order of the task kept when two fold into one: an answer first, then the latest. */
const TASK_KEEP_ORDER = `CASE status WHEN 'done' THEN 0 WHEN 'not_found' THEN 1 ELSE 2 END,
  completed_at DESC NULLS LAST, updated_at DESC, id DESC`;

/** Folds link rows into one per new key (`urls`: column -> new value's name), the last seen kept, spanning all. */
function foldLinks(table: string, urls: Record<string, string>, keyColumn: string): string[] {
  const news = Object.values(urls);
  const key = [keyColumn, ...news].join(', ');
  return [
    `CREATE TEMP TABLE up_${table} AS
     SELECT rid, ${news.join(', ')},
       FIRST_VALUE(rid) OVER (PARTITION BY ${key} ORDER BY last_seen_at DESC, rid) AS keep_rid,
       MIN(first_seen_at) OVER (PARTITION BY ${key}) AS first_seen,
       MAX(last_seen_at) OVER (PARTITION BY ${key}) AS last_seen
     FROM (SELECT rowid AS rid, *, ${Object.entries(urls).map(([column, name]) => `up_url(${column}) AS ${name}`).join(', ')} FROM ${table})`,
    `CREATE INDEX temp.up_${table}_rid ON up_${table} (rid)`,
    `DELETE FROM ${table} WHERE rowid IN (SELECT rid FROM up_${table} WHERE rid <> keep_rid)`,
    `UPDATE ${table} SET ${Object.entries(urls).map(([column, name]) => `${column} = m.${name}`).join(', ')},
       first_seen_at = m.first_seen, last_seen_at = m.last_seen
     FROM up_${table} m WHERE m.rid = ${table}.rowid`,
  ];
}

/** The rows of a table keyed by `url`: the latest record of each new URL kept, the others' `children` dropped first. */
function foldEntities(table: string, children: readonly string[]): string[] {
  const dropped = `SELECT old_url FROM up_${table} WHERE old_url <> keep_url`;
  return [
    `CREATE TEMP TABLE up_${table} AS
     SELECT url AS old_url, new_url,
       FIRST_VALUE(url) OVER (PARTITION BY new_url ORDER BY updated_at DESC, url) AS keep_url,
       MIN(first_seen_at) OVER (PARTITION BY new_url) AS first_seen
     FROM (SELECT url, first_seen_at, updated_at, up_url(url) AS new_url FROM ${table})`,
    `CREATE INDEX temp.up_${table}_old ON up_${table} (old_url)`,
    ...children.flatMap((t) => [`DELETE FROM ${t} WHERE company_url IN (${dropped})`, `UPDATE ${t} SET company_url = up_url(company_url)`]),
    `DELETE FROM ${table} WHERE url IN (${dropped})`,
    `UPDATE ${table} SET url = m.new_url, first_seen_at = m.first_seen
     FROM up_${table} m WHERE m.old_url = ${table}.url AND m.old_url = m.keep_url`,
  ];
}

const STEPS = [
  // Tasks of the URL operations: the kept one takes the others' calls and archived answers.
  `CREATE TEMP TABLE up_tasks AS
   SELECT id, FIRST_VALUE(id) OVER (PARTITION BY job, new_key, page ORDER BY ${TASK_KEEP_ORDER}) AS keep_id
   FROM (SELECT *, up_url(input_key) AS new_key FROM tasks WHERE operation IN ('similar-companies', 'post-details'))`,
  `DELETE FROM up_tasks WHERE id = keep_id`,
  `CREATE INDEX temp.up_tasks_id ON up_tasks (id)`,
  `UPDATE api_calls SET task_id = (SELECT keep_id FROM up_tasks WHERE up_tasks.id = api_calls.task_id)
   WHERE task_id IN (SELECT id FROM up_tasks)`,
  `UPDATE raw_responses SET task_id = (SELECT keep_id FROM up_tasks WHERE up_tasks.id = raw_responses.task_id)
   WHERE task_id IN (SELECT id FROM up_tasks)`,
  `DELETE FROM tasks WHERE id IN (SELECT id FROM up_tasks)`,
  `UPDATE tasks SET input_key = up_url(input_key), request_json = up_json(request_json, 'url')
   WHERE operation IN ('similar-companies', 'post-details')`,
  `UPDATE raw_responses SET request_key = up_request_key(operation, request_key),
     request_json = up_json(request_json, CASE operation WHEN 'post-details' THEN 'postUrl' ELSE 'referenceUrl' END)
   WHERE operation IN ('similar-companies', 'post-details')`,

  // Links between companies: one row per new (reference, filters, company), the latest, spanning both.
  ...foldLinks('similar_companies', { reference_url: 'new_ref', company_url: 'new_company' }, 'filter_key'),
  // Companies: the latest record of each new URL, with its own child sets; the others' are dropped first.
  ...foldEntities('companies', ['company_locations', 'company_industries', 'company_specialities', 'company_hashtags']),
  // Jobs and their places in searches, the same way.
  ...foldLinks('job_search_results', { job_url: 'new_job' }, 'search_key'),
  ...foldEntities('jobs', []),
  `UPDATE jobs SET company_link = up_url(company_link) WHERE company_link IS NOT NULL`,

  // Posts are keyed by their id: only the URLs change.
  `UPDATE posts SET url = up_url(url), author_url = up_url(author_url)`,

  ...['tasks', 'similar_companies', 'companies', 'job_search_results', 'jobs'].map((t) => `DROP TABLE up_${t}`),
];

/**
 * Runs the rewrite once (a no-op when another process did it first). Foreign keys are off for its duration so
 * that no cascade deletes a link mid-way; the check before the commit proves every link still resolves.
 */
export function runWwwUpgrade(sqlite: BetterSqlite3.Database, networkHost: string): void {
  sqlite.function('up_url', { deterministic: true }, (v: unknown) => upgradedUrl(v, networkHost) as string | null);
  sqlite.function('up_request_key', { deterministic: true }, (op: unknown, key: unknown) =>
    typeof op === 'string' && typeof key === 'string' ? upgradedRequestKey(op, key, networkHost) : (key as string | null),
  );
  sqlite.function('up_json', { deterministic: true }, (json: unknown, member: unknown) =>
    typeof json === 'string' && typeof member === 'string' ? upgradedJsonMember(json, member, networkHost) : (json as string | null),
  );
  const upgrade = sqlite.transaction(() => {
    if (!wwwUpgradeDue(sqlite)) return;
    for (const step of STEPS) sqlite.prepare(step).run();
    const broken = sqlite.pragma('foreign_key_check') as unknown[];
    if (broken.length > 0) throw new Error(`rewriting URLs to the www. form left ${broken.length} broken links; nothing was changed`);
    sqlite.prepare(`UPDATE netingest_meta SET value = ? WHERE key = ?`).run(DONE, CANONICAL_URLS_KEY);
  });
  sqlite.pragma('foreign_keys = OFF');
  try {
    upgrade.immediate();
  } finally {
    sqlite.pragma('foreign_keys = ON');
  }
}
