/**
 * The credit guard of a worker on PostgreSQL: the run's CreditGuard (it learns costs and the balance from the
 * counters, and keeps the summary's figures), whose every reservation must also fit the account's shared
 * budget (coordination/shared-credit-budget.ts): the reserve and maxPerRun hold across all workers, since what
 * every worker holds in flight and has spent lives in the database. A call's cost is the one the answers of all
 * workers of the account show (the budget's cost samples) once they show it: this worker's own counters also
 * step by the others' calls.
 */
import type { CreditCounters, Operation } from '../../spec/types.ts';
import type { CreditHistory } from '../../credits/credit-meter.ts';
import { CreditGuard, type Charge, type CreditLimits, type Reservation } from '../../credits/credit-guard.ts';
import { readableCounters } from '../../credits/unread-charges.ts';
import type { SharedCreditBudget, SharedReservation } from './coordination/shared-credit-budget.ts';

export class SharedCreditGuard extends CreditGuard {
  private readonly shared = new Map<Reservation, SharedReservation>();
  private readonly renewal: { stop(): void };
  /** The report of the seeded balance, awaited before the first reservation. */
  private seeded: Promise<void> = Promise.resolve();
  /** Each operation's cost as the account's samples showed it at this worker's last settle. */
  private readonly learned = new Map<Operation, number>();
  /** Settles not yet written (see drained). */
  private readonly pending = new Set<Promise<void>>();
  /** What this worker's settled calls were charged to the run (see spent). */
  private charged = 0;

  constructor(limits: CreditLimits, history: CreditHistory, private readonly budget: SharedCreditBudget) {
    super(limits, history);
    this.renewal = budget.keepRenewed();
  }

  /**
   * The balance read before the run's first call goes to the shared budget too: there it is the only news of a
   * top-up when the last balance stored is below the reserve (no call would go, so no answer would tell it).
   */
  override seed(counters: CreditCounters): boolean {
    if (!super.seed(counters)) return false;
    this.seeded = this.budget.report(counters);
    // A failure surfaces at the next acquire; until then it must not end the process as unhandled.
    this.seeded.catch(() => undefined);
    return true;
  }

  override async acquire(operation: Operation): Promise<Reservation | null> {
    await this.seeded;
    const local = await super.acquire(operation);
    if (!local) return null;
    // A cost not learned yet is the assumed default: the budget lets such a call go alone as a probe, as the local guard does.
    const shared = await this.budget.acquire(local.cost, this.limits, { probe: !this.knowsCost(operation) });
    if ('stop' in shared) {
      super.settle(local, null);
      return this.stop(shared.stop, local.cost, false, shared.figures.spent);
    }
    this.shared.set(local, shared);
    return local;
  }

  /**
   * What this worker's calls cost, as the run's shared spend counts them: its summary, `runs.credits_spent`, and
   * its own check of maxPerRun (the budget checks the run's, all workers together). Its own counters' span would
   * count every call on the account meanwhile, other workers' and other runs' included, and stop it early.
   */
  override get spent(): number {
    return this.charged;
  }

  /** The cost the answers of every worker of the account show, else this worker's own estimate. */
  override costOf(operation: Operation): number {
    return this.learned.get(operation) ?? super.costOf(operation);
  }

  override settle(reservation: Reservation, charge: Charge): void {
    super.settle(reservation, charge);
    const shared = this.shared.get(reservation);
    if (!shared) return;
    this.shared.delete(reservation);
    const op = reservation.operation;
    const counters = charge !== null && charge !== 'unread' ? (charge as CreditCounters) : null;
    const cost = charge === null ? 0 : charge === 'unread' ? this.unreadCost(op) : this.costOf(op);
    const sample = counters && readableCounters(counters) ? { operation: op, creditsUsed: counters.credits_used } : undefined;
    this.charged += cost;
    // Not awaited: until it is written the reservation still counts, which only errs on the safe side.
    const written = this.budget.settle(shared, { cost, counters, sample }).then(
      (settled) => {
        this.charged += settled.cost - cost;
        if (settled.learnedCost !== null) this.learned.set(op, settled.learnedCost);
      },
      () => undefined,
    );
    this.pending.add(written);
    void written.finally(() => this.pending.delete(written));
  }

  /** Resolves once every settle so far is written (or failed). */
  async drained(): Promise<void> {
    await Promise.all([...this.pending]);
  }

  /** Stops renewing this worker's reservations (the run is over) and gives back the room its blocks have left. */
  async close(): Promise<void> {
    this.renewal.stop();
    await this.drained();
    await this.budget.close();
  }
}
