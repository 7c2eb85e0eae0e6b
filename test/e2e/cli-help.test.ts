/**
 * The --help of every command, as a newcomer reads it: the job files its examples name exist, and `--db` says
 * what the command really does with a missing database.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { commands } from '../../src/cli/commands/index.ts';
import { main } from '../../src/cli/main.ts';

// The built CLI, as installed (test/global-setup.ts builds it).
const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `netingest <command> --help` from the real executable (yargs prints help and exits on its own). */
async function spawnedHelp(command: string): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [BIN, command, '--help'], { cwd: ROOT, encoding: 'utf8' });
  return stdout;
}

/**
 * `netingest <command> --help` through the CLI's code in this process: yargs prints the help with console.log
 * and then calls process.exit(0), which is caught here (its code checked) instead of ending the test's process.
 */
async function inProcessHelp(command: string | undefined, flag = '--help'): Promise<string> {
  let printed = '';
  const exits: unknown[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void (printed += `${args.join(' ')}\n`));
  const exit = vi.spyOn(process, 'exit').mockImplementation(((code?: number) => void exits.push(code)) as typeof process.exit);
  try {
    const code = await main(command === undefined ? [flag] : [command, flag]);
    expect([code, exits], command).toEqual([0, [0]]);
    return printed;
  } finally {
    log.mockRestore();
    exit.mockRestore();
  }
}

/** The description of --db in a help text, its wrapped lines joined. */
function dbHelp(text: string): string {
  const match = /^ +--db\s+(.*?)\s+\[string\]/ms.exec(text);
  return (match?.[1] ?? '').replace(/\s+/g, ' ');
}

const names = commands.map((c) => c.name.split(' ')[0]!);
/** Each command's help text, by command name. */
const helpOf = new Map<string, string>();
/** One command's help from the real executable, to hold the in-process texts to what users see. */
let spawnedRunHelp: Promise<string>;

beforeAll(async () => {
  // Started first, read last: the executable's Node start overlaps the in-process texts.
  spawnedRunHelp = spawnedHelp('run');
  // A Node start per command was most of this file's CPU: the texts come from the CLI's code in this process.
  for (const name of names) helpOf.set(name, await inProcessHelp(name));
}, 180_000);

afterAll(() => spawnedRunHelp?.catch(() => undefined));

describe('--help', () => {
  it('the texts read here are those the executable prints', async () => {
    expect(helpOf.get('run')).toBe(await spawnedRunHelp);
  });

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

  it('a numeric flag is shown as [number], though it is read as typed to quote it in its error', () => {
    const flags = ['run --concurrency', 'run --rate', 'run --max-credits', 'run --reserve', 'prune --keep-days', 'query --timeout', 'query --max-width'];
    for (const entry of flags) {
      const [command, flag] = entry.split(' ') as [string, string];
      expect(new RegExp(`^ +${flag}\\s[^\\[]*\\[number\\]`, 'm').test(helpOf.get(command) ?? ''), entry).toBe(true);
    }
    // A default shown as a number too, not as the quoted string `"90"`.
    expect(helpOf.get('prune')).toMatch(/--keep-days .*\[number\] \[default: 90\]/);
    expect(helpOf.get('report')).toMatch(/--days .*\[number\] \[default: 30\]/);
    for (const [command, text] of helpOf) expect(text, command).not.toMatch(/\[number\][^\n]*\[default: "/);
  });

  it('-h shows the help as --help does, on every command and on none', async () => {
    for (const name of names) expect(await inProcessHelp(name, '-h'), name).toBe(helpOf.get(name));
    expect(await inProcessHelp(undefined, '-h')).toMatch(/^netingest <command> \[options\]/);
  });
});

describe('an unknown flag', () => {
  /** `netingest <args>` in this process: its exit code and stderr. */
  async function refused(args: string[]): Promise<{ code: number; stderr: string }> {
    let stderr = '';
    const sink = (write: (s: string) => void) => ({ write: (chunk: string) => (write(String(chunk)), true) }) as unknown as NodeJS.WritableStream;
    const code = await main(args, { stdout: sink(() => undefined), stderr: sink((s) => (stderr += s)) });
    return { code, stderr };
  }

  it('is named once (not also as its camelCase form), with the flag most likely meant', async () => {
    expect(await refused(['run', '--dry-run'])).toEqual({ code: 2, stderr: "netingest: Unknown argument: dry-run\nRun 'netingest --help' for usage.\n" });
    expect((await refused(['run', '--concurency', '3'])).stderr).toMatch(/^netingest: Unknown argument: concurency \(did you mean --concurrency\?\)\n/);
    expect((await refused(['export', 'posts', '--outt', 'x.csv', '--dry-run'])).stderr).toMatch(/^netingest: Unknown arguments: outt \(did you mean --out\?\), dry-run\n/);
  });

  it('a one-value flag given twice is refused by name (exit 2), never an unexpected error, a URL or path not quoted', async () => {
    const url = 'postgres://u:s3cret-pw@127.0.0.1:9/db';
    for (const [args, message] of [
      [['status', '--db', 'a.db', '--db', url], '--db is given more than once: give it once'],
      [['status', '--token-file', 'a', '--token-file', 'b'], '--token-file is given more than once: give it once'],
      [['run', '--all', '--jobs-dir', 'a', '--jobs-dir', 'b'], '--jobs-dir is given more than once (a, b): give it once'],
      [['export', 'posts', '--out', 'a.csv', '--out', 'b.csv'], '--out is given more than once (a.csv, b.csv): give it once'],
      [['export', 'posts', '--format', 'csv', '--format', 'jsonl'], '--format is given more than once (csv, jsonl): give it once'],
    ] as const) {
      const { code, stderr } = await refused([...args]);
      expect(code, args.join(' ')).toBe(2);
      expect(stderr, args.join(' ')).toContain(message);
      expect(stderr).not.toMatch(/unexpected|s3cret/);
    }
  });
});
