/**
 * A run's drift: the drift of every answer it stored, summed per operation (operations/drift.ts), written to
 * answer_drift after each job (for `status`) and said in one line per path in the summary and the log.
 */
import type { RunStore } from '../store/run-store.ts';
import { DriftTally, driftLine, type DriftLine } from '../operations/drift.ts';
import type { Operation } from '../spec/types.ts';

export type { DriftLine };

export class RunDrift {
  private readonly tallies = new Map<Operation, DriftTally>();
  constructor(
    private readonly store: Pick<RunStore, 'saveDrift'>,
    private readonly runId: number,
  ) {}

  /** Adds one stored answer's drift. */
  add(operation: Operation, drift: DriftTally): void {
    if (drift.empty) return;
    let tally = this.tallies.get(operation);
    if (!tally) this.tallies.set(operation, (tally = new DriftTally()));
    tally.merge(drift);
  }

  /** Writes the operation's counts so far (they replace those written after an earlier job of the run). */
  async save(operation: Operation): Promise<void> {
    const tally = this.tallies.get(operation);
    if (!tally) return;
    await this.store.saveDrift(this.runId, tally.counts().map((c) => ({ operation, path: c.path, kind: c.kind, count: c.count, seen: c.of, detail: c.detail })));
  }

  /** Every line, by operation, path and kind. */
  lines(): DriftLine[] {
    const out: DriftLine[] = [];
    for (const [operation, tally] of [...this.tallies].sort(([a], [b]) => (a < b ? -1 : 1))) {
      for (const c of tally.counts()) out.push({ operation, ...c, message: driftLine(operation, c) });
    }
    return out;
  }
}
