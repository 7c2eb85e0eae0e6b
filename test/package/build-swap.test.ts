/**
 * `npm pack` and `npm install` rebuild dist/ (through `prepare`) while a netingest of the same checkout may be
 * running and loading its commands' chunks from dist/. The build must never leave dist/ missing or half-written:
 * a CLI started again and again during a rebuild always finds itself whole.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile, spawn } from 'node:child_process';
import { access, appendFile, cp, mkdtemp, readFile, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** What scripts/build.mjs reads. */
const BUILT_FROM = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts', 'src'];

let copy: string;

beforeAll(async () => {
  copy = await mkdtemp(join(tmpdir(), 'netingest-build-'));
  for (const entry of BUILT_FROM) await cp(join(ROOT, entry), join(copy, entry), { recursive: true });
  await symlink(join(ROOT, 'node_modules'), join(copy, 'node_modules'), 'dir');
  // The build the test setup made from the same sources: the one a running CLI would have loaded.
  await cp(join(ROOT, 'dist'), join(copy, 'dist'), { recursive: true });
  // An edit, as a rebuild follows one: the command's chunk (and the chunks naming it) get new names.
  await appendFile(join(copy, 'src/cli/commands/init.ts'), "\nexport const buildSwapEdit = 'edited';\n");
}, 60_000);

/** The files of the build in the copy's dist/, as its list records them. */
async function builtFiles(): Promise<string[]> {
  return JSON.parse(await readFile(join(copy, 'dist/.builds.json'), 'utf8'));
}

function buildAgain(...args: string[]): Promise<number | null> {
  const build = spawn(process.execPath, [join(copy, 'scripts/build.mjs'), ...args], { cwd: copy, stdio: 'ignore' });
  return new Promise((resolve) => build.on('exit', resolve));
}

afterAll(async () => {
  if (copy) await rm(copy, { recursive: true, force: true });
});

/** `netingest init --help` from the copy's dist/: yargs picks the command, so its chunk is loaded from dist/. */
function runCli(): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(copy, 'dist/bin.js'), 'init', '--help'], { cwd: copy, encoding: 'utf8' }, (error, _stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stderr });
    });
  });
}

describe('scripts/build.mjs', () => {
  it('rebuilds dist/ while the CLI keeps starting from it: every start finds its files', async () => {
    const before = await builtFiles();
    const build = spawn(process.execPath, [join(copy, 'scripts/build.mjs')], { cwd: copy, stdio: ['ignore', 'ignore', 'pipe'] });
    let buildErr = '';
    build.stderr.on('data', (chunk: Buffer) => (buildErr += chunk.toString()));
    const built = new Promise<number | null>((resolve) => build.on('exit', resolve));
    let running = true;
    void built.then(() => (running = false));

    const failures: string[] = [];
    let starts = 0;
    while (running) {
      const { code, stderr } = await runCli();
      starts++;
      if (code !== 0) failures.push(`exit ${code}: ${stderr.split('\n').find((l) => /Error|Cannot find/.test(l)) ?? stderr.slice(0, 200)}`);
    }
    expect(await built, buildErr).toBe(0);
    expect(failures).toEqual([]);
    // The rebuild lasted several CLI starts: the check above had something to see.
    expect(starts).toBeGreaterThan(2);
    // Nothing of the build is left beside dist/.
    expect((await readdir(copy)).filter((n) => n.startsWith('dist'))).toEqual(['dist']);
    expect(await runCli()).toEqual({ code: 0, stderr: '' });

    // A CLI started before the swap loads its command's chunks by the old names as it goes: they stay for one build.
    const after = await builtFiles();
    const replaced = before.filter((file) => !after.includes(file));
    expect(replaced.length).toBeGreaterThan(0);
    for (const file of replaced) await access(join(copy, 'dist', file));
    // And go at the next build.
    expect(await buildAgain('--bundles-only')).toBe(0);
    const present = await readdir(join(copy, 'dist'));
    expect(replaced.filter((file) => present.includes(file))).toEqual([]);
  }, 400_000);
});
