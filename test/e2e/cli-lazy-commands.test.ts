/**
 * The CLI imports a command's code only when that command runs or shows its own --help: `netingest --help` and
 * `--version` load none of it (and no tsx for job files), which keeps them fast (bench/start-time.bench.ts). Read
 * from the built CLI users run (dist/bin.js): a command statically imported by the entry would be bundled into
 * the files every start loads, and show here.
 */
import { describe, expect, it } from 'vitest';
import { builtCliLoads } from '../support/bundle-loads.ts';

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
});
