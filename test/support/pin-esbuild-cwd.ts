/**
 * esbuild keeps the working directory it was first loaded in and starts its service there on a later build. A
 * fork shares its modules from one test file to the next (isolate: false): first loaded while a case had moved the
 * process into a temporary folder (inProcess with a cwd), it later failed every build once that folder was gone
 * (`spawn .../esbuild ENOENT`, a whole file failed under load). Loaded here, as each fork starts, in the checkout.
 */
import 'esbuild';
