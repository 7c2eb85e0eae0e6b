// Entry of every worker thread: loads the TypeScript module named in workerData. A worker gets the loader of a
// `node --import tsx` parent through its execArgv, but not one registered in-process (bin.mjs, vitest), so tsx
// is registered here only when the module cannot be imported as it is.
import { workerData } from 'node:worker_threads';

const { module } = workerData;
try {
  await import(module);
} catch (err) {
  if (err?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw err;
  const { register } = await import('tsx/esm/api');
  register();
  // A failed import stays failed for its URL: ask again under another one.
  await import(`${module}?tsx`);
}
