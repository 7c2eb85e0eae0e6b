/**
 * esbuild keeps the working directory it was first loaded in and starts its service there on a later build. A
 * fork shares its modules from one test file to the next (isolate: false): first loaded while a case had moved the
 * process into a temporary folder (inProcess with a cwd), it later failed every build once that folder was gone
 * (`spawn .../esbuild ENOENT`, a whole file failed under load). Loaded here, as each fork starts, in the checkout:
 * this thread's copy, and the one tsx's loader thread loads for the job loader's tsImport (jobs-load failed so).
 */
import 'esbuild';
import { tsImport } from 'tsx/esm/api';

const pinned = globalThis as { esbuildCwdPinned?: boolean };
if (!pinned.esbuildCwdPinned) {
  pinned.esbuildCwdPinned = true; // once a fork: setup files run again for each test file
  await tsImport(new URL('./seeded-random.ts', import.meta.url).href, import.meta.url);
}
