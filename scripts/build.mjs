// `npm run build`: dist/ for the package. esbuild bundles the sources and their dependencies into a few files
// (a Node start then reads ~40 files instead of ~600: what keeps `netingest --help` and a run's start fast),
// with a file per command and per worker thread; tsc writes the type declarations beside them.
// It is built in a folder of its own and put in place file by file, each by a rename, only once whole: `npm pack` and `npm install`
// (through `prepare`) rebuild it while a netingest of this checkout may be running, and that process loads its
// commands' chunks from dist/ as it goes (the same names for the same sources): it must never find dist/ missing
// or half-written.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join, relative, sep } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
/**
 * `--bundles-only` (the test suite's build, test/global-setup.ts): no type declarations, which tsc takes ~20 s
 * of CPU to write and no test of `npm test` reads; dist/types/ is left as it was, and the package's own builds
 * (prepare, prepack) write it whole.
 */
const BUNDLES_ONLY = process.argv.includes('--bundles-only');
const dist = join(root, 'dist');
// Beside dist/ (a rename cannot cross file systems), and this build's own: two builds at once never mix files.
const next = join(root, `dist.next-${process.pid}`);

/**
 * netingest takes only `Agent` from undici (src/api/client.ts) and calls its request(). undici's index builds all of it at import (fetch,
 * WebSocket, cookies, mocks): ~40% of a run's start. The bundle takes the Agent module alone, the same class.
 */
const undiciAgentOnly = {
  name: 'undici-agent-only',
  setup(b) {
    b.onResolve({ filter: /^undici$/ }, (args) => (args.importer.includes('node_modules') ? undefined : { path: 'undici-agent', namespace: 'netingest' }));
    b.onLoad({ filter: /^undici-agent$/, namespace: 'netingest' }, () => ({
      // As undici's index does: the request API (dispatcher.request) on every dispatcher.
      contents:
        "import Agent from 'undici/lib/dispatcher/agent.js'; import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';" +
        " import api from 'undici/lib/api/index.js'; Object.assign(Dispatcher.prototype, api); export { Agent };",
      resolveDir: root,
      loader: 'js',
    }));
  },
};

/**
 * yargs lays out `--help` with string-width (three copies, through cliui and wrap-ansi), which makes an
 * Intl.Segmenter as it is imported (~20 ms: ICU's first) and tests every grapheme against an emoji regex: ~50 ms of
 * every start, `--version` and a run's too. Plain printable ASCII (all of netingest's help) is one cell a character;
 * anything else (ANSI escapes, wide or combining text) goes to string-width, loaded then (esbuild makes a bundled
 * module that is require()d a function run on first call).
 */
const asciiStringWidth = {
  name: 'ascii-string-width',
  setup(b) {
    // Paths relative to the checkout: esbuild names a module by its path in the bundle's comments.
    b.onResolve({ filter: /^string-width$/ }, async (args) => {
      if (args.namespace === 'string-width-ascii') return undefined;
      const real = await b.resolve('string-width', { resolveDir: args.resolveDir, kind: args.kind, namespace: 'string-width-ascii' });
      return real.errors.length > 0 ? undefined : { path: relative(root, real.path), namespace: 'string-width-ascii' };
    });
    b.onLoad({ filter: /.*/, namespace: 'string-width-ascii' }, (args) => ({
      contents: `const PRINTABLE_ASCII = /^[\\x20-\\x7e]*$/;
let stringWidth;
export default function width(text, options) {
  if (typeof text === 'string' && PRINTABLE_ASCII.test(text)) return text.length;
  stringWidth ??= require(${JSON.stringify(join(root, args.path))}).default;
  return stringWidth(text, options);
}`,
      resolveDir: root,
      loader: 'js',
    }));
  },
};

/**
 * zod's API (classic and core) re-exports every locale's messages (z.locales: 64 files, 348 KB of the bundle), which
 * netingest never reads: ~40% of zod's chunk, parsed on every start. zod sets English itself (en.js), kept alone.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      (/[\\/]zod[\\/]v4[\\/](classic|core)$/.test(args.resolveDir) ? { path: relative(root, join(args.resolveDir, '..', 'locales', 'index.js')), namespace: 'zod-english-only' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, (args) => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: dirname(join(root, args.path)),
      loader: 'js',
    }));
  },
};

/**
 * dist/bin.js, the executable, built on its own (no chunks): it catches the stop signals before node reads any other
 * file of the CLI (src/cli/bin.ts), and a bundle split in chunks would have it import the shared one of esbuild's
 * helpers first. Its one import, start.ts, is left as `./start.js`, the split build's entry.
 */
const binApart = {
  name: 'bin-apart',
  setup(b) {
    b.onResolve({ filter: /^\.\/start\.ts$/ }, (args) => (args.importer.endsWith(join('src', 'cli', 'bin.ts')) ? { path: './start.js', external: true } : undefined));
  },
};

/** The whole package build (bundles, the child bootstrap, type declarations) into the folder `out`. */
async function buildInto(out) {
  const common = {
    absWorkingDir: root,
    outdir: out,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Native (better-sqlite3) or loaded only for .ts job files (tsx, and esbuild under it).
    external: ['better-sqlite3', 'tsx', 'tsx/*', 'esbuild'],
    // Dependencies written as CommonJS call require(): give the ES modules one.
    banner: { js: "import { createRequire as __netingestRequire } from 'node:module'; const require = __netingestRequire(import.meta.url);" },
    minifySyntax: true,
    legalComments: 'eof',
    logLevel: 'warning',
  };
  await build({
    ...common,
    // Every file at the top of dist/: a worker is started as `./<name>.js` beside the code that starts it
    // (threads/start.ts), and a chunk is at the same place whichever entry imports it.
    entryPoints: {
      start: 'src/cli/start.ts',
      index: 'src/index.ts',
      'wal-checkpointer-thread': 'src/store/wal-checkpointer-thread.ts',
      'export-worker': 'src/export/export-worker.ts',
      'statement-child': 'src/store/sqlite/statement-child.ts',
    },
    // Each command module and tsx stay out of the start path: dynamic imports become chunks loaded on use.
    splitting: true,
    plugins: [undiciAgentOnly, asciiStringWidth, zodEnglishOnly],
  });
  await build({ ...common, entryPoints: { bin: 'src/cli/bin.ts' }, plugins: [binApart] });
  // The child process's entry: it watches for its parent's death before loading the module (threads/start.ts).
  copyFileSync(join(root, 'src/threads/child-bootstrap.cjs'), join(out, 'child-bootstrap.cjs'));
  if (BUNDLES_ONLY) return;
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', join(out, 'types')], { stdio: 'inherit' });
}

/** The files a start or a worker is loaded by, by these fixed names: each points at chunks named by their content (bin.js at start.js). */
const ENTRIES = new Set(['bin.js', 'start.js', 'index.js', 'wal-checkpointer-thread.js', 'export-worker.js', 'statement-child.js', 'child-bootstrap.cjs']);
/** dist/'s list of the files of its last build (see `swapIn`). */
const BUILDS_FILE = '.builds.json';
/**
 * `--pack` (prepack): the tarball holds this build only, so every file of an earlier build goes, even one a CLI
 * running from this checkout could still ask for.
 */
const PACK = process.argv.includes('--pack');

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir, rel = '') {
  return readdirSync(join(dir, rel), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(dir, join(rel, entry.name)) : [join(rel, entry.name)],
  );
}

function lastBuild() {
  try {
    return JSON.parse(readFileSync(join(dist, BUILDS_FILE), 'utf8'));
  } catch {
    return []; // the first build here, or one made before the list was kept: nothing of earlier builds is kept
  }
}

/**
 * Puts the finished build at dist/ file by file, each by a rename over the old one (atomic), so dist/ is never
 * missing and every file is whole. The chunks go first and the entries last: a CLI that starts from a new entry
 * finds every chunk it names. The previous build's files stay until the next build: a CLI started before this
 * swap loads its command's chunks by their old names as it goes (seen failing in CI when they were removed at
 * once). Older files are removed last.
 */
function swapIn() {
  mkdirSync(dist, { recursive: true });
  const built = filesUnder(next);
  // bin.js last of all: the start.js it imports is in place by then.
  const rank = (f) => (f === 'bin.js' ? 2 : ENTRIES.has(f) ? 1 : 0);
  const order = [...built].sort((a, b) => rank(a) - rank(b));
  for (const file of order) {
    mkdirSync(dirname(join(dist, file)), { recursive: true });
    renameSync(join(next, file), join(dist, file));
  }
  const kept = new Set([...built, ...(PACK ? [] : lastBuild()), BUILDS_FILE]);
  for (const file of filesUnder(dist)) {
    if (BUNDLES_ONLY && file.startsWith(`types${sep}`)) continue;
    if (!kept.has(file)) rmSync(join(dist, file), { force: true });
  }
  writeFileSync(join(dist, BUILDS_FILE), JSON.stringify(built));
  rmSync(next, { recursive: true, force: true });
}

rmSync(next, { recursive: true, force: true });
try {
  await buildInto(next);
  swapIn();
} catch (error) {
  rmSync(next, { recursive: true, force: true });
  throw error;
}
