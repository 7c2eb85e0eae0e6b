/**
 * A row of the input that could not become a task (invalid_inputs), in its own module: the run's summary holds
 * them, and the package's public types (src/index.ts) must not reach the ledger's database types.
 */
export interface InvalidInputRow {
  job: string;
  file: string;
  line: number;
  field: string | null;
  value: string | null;
  reason: string;
}
