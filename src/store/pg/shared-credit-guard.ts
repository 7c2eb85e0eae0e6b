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

  constructor(limits: CreditLimits, history: CreditHistory, private readonly budget: SharedCreditBudget) {
    super(limits, history);
    this.renewal = budget.keepRenewed();
  }

  override async acquire(operation: Operation): Promise<Reservation | null> {
    const local = await super.acquire(operation);
    if (!local) return null;
    const shared = await this.budget.acquire(local.cost, this.limits);
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
