/**
 * A database as the release before the `www.` form left it: this build's migrations before the one that asks
 * for the `www.` form, and rows keyed the old way (`https://network.com/...`, editions such as `de.` kept apart).
 */
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDatabase } from '../../src/store/open.ts';
import { MIGRATIONS_FOLDER } from '../../src/store/migration-state.ts';

/** The first migration the previous release did not ship. */
const WWW_MIGRATION = 'www_canonical_urls';

/** A migrations folder holding what the previous release shipped. */
export function previousReleaseMigrations(dir: string): string {
  const folder = join(dir, 'old-migrations');
  mkdirSync(join(folder, 'meta'), { recursive: true });
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_FOLDER, 'meta', '_journal.json'), 'utf8')) as {
    entries: Array<{ tag: string; idx: number }>;
  };
  const first = journal.entries.findIndex((e) => e.tag.endsWith(WWW_MIGRATION));
  if (first === -1) throw new Error(`no migration named ${WWW_MIGRATION}`);
  journal.entries = journal.entries.slice(0, first);
  writeFileSync(join(folder, 'meta', '_journal.json'), JSON.stringify(journal));
  for (const e of journal.entries) {
    copyFileSync(join(MIGRATIONS_FOLDER, `${e.tag}.sql`), join(folder, `${e.tag}.sql`));
    const snapshot = `${e.tag.slice(0, 4)}_snapshot.json`;
    if (readdirSync(join(MIGRATIONS_FOLDER, 'meta')).includes(snapshot)) {
      copyFileSync(join(MIGRATIONS_FOLDER, 'meta', snapshot), join(folder, 'meta', snapshot));
    }
  }
  return folder;
}

export const T0 = '2026-01-01T00:00:00.000Z';
export const T1 = '2026-02-01T00:00:00.000Z';
export const T2 = '2026-03-01T00:00:00.000Z';

const OLD = 'https://network.com';
const OLD_DE = 'https://de.network.com';
const OLD_M = 'https://m.network.com';

/**
 * Creates `file` with the previous release's schema and old-form rows: one company written three ways (bare,
 * `de.`, `m.`) in tasks, records, links and archived answers; a post; a job seen under two editions; rows on
 * other hosts. `now` is the completion time of the done tasks (so a run can find them fresh).
 */
export function buildPreviousReleaseDb(file: string, dir: string, now: string): void {
  const d = openDatabase(file, { migrationsFolder: previousReleaseMigrations(dir) });
  const db = d.sqlite;
  const task = db.prepare(`INSERT INTO tasks (job, operation, input_key, page, request_json, input_line, status, attempts,
    created_at, updated_at, completed_at, run_id) VALUES (?, ?, ?, ?, ?, 2, ?, ?, ?, ?, ?, 1)`);
  const companyRequest = (url: string, page: number) => JSON.stringify({ url, account: {}, page, num: 10 });
  // Three spellings of acme, each its own task then; the bare one was answered.
  task.run('leads', 'similar-companies', `${OLD}/company/acme`, 1, companyRequest(`${OLD}/company/acme`, 1), 'done', 1, T0, now, now);
  task.run('leads', 'similar-companies', `${OLD_DE}/company/acme`, 1, companyRequest(`${OLD_DE}/company/acme`, 1), 'pending', 0, T0, T1, null);
  task.run('leads', 'similar-companies', `${OLD_M}/company/acme`, 1, companyRequest(`${OLD_M}/company/acme`, 1), 'failed', 1, T0, T2, null);
  task.run('leads', 'similar-companies', `${OLD}/company/beta`, 1, companyRequest(`${OLD}/company/beta`, 1), 'done', 1, T0, now, now);
  // Not a page of the network: kept as it was (the new build refuses it before a call).
  task.run('leads', 'similar-companies', 'https://acme.org/company/about', 1, companyRequest('https://acme.org/company/about', 1), 'done', 1, T0, now, now);
  task.run('posts', 'post-details', `${OLD}/posts/jane_x-activity-7100000000000000001-ab`, 1,
    JSON.stringify({ url: `${OLD}/posts/jane_x-activity-7100000000000000001-ab` }), 'done', 1, T0, now, now);
  task.run('search', 'search-jobs', 'q_0123456789abcdef', 1, JSON.stringify({ keywords: 'rust', start: 0 }), 'done', 1, T0, now, now);
  const ids = db.prepare(`SELECT input_key, id FROM tasks`).all() as Array<{ input_key: string; id: number }>;
  const id = (key: string) => ids.find((r) => r.input_key === key)!.id;

  const call = db.prepare(`INSERT INTO api_calls (run_id, task_id, operation, method, path, status, at) VALUES (1, ?, 'similar-companies', 'POST', '/v1/api/similar-companies', ?, ?)`);
  call.run(id(`${OLD}/company/acme`), 200, T0);
  call.run(id(`${OLD_M}/company/acme`), 500, T2);
  const raw = db.prepare(`INSERT INTO raw_responses (operation, request_key, request_json, body, received_at, run_id, task_id, error_code) VALUES (?, ?, ?, '{}', ?, 1, ?, ?)`);
  const ingestRequest = (url: string) => JSON.stringify({ operation: 'similar-companies', referenceUrl: url, filterKey: 'f_none', filters: {}, page: 1, num: 10 });
  raw.run('similar-companies', `${OLD}/company/acme f_none page=1 num=10`, ingestRequest(`${OLD}/company/acme`), T0, id(`${OLD}/company/acme`), null);
  raw.run('similar-companies', `${OLD_M}/company/acme f_none page=1 num=10`, ingestRequest(`${OLD_M}/company/acme`), T2, id(`${OLD_M}/company/acme`), 'SCHEMA');
  raw.run('post-details', `${OLD}/posts/jane_x-activity-7100000000000000001-ab`,
    JSON.stringify({ operation: 'post-details', postUrl: `${OLD}/posts/jane_x-activity-7100000000000000001-ab` }), T0, id(`${OLD}/posts/jane_x-activity-7100000000000000001-ab`), null);

  const company = db.prepare(`INSERT INTO companies (url, name, first_seen_at, updated_at) VALUES (?, ?, ?, ?)`);
  company.run(`${OLD}/company/acme`, 'Acme', T0, T1);
  company.run(`${OLD_DE}/company/acme`, 'Acme GmbH', T1, T2); // the freshest record of acme
  company.run(`${OLD}/company/beta`, 'Beta', T0, T0);
  company.run('https://acme.org/company/about', 'Elsewhere', T0, T0);
  const industry = db.prepare(`INSERT INTO company_industries (company_url, position, value) VALUES (?, ?, ?)`);
  industry.run(`${OLD}/company/acme`, 1, 'Old industry');
  industry.run(`${OLD_DE}/company/acme`, 1, 'Robotics');
  industry.run(`${OLD_DE}/company/acme`, 2, 'Automation');
  industry.run(`${OLD}/company/beta`, 1, 'Logistics');
  db.prepare(`INSERT INTO company_locations (company_url, position, is_headquarter, city) VALUES (?, 1, 1, ?)`).run(`${OLD_DE}/company/acme`, 'Berlin');
  db.prepare(`INSERT INTO company_locations (company_url, position, is_headquarter, city) VALUES (?, 1, 1, ?)`).run(`${OLD}/company/acme`, 'Old town');
  const similar = db.prepare(`INSERT INTO similar_companies (reference_url, filter_key, company_url, filters, rank, page, first_seen_at, last_seen_at)
    VALUES (?, 'f_none', ?, '{}', ?, 1, ?, ?)`);
  similar.run(`${OLD}/company/acme`, `${OLD}/company/beta`, 1, T1, T1);
  similar.run(`${OLD_M}/company/acme`, `${OLD}/company/beta`, 2, T0, T2); // the same link, seen under the mobile key
  similar.run(`${OLD}/company/beta`, `${OLD_DE}/company/acme`, 1, T0, T0);

  db.prepare(`INSERT INTO posts (post_id, url, author_url, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?)`).run(
    'activity-7100000000000000001', `${OLD}/posts/jane_x-activity-7100000000000000001-ab`, `${OLD}/in/jane`, T0, T0,
  );
  db.prepare(`INSERT INTO post_media (post_id, position, url) VALUES ('activity-7100000000000000001', 1, 'https://media.example/1.jpg')`).run();
  const job = db.prepare(`INSERT INTO jobs (url, title, company_link, first_seen_at, updated_at) VALUES (?, ?, ?, ?, ?)`);
  job.run(`${OLD}/jobs/view/1`, 'Rust dev', `${OLD}/company/acme`, T0, T0);
  job.run(`${OLD_DE}/jobs/view/1`, 'Rust-Entwickler', `${OLD_DE}/company/acme`, T1, T1);
  job.run(`${OLD}/jobs/view/2`, 'Go dev', 'https://careers.example.org/acme', T0, T0);
  db.prepare(`INSERT INTO job_searches (search_key, keywords, first_seen_at, last_seen_at) VALUES ('q_0123456789abcdef', 'rust', ?, ?)`).run(T0, T1);
  const result = db.prepare(`INSERT INTO job_search_results (search_key, job_url, position, first_seen_at, last_seen_at) VALUES ('q_0123456789abcdef', ?, ?, ?, ?)`);
  result.run(`${OLD}/jobs/view/1`, 1, T0, T0);
  result.run(`${OLD_DE}/jobs/view/1`, 3, T1, T1);
  result.run(`${OLD}/jobs/view/2`, 2, T0, T1);
  db.prepare(`INSERT INTO invalid_inputs (job, file, line, field, value, reason, run_id, created_at) VALUES ('leads', 'leads.csv', 9, 'url', 'acme', 'wrong host shape', 1, ?)`).run(T0);
  d.close();
}
