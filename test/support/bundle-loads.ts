/**
 * Which modules a process of the built package loaded: its files under dist/ (test/fixtures/record-loads.mjs lists
 * them), read back through the `// <path>` line esbuild writes above each bundled module: `src/cli/main.ts`,
 * `node_modules/pg/lib/client.js` (whatever the folder node_modules was reached through). A module bundled into a
 * file the process imported counts as loaded, as its code was evaluated with it. Plain Node starts, as users run
 * netingest, instead of tsx compiling the sources (~0.7 s of CPU a process on two busy cores, against ~0.15).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The built package (test/global-setup.ts rebuilds it when a source is newer). */
export const DIST = join(ROOT, 'dist');
/** `node --import` it to have a process list every module it loads in $LOADS_FILE. */
export const RECORDER = join(ROOT, 'test/fixtures/record-loads.mjs');
export interface BundleLoads {
  stdout: string;
  /** Source modules, as paths under src/ (`cli/commands/status.ts`). */
  sources: string[];
  /** Modules of dependencies, as paths from their package (`pg/lib/client.js`). */
  packages: string[];
}

/** Runs `node <script> <args>` (a file of dist/) and lists what it loaded. */
async function bundleLoadsOf(script: string, args: string[], env: Record<string, string> = {}): Promise<BundleLoads> {
  const dir = await mkdtemp(join(tmpdir(), 'netingest-loads-'));
  try {
    const file = join(dir, 'loads.txt');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', RECORDER, script, ...args], {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, ...env, LOADS_FILE: file },
    });
    return { stdout, ...(await bundledModules((await readFile(file, 'utf8')).split('\n'))) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The modules bundled into those of `urls` (as record-loads.mjs lists them) that are files of dist/. */
export async function bundledModules(urls: string[]): Promise<Omit<BundleLoads, 'stdout'>> {
  const markers: string[] = [];
  for (const f of new Set(urls.filter((u) => u.startsWith('file:')).map((u) => fileURLToPath(u)))) {
    if (!f.startsWith(`${DIST}/`) || !f.endsWith('.js')) continue;
    for (const m of (await readFile(f, 'utf8')).matchAll(/^\/\/ (\S+\.[cm]?[jt]s)$/gm)) markers.push(m[1]!);
  }
  return {
    sources: markers.filter((m) => m.startsWith('src/')).map((m) => m.slice('src/'.length)),
    packages: markers.filter((m) => m.includes('node_modules/')).map((m) => m.slice(m.lastIndexOf('node_modules/') + 'node_modules/'.length)),
  };
}

/** `netingest <args>` from the built CLI (dist/bin.js), and what it loaded. */
export function builtCliLoads(args: string[], env: Record<string, string> = {}): Promise<BundleLoads> {
  return bundleLoadsOf(join(DIST, 'bin.js'), args, env);
}
