/**
 * A run that holds the dataset and does nothing else, for the lock tests: the dataset at argv[2] (a SQLite file
 * or a postgres:// URL) opened for a run through the store every command uses, `held` printed, then it waits to
 * be killed.
 */
import { openStore } from '../../../src/store/open-store.ts';

await (await openStore(process.argv[2]!)).openRun({});
process.stdout.write('held\n');
setInterval(() => undefined, 60_000);
