/**
 * The CLI imports a command's code only when that command runs or shows its own --help: `netingest --help` and
 * `--version` load none of it (and no tsx for job files), which keeps them fast (bench/start-time.bench.ts).
 */
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BIN = join(ROOT, 'src/cli/bin.mjs');
const RECORDER = join(ROOT, 'test/fixtures/record-loads.mjs');

/** The netingest source modules (paths under src/) that `netingest <args>` loaded. */
async function sourcesLoadedBy(args: string[]): Promise<{ stdout: string; loaded: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'netingest-loads-'));
  try {
    const file = join(dir, 'loads.txt');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', RECORDER, BIN, ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, LOADS_FILE: file },
    });
    const urls = (await readFile(file, 'utf8')).split('\n').filter(Boolean);
    const src = new URL('../../src/', import.meta.url).href;
    return { stdout, loaded: urls.filter((u) => u.startsWith(src)).map((u) => u.slice(src.length)) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const commandModules = (loaded: string[]) => loaded.filter((m) => m.startsWith('cli/commands/') && m !== 'cli/commands/index.ts');

describe('lazy commands', () => {
  it('--help and --version load no command module, nor the engine', async () => {
    for (const flag of ['--help', '--version']) {
      const { stdout, loaded } = await sourcesLoadedBy([flag]);
      expect(stdout.length, flag).toBeGreaterThan(0);
      expect(commandModules(loaded), flag).toEqual([]);
      expect(loaded.filter((m) => /^(runner|db|jobs|export|api|sandbox)\//.test(m)), flag).toEqual([]);
    }
  }, 60_000);

  it("a command's --help loads that command's module only", async () => {
    const { stdout, loaded } = await sourcesLoadedBy(['status', '--help']);
    expect(stdout).toContain('--runs');
    expect(commandModules(loaded)).toEqual(['cli/commands/status.ts']);
  }, 60_000);
});
