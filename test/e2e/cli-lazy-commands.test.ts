/**
 * The CLI imports a command's code only when that command runs or shows its own --help: `netingest --help` and
 * `--version` load none of it (and no tsx for job files), which keeps them fast (bench/start-time.bench.ts). Read
 * from the built CLI users run (dist/bin.js): a command statically imported by the entry would be bundled into
 * the files every start loads, and show here.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/open.ts';
import { builtCliLoads, DIST, type BundleLoads } from '../support/bundle-loads.ts';

const commandModules = (loaded: string[]) => loaded.filter((m) => m.startsWith('cli/commands/') && m !== 'cli/commands/index.ts');

describe('lazy commands', () => {
  it('--help and --version load no command module, nor the engine', async () => {
    for (const flag of ['--help', '--version']) {
      const { stdout, sources, packages } = await builtCliLoads([flag]);
      expect(stdout.length, flag).toBeGreaterThan(0);
      // What this reads is there: the entry's own modules.
      expect(sources, flag).toContain('cli/main.ts');
      expect(commandModules(sources), flag).toEqual([]);
      expect(sources.filter((m) => /^(runner|db|store|jobs|export|api|sandbox)\//.test(m)), flag).toEqual([]);
      expect(packages.filter((p) => /^(tsx|esbuild|better-sqlite3|pg|drizzle-orm|undici)\//.test(p)), flag).toEqual([]);
    }
  }, 60_000);

  it("a command's --help loads that command's module only", async () => {
    const { stdout, sources } = await builtCliLoads(['status', '--help']);
    expect(stdout).toContain('--runs');
    expect(commandModules(sources)).toEqual(['cli/commands/status.ts']);
  }, 60_000);

  it('status loads the HTTP client only when an API URL and token are set, to ask the live balance', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'netingest-lazy-'));
    try {
      const db = join(dir, 'data.db');
      openDatabase(db).close();
      const httpClient = (loaded: BundleLoads) => [...loaded.sources.filter((m) => m.startsWith('api/client')), ...loaded.packages.filter((p) => p.startsWith('undici/'))];
      const without = await builtCliLoads(['status', '--db', db], { NETINGEST_API_URL: '', NETINGEST_API_TOKEN: '' });
      expect(without.stdout).toContain('Recent runs:');
      expect(httpClient(without)).toEqual([]);
      // A port nothing listens on: the balance cannot be had, and status still prints.
      const asked = await builtCliLoads(['status', '--db', db], { NETINGEST_API_URL: 'http://127.0.0.1:1', NETINGEST_API_TOKEN: 'lazy-client-token-0001' });
      expect(asked.stdout).toContain('Recent runs:');
      expect(httpClient(asked)).toContain('api/client.ts');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

/**
 * ICU's first Intl.Segmenter takes ~20 ms of a start (bench/README.md, start rows): the help's layout (string-width,
 * wrapped in scripts/build.mjs) and the progress line (text-width.ts) make one only for text that is not plain ASCII.
 */
describe('start-up work left for when it is needed', () => {
  /** `node <args>` with Intl.Segmenter counted; how many were made, from stderr's last line. */
  const segmentersMadeBy = async (args: string[]): Promise<number> => {
    const counter = `data:text/javascript,${encodeURIComponent(`
      let made = 0;
      const Real = Intl.Segmenter;
      Intl.Segmenter = class extends Real { constructor(...a) { super(...a); made += 1; } };
      process.on('exit', () => process.stderr.write('\\nsegmenters made: ' + made + '\\n'));`)}`;
    const { stderr } = await promisify(execFile)(process.execPath, ['--import', counter, ...args], { cwd: DIST, encoding: 'utf8' });
    return Number(/segmenters made: (\d+)\s*$/.exec(stderr)?.[1]);
  };

  it('--help, --version and a command\'s --help make no grapheme segmenter', async () => {
    // The counter counts: a process that makes one says so.
    expect(await segmentersMadeBy(['-e', 'new Intl.Segmenter()'])).toBe(1);
    for (const args of [['--help'], ['--version'], ['status', '--help']]) expect(await segmentersMadeBy(['bin.js', ...args]), args.join(' ')).toBe(0);
  }, 60_000);

  it("zod is bundled with its English messages alone (its other 63 locales were 348 KB parsed on every start)", async () => {
    const { packages } = await builtCliLoads(['status', '--help']);
    const locales = packages.filter((p) => p.startsWith('zod/v4/locales/'));
    expect(locales).toContain('zod/v4/locales/en.js');
    expect(locales.filter((p) => !/\/(en|index)\.js$/.test(p))).toEqual([]);
  }, 60_000);
});
