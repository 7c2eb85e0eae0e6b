/** docs/postgres.md's read-only role for analysts, created as the docs write it: the tests run the docs' own SQL. */
import { readFileSync } from 'node:fs';

/** The docs' statements, with only this test's names: its database and `role` (the cluster's owner is `netingest`, as the docs'). */
export function analystSql(database: string, role: string): string {
  const doc = readFileSync(new URL('../../docs/postgres.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## A read-only role for analysts'));
  const block = /```sql\n([\s\S]*?)```/.exec(section)![1]!;
  return block.replace(/DATABASE netingest/g, `DATABASE "${database}"`).replace(/\banalyst\b/g, role);
}

/**
 * Creates the docs' analyst role (named `analyst_<database>`) through `owner`, a connection to the database at
 * `url`, and gives the URL to connect as it, with the docs' password.
 */
export async function docsAnalystUrl(owner: { query(sql: string): Promise<unknown> }, url: string): Promise<string> {
  const database = new URL(url).pathname.slice(1);
  const role = `analyst_${database}`;
  await owner.query(analystSql(database, role));
  const asAnalyst = new URL(url);
  asAnalyst.username = role;
  asAnalyst.password = 'change-me-too';
  return asAnalyst.toString();
}
