/**
 * Every command takes a postgres:// --db. One whose server cannot be reached fails with a message naming the
 * database, password hidden, and never a stack trace: the URL is read as a URL, never as a file path (which
 * once printed it, password and all).
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';

function capture(): PassThrough & { text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new PassThrough();
  stream.on('data', (c: Buffer) => chunks.push(c));
  return Object.assign(stream, { text: () => Buffer.concat(chunks).toString('utf8') });
}

// Port 1 on loopback: nothing listens, the connection is refused at once.
const URL_WITH_SECRET = 'postgres://analyst:s3cret-pw@127.0.0.1:1/leads';

describe('a postgres:// --db whose server cannot be reached', () => {
  const commands = [
    ['plan', 'jobs/lookalikes.json'],
    ['reprocess'],
    ['prune'],
    ['status'],
    ['query', 'SELECT 1'],
    ['export', 'companies'],
  ];
  for (const args of commands) {
    it(`${args[0]} fails naming the database, with no password and no stack trace`, async () => {
      const stdout = capture();
      const stderr = capture();
      const code = await main([...args, '--db', URL_WITH_SECRET], { stdout, stderr });
      expect(code, stderr.text()).not.toBe(0);
      expect(stderr.text()).toContain('postgres://analyst:***@127.0.0.1:1/leads');
      expect(stdout.text() + stderr.text()).not.toContain('s3cret-pw');
      expect(stderr.text()).not.toMatch(/^\s+at /m);
    });
  }
});

// A generated password pasted unencoded: its `/` ends the host part for a URL parser, which then reads
// `s3cret` as a port; the whole URL used to be quoted in the "not a valid URL" message.
const URL_WITH_SLASHED_SECRET = 'postgres://analyst:s3cret/pw@127.0.0.1:1/leads';

describe('a postgres:// --db whose password holds an unencoded /', () => {
  const commands = [
    ['plan', 'jobs/lookalikes.json'],
    ['run', 'jobs/lookalikes.json', '--log-format', 'json'],
    ['run', 'jobs/lookalikes.json'],
    ['reprocess'],
    ['prune'],
    ['status'],
    ['query', 'SELECT 1'],
    ['export', 'companies'],
    ['copy', '--from', 'data/none.db', '--to', URL_WITH_SLASHED_SECRET],
  ];
  for (const args of commands) {
    it(`${args.join(' ')} is refused (exit 2) without showing the password`, async () => {
      const stdout = capture();
      const stderr = capture();
      const db = args[0] === 'copy' ? [] : ['--db', URL_WITH_SLASHED_SECRET];
      const code = await main([...args, ...db], { stdout, stderr });
      expect(code, stderr.text()).toBe(2);
      expect(stderr.text()).toContain('postgres://***@127.0.0.1:1/leads: not a valid URL');
      expect(stdout.text() + stderr.text()).not.toMatch(/s3cret|cret\/pw/);
      if (args.includes('json')) expect(JSON.parse(stderr.text().trim().split('\n').at(-1)!)).toMatchObject({ level: 'error', exit_code: 2 });
    });
  }
});

