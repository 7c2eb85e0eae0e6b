// Entry of a child process running a TypeScript module (argv[2]) through tsx's CommonJS hook, as
// worker-bootstrap.cjs does for worker threads, or its bundled .js from dist/. Modules run this way must not use
// import.meta or top-level await.
const { Worker } = require('node:worker_threads');

// A parent killed with SIGKILL cannot stop its child, and a child busy in native code (a SQLite statement)
// never handles 'disconnect': a thread beside it polls the parent's pid (argv[3], as the parent gave it, in case
// it died before this line) and ends the process once the parent is gone.
const watcher = `
  const { workerData } = require('node:worker_threads');
  setInterval(() => { if (process.ppid !== workerData.parent) process.kill(process.pid, 'SIGKILL'); }, 500);
`;
new Worker(watcher, { eval: true, workerData: { parent: Number(process.argv[3]) } }).unref();

if (process.argv[2].endsWith('.js')) {
  // Bundled into dist/ (scripts/build.mjs): the module is plain JavaScript, an ES module.
  import(require('node:url').pathToFileURL(process.argv[2]).href);
} else {
  require('tsx/cjs/api').register();
  require(process.argv[2]);
}
