/** Messages on PostgreSQL that say what happened and what to do, not what failed inside. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import pg from 'pg';
import { openPgStore } from '../../src/store/pg/open.ts';
import { DatabaseError } from '../../src/store/errors.ts';
import { newPgDatabase, pgClusterUrl, pgSkipReason } from './use-pg.ts';

/** docs/postgres.md's SQL for the role that writes, for role `role` on `database`. */
function writerSql(database: string, role: string): string[] {
  const doc = readFileSync(new URL('../../docs/postgres.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## The role that writes'));
  const block = /```sql\n([\s\S]*?)```/.exec(section)![1]!;
  return block
    .split('\n')
    .map((line) => line.replace(/--.*$/, '').trim())
    .filter(Boolean)
    .map((line) => line.replace(/DATABASE netingest/g, `DATABASE "${database}"`).replace(/\b(ROLE|TO) netingest\b/g, `$1 ${role}`));
}

async function asOwner(url: string, statements: string[]): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (const sql of statements) await client.query(sql);
  } finally {
    await client.end();
  }
}

describe.skipIf(!pgClusterUrl)(`messages on PostgreSQL${pgClusterUrl ? '' : ` (skipped: ${pgSkipReason})`}`, () => {
  it('a role without rights is told permission denied and which grants it needs, not "Failed query: CREATE SCHEMA"', async () => {
    const url = await newPgDatabase('role_rights');
    const database = new URL(url).pathname.slice(1);
    const role = `writer_${database}`;
    const [createRole, ...grants] = writerSql(database, role);
    await asOwner(url, [createRole!]);
    const asRole = new URL(url);
    asRole.username = role;
    asRole.password = 'change-me';

    const err = await openPgStore(asRole.toString()).then(
      async (store) => (await store.close(), null),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DatabaseError);
    const message = (err as DatabaseError).message;
    expect(message).toMatch(/permission denied/);
    expect(message).toMatch(/needs CREATE on the database and USAGE and CREATE on schema public/);
    expect(message).toMatch(/docs\/postgres\.md/);
    expect(message).not.toMatch(/Failed query/);

    // The grants the docs give are enough.
    await asOwner(url, grants);
    await (await openPgStore(asRole.toString())).close();
  });

  it('workers started together under a database lock_timeout wait their turn to migrate instead of failing', async () => {
    const url = await newPgDatabase('lock_timeout');
    const database = new URL(url).pathname.slice(1);
    await asOwner(url, [`ALTER DATABASE "${database}" SET lock_timeout = '1ms'`]);
    const opened = await Promise.allSettled([1, 2, 3, 4].map(() => openPgStore(url)));
    await Promise.all(opened.map((o) => (o.status === 'fulfilled' ? o.value.close() : undefined)));
    expect(opened.map((o) => (o.status === 'rejected' ? String(o.reason) : 'opened'))).toEqual(['opened', 'opened', 'opened', 'opened']);
  });
});
