/**
 * Budget thresholds (D44): one `budget.threshold` event (D31) per threshold crossed, per budget and window.
 *
 * The state is on the budget row: the window whose thresholds were announced (`alerted_window_start`), the
 * highest one announced (`alerted_percent`) and the spend at which the next one is due
 * (`alert_next_micros`). A check ({@link checkBudgetAlert}) locks the row, works out what the counter has
 * crossed since, moves the mark and writes the events in one transaction: whoever checks first wins, so each
 * threshold is announced once per window whatever the number of processes, and only for spend that
 * committed. A spend that falls back (a hold released) never announces again in the window; a new window
 * starts from none.
 *
 * Checks run after holds made outside a caller's transaction ({@link BudgetAlerts.touch}, for
 * organizations this process knows to have budgets) and in a sweep every few seconds over every budget
 * with something due (job holds, holds of other processes, crashes).
 */
import type { Kysely } from "kysely";
import { inTransaction } from "../billing/ledger.ts";
import { budgetsMaybeDue, hasBudget, lockBudgetAlert, setAlertMark, thresholdsDue } from "../billing/budgets.ts";
import { isoInZone } from "../billing/budget-windows.ts";
import { microsToUsd } from "../money.ts";
import { isPostgres } from "../storage/dialect.ts";
import type { Database } from "../storage/schema.ts";
import { CheckQueue, PeriodicSweep } from "./periodic-sweep.ts";
import { enqueueBudgetThreshold } from "./outbox.ts";

/**
 * Checks one budget: writes one `budget.threshold` event `{budget_id, scope, percent, spent_usd,
 * amount_usd, window_start}` for each threshold its counter crossed in its window and not yet announced,
 * and moves its mark, in one transaction. Returns how many events it wrote.
 */
export async function checkBudgetAlert(db: Kysely<Database>, budgetId: string): Promise<number> {
  return inTransaction(db, async (trx) => {
    const row = await lockBudgetAlert(trx, budgetId, isPostgres(trx));
    if (row === null || row.spentMicros <= 0) return 0;
    const due = thresholdsDue(row);
    await setAlertMark(trx, row.id, due.windowStart, due.percent, due.nextMicros);
    for (const percent of due.crossed) {
      await enqueueBudgetThreshold(trx, row.accountId, {
        budget_id: row.id,
        scope: { type: row.scopeType, id: row.scopeId },
        percent,
        spent_usd: microsToUsd(row.spentMicros),
        amount_usd: microsToUsd(row.amountMicros),
        window_start: isoInZone(due.windowStart, row.timezone),
      });
    }
    return due.crossed.length;
  });
}

/** How long this process trusts that an organization has no budget, ms. */
const NONE_CACHE_MS = 5000;
const NONE_CACHE_MAX = 100_000;

/** Minimal logger. */
interface AlertLog {
  warn(obj: object, msg?: string): void;
}

/** This process's budget threshold checks: after ledger changes ({@link touch}) and by a periodic sweep. */
export class BudgetAlerts {
  readonly #db: Kysely<Database>;
  readonly #log: AlertLog;
  /** Organizations seen without a budget due, and when. */
  readonly #quiet = new Map<string, number>();
  readonly #queue = new CheckQueue((accountId) => this.#check(accountId));
  readonly #periodic: PeriodicSweep;
  /** Called after events were written (the delivery loop looks at the outbox at once). */
  onFired: (() => void) | null = null;

  constructor(db: Kysely<Database>, log: AlertLog, opts: { sweepMs?: number } = {}) {
    this.#db = db;
    this.#log = log;
    this.#periodic = new PeriodicSweep(() => this.sweep(), opts.sweepMs ?? 2000, log, "budget threshold sweep");
  }

  /** The balance of `accountId` moved (a hold committed): checks its budgets soon, off the caller's path. */
  touch(accountId: string): void {
    const quietAt = this.#quiet.get(accountId);
    if (quietAt !== undefined && Date.now() - quietAt < NONE_CACHE_MS) return;
    this.#queue.add(accountId);
  }

  /** The organization's budgets changed in this process: the next touch checks them. */
  budgetsChanged(accountId: string): void {
    this.#quiet.delete(accountId);
  }

  async #check(accountId: string): Promise<void> {
    try {
      const due = await budgetsMaybeDue(this.#db, accountId, 100);
      if (due.length === 0) {
        if (this.#quiet.size >= NONE_CACHE_MAX) this.#quiet.clear();
        // Only an organization without any budget stays quiet: one with budgets is checked at every touch.
        if (!(await hasBudget(this.#db, accountId))) this.#quiet.set(accountId, Date.now());
        return;
      }
      let fired = 0;
      for (const id of due) fired += await checkBudgetAlert(this.#db, id);
      if (fired > 0) this.onFired?.();
    } catch (err) {
      // The sweep tries again; a failed check never fails the call that moved the balance.
      this.#log.warn({ err: err instanceof Error ? err.message : String(err), accountId }, "budget threshold check failed");
    }
  }

  /** One sweep: checks every budget with something due. Returns how many events it wrote. */
  async sweep(limit = 500): Promise<number> {
    const due = await budgetsMaybeDue(this.#db, null, limit);
    let fired = 0;
    for (const id of due) fired += await checkBudgetAlert(this.#db, id);
    if (fired > 0) this.onFired?.();
    return fired;
  }

  /** Starts the periodic sweep. */
  start(): void {
    this.#periodic.start();
  }

  /** Stops the sweep and waits for a sweep in flight. */
  async stop(): Promise<void> {
    await this.#periodic.stop();
  }
}
