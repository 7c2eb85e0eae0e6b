import type { Ledger } from './ledger.ts';
import type { RunLock } from './run-lock.ts';

/**
 * The ledger as a run writes it from its own thread (planning, reopening, deferring): each write checks, in its
 * transaction, that the run still holds its lock, so a run suspended while another took the lock over does
 * not change the tasks the new holder works on (LockLostError instead). Reads are the ledger's own.
 */
export function lockGuardedLedger(ledger: Ledger, lock: Pick<RunLock, 'whileHeld'>): Ledger {
  return {
    ...ledger,
    insertPlanned: (...args) => lock.whileHeld(() => ledger.insertPlanned(...args)),
    dropStaleInvalid: (...args) => lock.whileHeld(() => ledger.dropStaleInvalid(...args)),
    adoptSharedAnswers: (...args) => lock.whileHeld(() => ledger.adoptSharedAnswers(...args)),
    reopenDue: (...args) => lock.whileHeld(() => ledger.reopenDue(...args)),
    deferPending: (...args) => lock.whileHeld(() => ledger.deferPending(...args)),
  };
}
