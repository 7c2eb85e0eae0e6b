// `npm run build`: dist/ for the package. esbuild bundles the sources and their dependencies into a few files
// (a Node start then reads ~40 files instead of ~600: what keeps `netingest --help` and a run's start fast),
// with a file per command and per worker thread; tsc writes the type declarations beside them.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { copyFileSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');

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

rmSync(dist, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  // Every file at the top of dist/: a worker is started as `./<name>.js` beside the code that starts it
  // (threads/start-worker.ts), and a chunk is at the same place whichever entry imports it.
  entryPoints: {
    bin: 'src/cli/bin.ts',
    index: 'src/index.ts',
    'wal-checkpointer-thread': 'src/store/wal-checkpointer-thread.ts',
    'export-worker': 'src/export/export-worker.ts',
    'statement-child': 'src/store/sqlite/statement-child.ts',
  },
  outdir: dist,
  bundle: true,
  // Each command module and tsx stay out of the start path: dynamic imports become chunks loaded on use.
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Native (better-sqlite3) or loaded only for .ts job files (tsx, and esbuild under it).
  external: ['better-sqlite3', 'tsx', 'tsx/*', 'esbuild'],
  // Dependencies written as CommonJS call require(): give the ES modules one.
  banner: { js: "import { createRequire as __netingestRequire } from 'node:module'; const require = __netingestRequire(import.meta.url);" },
  plugins: [undiciAgentOnly],
  minifySyntax: true,
  legalComments: 'eof',
  logLevel: 'warning',
});
// The child process's entry: it watches for its parent's death before loading the module (start-child.ts).
copyFileSync(join(root, 'src/threads/child-bootstrap.cjs'), join(dist, 'child-bootstrap.cjs'));
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
