/**
 * plan, reprocess and prune work on SQLite only for now: a postgres:// --db is refused by name (exit 2), never
 * read as a file path, which planned as if nothing had run and printed the URL, password and all.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.ts';

function capture(): PassThrough & { text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new PassThrough();
  stream.on('data', (c: Buffer) => chunks.push(c));
  return Object.assign(stream, { text: () => Buffer.concat(chunks).toString('utf8') });
}

const URL_WITH_SECRET = 'postgres://analyst:s3cret-pw@127.0.0.1:1/leads';

describe('commands that work on SQLite only', () => {
  for (const args of [['plan', 'jobs/lookalikes.json'], ['prune']]) {
    it(`${args[0]} refuses a postgres:// --db by name, exit 2, and prints no password`, async () => {
      const stdout = capture();
      const stderr = capture();
      expect(await main([...args, '--db', URL_WITH_SECRET], { stdout, stderr })).toBe(2);
      expect(stderr.text()).toMatch(/works on a SQLite file only for now: --db names a PostgreSQL database/);
      expect(stdout.text() + stderr.text()).not.toContain('s3cret-pw');
    });
  }
});
