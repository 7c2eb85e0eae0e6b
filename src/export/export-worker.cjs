// Entry of an export worker thread (started by export-worker-pool.ts with no execArgv, so it never inherits a
// loader). The sources are TypeScript run through tsx; the worker registers tsx's CommonJS hook itself, the
// same way whether the process is the CLI (tsx registered in-process by bin.mjs), `node --import tsx` or
// vitest. CommonJS, not tsx's ESM loader: that one starts a loader thread (another V8 heap) in every worker.
require('tsx/cjs/api').register();
require('./export-worker.ts');
