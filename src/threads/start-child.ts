/**
 * Starts a child process running a TypeScript module, with an IPC channel in V8's serialization (bigints and
 * Buffers pass as they are). Used where a thread would not do: work the parent must be able to kill at once,
 * such as a SQLite statement, which a terminated worker thread finishes anyway (and the process cannot exit
 * before it does).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const BOOTSTRAP = fileURLToPath(new URL('./child-bootstrap.cjs', import.meta.url));
/** Bundled into dist/, the child module is an entry beside this code, named as its source (see start-worker.ts). */
const COMPILED = import.meta.url.endsWith('.js');

/**
 * Starts `module` (a file URL) in a child process; its stdout is dropped, its stderr is readable. The child
 * ends itself once this process is gone, even killed with SIGKILL (see child-bootstrap.cjs).
 */
export function startChild(module: URL): ChildProcess {
  const file = fileURLToPath(module);
  return fork(BOOTSTRAP, [COMPILED ? file.replace(/\.ts$/, '.js') : file, String(process.pid)], {
    execArgv: [],
    serialization: 'advanced',
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
}
