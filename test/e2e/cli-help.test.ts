/**
 * The --help of every command, as a newcomer reads it: the job files its examples name exist, and `--db` says
 * what the command really does with a missing database.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { commands } from '../../src/cli/commands/index.ts';

// The built CLI, as installed (test/global-setup.ts builds it).
const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `netingest <command> --help` from the real executable (yargs prints help and exits on its own). */
async function help(command: string): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [BIN, command, '--help'], { cwd: ROOT, encoding: 'utf8' });
  return stdout;
}

/** The description of --db in a help text, its wrapped lines joined. */
function dbHelp(text: string): string {
  const match = /^ {2}--db\s+(.*?)\s+\[string\]/ms.exec(text);
  return (match?.[1] ?? '').replace(/\s+/g, ' ');
}

const names = commands.map((c) => c.name.split(' ')[0]!);
/** Each command's help text, by command name. */
const helpOf = new Map<string, string>();

beforeAll(async () => {
  // One process at a time: a dozen tsx start-ups at once take longer than a test may on a loaded 2-core machine.
  for (const name of names) helpOf.set(name, await help(name));
}, 180_000);

describe('--help', () => {
  it('every job file an example names exists in the repository', () => {
    const texts = [...helpOf.values()];
    const named = texts.flatMap((text) => [...text.matchAll(/\bjobs\/[\w.-]+\.(?:json|ts)\b/g)].map((m) => m[0]));
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((file) => !existsSync(`${ROOT}/${file}`))).toEqual([]);
  });

  it('--db: the read commands say the database must exist, run that it is created, plan that it is never created', () => {
    const read = ['status', 'query', 'export', 'enrich', 'reprocess'];
    const texts = [...read, 'run', 'plan'].map((name) => helpOf.get(name) ?? '');
    // The readers that also read PostgreSQL say so, and where the default comes from.
    const readsPostgres = new Set(['status', 'query', 'export', 'enrich', 'reprocess']);
    for (const [i, command] of read.entries()) {
      expect(dbHelp(texts[i]!), command).toBe(
        'SQLite database file; it must exist (`netingest run` creates it)' +
          (readsPostgres.has(command) ? ', or postgres://user@host:5432/database (default: $NETINGEST_DATABASE_URL, else data/netingest.db)' : ''),
      );
    }
    // run also takes a postgres:// URL, or NETINGEST_DATABASE_URL when --db is not given.
    expect(dbHelp(texts[read.length]!)).toBe(
      'SQLite database file (created, with its folder, when missing), or postgres://user@host:5432/database (default: $NETINGEST_DATABASE_URL, else data/netingest.db)',
    );
    expect(dbHelp(texts[read.length + 1]!)).toMatch(/read if it exists .*never created/);
  });
});
