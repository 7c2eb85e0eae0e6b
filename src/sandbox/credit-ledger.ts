import type { CreditCounters } from '../spec/types.ts';

/** Credits are kept in integer micro-credits so fractional costs (0.25) never drift. */
const MICRO = 1_000_000;

const toMicro = (credits: number): number => Math.round(credits * MICRO);
const fromMicro = (micro: number): number => micro / MICRO;

/** Per-token credit accounts: total, used, and whether a call can be paid. */
export class CreditLedger {
  private readonly accounts = new Map<string, { totalMicro: number; usedMicro: number }>();

  constructor(tokens: Record<string, number>) {
    for (const [token, total] of Object.entries(tokens)) this.setTotal(token, total);
  }

  has(token: string): boolean {
    return this.accounts.has(token);
  }

  /** Sets a token's total credits, creating the account if needed; credits already used are kept. */
  setTotal(token: string, total: number): void {
    if (!(total >= 0 && Number.isFinite(total))) throw new RangeError(`credits must be a number >= 0, got ${total}`);
    const account = this.accounts.get(token);
    if (account) account.totalMicro = toMicro(total);
    else this.accounts.set(token, { totalMicro: toMicro(total), usedMicro: 0 });
  }

  canPay(token: string, cost: number): boolean {
    const account = this.accounts.get(token);
    return account !== undefined && account.totalMicro - account.usedMicro >= toMicro(cost);
  }

  /** Records a charge; the caller has checked canPay. */
  charge(token: string, cost: number): void {
    const account = this.accounts.get(token);
    if (account) account.usedMicro += toMicro(cost);
  }

  /** The counters as the service reports them; throws for an unknown token. */
  counters(token: string): CreditCounters {
    const account = this.accounts.get(token);
    if (!account) throw new Error('unknown sandbox token');
    return {
      total_credits: fromMicro(account.totalMicro),
      credits_used: fromMicro(account.usedMicro),
      credits_remaining: fromMicro(account.totalMicro - account.usedMicro),
    };
  }
}
