/**
 * The balance changes one gateway's ledger writes make (D34 alerts): an emitter made once per gateway
 * (services.ts) and handed to the paid-call flow, so two gateways in one process never hear each other.
 */
import type { Executor } from "./executor.ts";

/** Told the account whose balance a ledger write changed, after it committed (D34 alerts). */
export type BalanceListener = (accountId: string) => void;

/**
 * The listeners of one gateway. A write hands its emitter to the ledger ({@link placeHold} and
 * {@link credit} of ledger.ts take it), which tells it once the write committed. Writes made inside a
 * caller's transaction are not heard (their commit is the caller's); whoever listens must also look for
 * changes by other means (a sweep).
 */
export class BalanceEvents {
  readonly #listeners: BalanceListener[] = [];

  /** Adds a listener: it hears of every hold and credit made with this emitter on a database handle (not a transaction). */
  on(listener: BalanceListener): void {
    this.#listeners.push(listener);
  }

  /** Tells the listeners that `accountId`'s balance changed by a write on `db`; nothing when `db` is a transaction. */
  changed(db: Executor, accountId: string): void {
    if (db.isTransaction) return;
    for (const listener of this.#listeners) listener(accountId);
  }
}
