/**
 * A row of the input that could not become a task (invalid_inputs), in its own module: the run's summary holds
 * them, and the package's public types (src/index.ts) must not reach the ledger's database types.
 */
import type { StoredRow } from './tables.ts';

export type InvalidInputRow = Omit<StoredRow<'invalid_inputs'>, 'id' | 'run_id' | 'created_at'>;
