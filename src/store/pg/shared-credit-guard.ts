/**
 * The credit guard of a worker on PostgreSQL: the run's CreditGuard (it learns costs and the balance from the
 * counters, and keeps the summary's figures), whose every reservation must also fit the account's shared
 * budget (coordination/shared-credit-budget.ts): the reserve and maxPerRun hold across all workers, since what
 * every worker holds in flight and has spent lives in the database.
 */
import type { CreditCounters, Operation } from '../../spec/types.ts';
import type { CreditHistory } from '../../credits/credit-meter.ts';
import { CreditGuard, type Charge, type CreditLimits, type Reservation } from '../../credits/credit-guard.ts';
import type { SharedCreditBudget, SharedReservation } from './coordination/shared-credit-budget.ts';

export class SharedCreditGuard extends CreditGuard {
  private readonly shared = new Map<Reservation, SharedReservation>();
  private readonly renewal: { stop(): void };
  /** The report of the seeded balance, awaited before the first reservation. */
  private seeded: Promise<void> = Promise.resolve();

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
      return this.stop(shared.stop, local.cost);
    }
    this.shared.set(local, shared);
    return local;
  }

  override settle(reservation: Reservation, charge: Charge): void {
    super.settle(reservation, charge);
    const shared = this.shared.get(reservation);
    if (!shared) return;
    this.shared.delete(reservation);
    const counters = charge !== null && charge !== 'unread' ? (charge as CreditCounters) : null;
    const cost = charge === null ? 0 : charge === 'unread' ? this.unreadCost(reservation.operation) : this.costOf(reservation.operation);
    // Not awaited: until it is written the reservation still counts, which only errs on the safe side.
    this.budget.settle(shared, { cost, counters }).catch(() => undefined);
  }

  /** Stops renewing this worker's reservations (the run is over). */
  close(): void {
    this.renewal.stop();
  }
}
