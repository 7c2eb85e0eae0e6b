/**
 * Datasets an older netingest made, upgraded in place as they were opened. The store never prints: it tells the
 * command running it (withSchemaUpgradeNotice), which says so on stderr, as the older release refuses the file after.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** Told the dataset (a file, or a PostgreSQL URL as shown) whose schema opening it just upgraded. */
export type SchemaUpgradeListener = (dataset: string) => void;

// Per command call, not global: commands run side by side in one process (tests) each hear only their own opens.
const listeners = new AsyncLocalStorage<SchemaUpgradeListener>();

/** Runs `work` with `listener` told of each existing dataset its opens upgrade. */
export function withSchemaUpgradeNotice<T>(listener: SchemaUpgradeListener, work: () => T): T {
  return listeners.run(listener, work);
}

/** Called by the store once it applied migrations to a dataset that held one already (not a new, empty one). */
export function schemaUpgraded(dataset: string): void {
  listeners.getStore()?.(dataset);
}

/** The line a command prints for it. */
export function schemaUpgradeLine(dataset: string): string {
  return `upgraded ${dataset} to this release's schema: older releases of netingest can no longer open it`;
}
