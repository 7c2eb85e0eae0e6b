// Entry of every worker thread: loads the TypeScript module named in workerData through tsx's CommonJS hook.
// The worker is started with no execArgv (so it never inherits a `--import tsx` and registers twice), and
// CommonJS rather than tsx's ESM loader, which would start a loader thread with its own V8 heap in every
// worker (~200 ms more per start). Modules run this way must not use import.meta or top-level await.
require('tsx/cjs/api').register();
require(require('node:worker_threads').workerData.module);
