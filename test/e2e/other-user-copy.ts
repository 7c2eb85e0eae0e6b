/**
 * The built CLI copied where another user can read it, for the tests that run netingest as uid 65534: the
 * checkout may live where that user cannot reach (a clone in root's home or in a `mktemp -d` folder, mode 700),
 * and the tests must not depend on it. The copy holds what dist/ loads at run time: package.json (the package
 * root), dist/, migrations/ and better-sqlite3's addon (the one dependency not bundled); and, as the package
 * does, the example jobs/ and their data/*.csv, for commands run from its root.
 */
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, parse } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** better-sqlite3 and what it requires to find its addon. */
const NATIVE = ['better-sqlite3/package.json', 'better-sqlite3/lib', 'better-sqlite3/build/Release/better_sqlite3.node', 'bindings', 'file-uri-to-path'];

export interface OtherUserCopy {
  /** The copy's root: a folder every user can read, under readable parents. */
  root: string;
  /** Its dist/bin.js. */
  bin: string;
  /** Bundles a test's own script (TypeScript that imports src/) into the copy's dist/; gives its path. */
  bundle(script: string): Promise<string>;
  remove(): void;
}

/** Why another user could not reach a folder in `dir`: the first parent it cannot enter; null when it can. */
export function unreachableForOthers(dir: string): string | null {
  for (let at = dir; ; at = dirname(at)) {
    if ((statSync(at).mode & 0o001) === 0) return `${at} is not searchable by other users (mode ${(statSync(at).mode & 0o777).toString(8)})`;
    if (at === parse(at).root) return null;
  }
}

/** Every file of `dir` readable by all, every folder searchable (a checkout made under umask 077 is not). */
function readableByAll(dir: string): void {
  chmodSync(dir, 0o755);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) readableByAll(path);
    else chmodSync(path, statSync(path).mode | 0o444);
  }
}

/** A new copy under the system's temporary folder. Throws when other users cannot reach that folder. */
export function otherUserCopy(): OtherUserCopy {
  const why = unreachableForOthers(tmpdir());
  if (why) throw new Error(`cannot place a copy of netingest where another user can read it: ${why}`);
  const root = mkdtempSync(join(tmpdir(), 'netingest-other-user-'));
  chmodSync(root, 0o755);
  cpSync(join(ROOT, 'package.json'), join(root, 'package.json'));
  for (const dir of ['dist', 'migrations', 'jobs']) cpSync(join(ROOT, dir), join(root, dir), { recursive: true });
  mkdirSync(join(root, 'data'));
  for (const csv of readdirSync(join(ROOT, 'data')).filter((n) => n.endsWith('.csv'))) cpSync(join(ROOT, 'data', csv), join(root, 'data', csv));
  for (const part of NATIVE) {
    mkdirSync(dirname(join(root, 'node_modules', part)), { recursive: true });
    cpSync(join(ROOT, 'node_modules', part), join(root, 'node_modules', part), { recursive: true, dereference: true });
  }
  readableByAll(root);
  return {
    root,
    bin: join(root, 'dist/bin.js'),
    async bundle(script) {
      const out = join(root, 'dist', `${parse(script).name}.js`);
      // As scripts/build.mjs bundles the CLI: beside dist/'s workers, which the bundled code starts as ./<name>.js.
      await build({
        entryPoints: [script],
        outfile: out,
        bundle: true,
        format: 'esm',
        platform: 'node',
        target: 'node20',
        external: ['better-sqlite3'],
        banner: { js: "import { createRequire as __netingestRequire } from 'node:module'; const require = __netingestRequire(import.meta.url);" },
        logLevel: 'warning',
      });
      chmodSync(out, 0o644);
      return out;
    },
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}
