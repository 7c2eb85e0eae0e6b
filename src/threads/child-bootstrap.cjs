// Entry of a child process running a TypeScript module (argv[2]) through tsx's CommonJS hook, as
// worker-bootstrap.cjs does for worker threads. Modules run this way must not use import.meta or top-level await.
require('tsx/cjs/api').register();
require(process.argv[2]);
