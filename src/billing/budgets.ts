/**
 * Budget counters (D44): what every hold of an organization with budgets counts against, atomically with
 * the hold.
 *
 * A budget keeps a counter on its row (`budgets.spent_micros` for the window starting at `window_start`):
 * a hold of a live call raises the counter of every budget that applies to the call (the organization's,
 * the calling member's, the key's) by the amount held, in the hold's transaction, after the account row is
 * locked; a `block` budget that the result would pass refuses the hold (nothing written). The hold records
 * the counters it was counted in (`hold_budgets`); its capture gives back what it did not use, a release
 * the whole hold, a refund the amount refunded. So a counter is always "open holds plus captured charges of
 * the window", and parallel calls, job submits and realtime extensions cannot overrun a budget: each sees
 * the holds placed before it. A counter still on an earlier window starts again from 0 at the first hold of
 * the new one (windows: budget-windows.ts); settlements of holds counted in an old window leave the new
 * counter alone.
 *
 * Only organizations whose principal says they have budgets (`accounts.has_budgets`, read with the API key)
 * look for them, so calls of the others cost nothing more. The key spend limit of D34 keeps its own counter
 * on the key (key-spend.ts) and is counted in the same transaction.
 */
import type { Executor } from "./executor.ts";
import type { Micros } from "../money.ts";
import { isPostgres } from "../storage/dialect.ts";
import { budgetWindow } from "./budget-windows.ts";
import type { BudgetPeriod, BudgetScopeType } from "../storage/schema.ts";
import type { BudgetAlertRow } from "./budgets.repository.ts";
import {
  applicableBudgets,
  type BudgetCounterRow,
  budgetsOfHold,
  lockBudget,
  markScopeHoldsBudgeted,
  noteHoldBudgets,
  recountHoldBudgets,
  scopeSpend,
  setBudgetCounter,
  uncountHoldBudgets,
} from "./budgets.repository.ts";

export { budgetsMaybeDue, hasBudget, lockBudgetAlert, setAlertMark, type BudgetAlertRow, type BudgetCounterRow } from "./budgets.repository.ts";
export { noteHoldBudgets, uncountHoldBudgets };

/** Whose call a hold is for, as budgets see it: the organization, the member (user id) and the key. */
export interface BudgetCall {
  accountId: string;
  userId: string | null;
  keyId: string | null;
}

/** A counter a hold was counted in: the budget and the window start (epoch ms). */
export interface CountedBudget {
  budgetId: string;
  windowStart: number;
}

/** The hold would pass a `block` budget (D44). Services translate it to 402 `budget_exceeded`. */
export class BudgetExceededError extends Error {
  readonly budgetId: string;
  readonly amountMicros: Micros;
  readonly spentMicros: Micros;
  readonly neededMicros: Micros;
  constructor(a: { budgetId: string; amountMicros: Micros; spentMicros: Micros; neededMicros: Micros }) {
    super("budget exceeded");
    this.name = "BudgetExceededError";
    this.budgetId = a.budgetId;
    this.amountMicros = a.amountMicros;
    this.spentMicros = a.spentMicros;
    this.neededMicros = a.neededMicros;
  }
}

/**
 * A counter as of `nowMs`: the window it counts in and what it holds there, micro-USD. A counter on an
 * earlier window counts 0 in the current one; a counter already on a later window (another process's
 * clock ran ahead) stays there.
 */
export function counterNow(row: Pick<BudgetCounterRow, "period" | "timezone" | "spentMicros" | "windowStart">, nowMs: number): { windowStart: number; spentMicros: Micros } {
  const start = budgetWindow(row.period, row.timezone, nowMs).start;
  return row.windowStart >= start ? { windowStart: row.windowStart, spentMicros: row.spentMicros } : { windowStart: start, spentMicros: 0 };
}

/**
 * Counts `amountMicros` (> 0) against every budget that applies to `call`, in `trx` (which must also place
 * the hold, and have locked the account row on PostgreSQL). Returns the counters raised, to be recorded
 * with the hold's id ({@link noteHoldBudgets}) once the hold row exists.
 * @throws BudgetExceededError when the amount would take a `block` budget past its amount (nothing
 *   written by this function; the caller's transaction rolls back the rest).
 */
export async function countBudgets(trx: Executor, call: BudgetCall, amountMicros: Micros, nowMs: number): Promise<CountedBudget[]> {
  const rows = await applicableBudgets(trx, call.accountId, call.userId, call.keyId, isPostgres(trx));
  if (rows.length === 0) return [];
  const now = rows.map((r) => ({ row: r, ...counterNow(r, nowMs) }));
  for (const c of now) {
    if (c.row.action === "block" && c.spentMicros + amountMicros > c.row.amountMicros) {
      throw new BudgetExceededError({ budgetId: c.row.id, amountMicros: c.row.amountMicros, spentMicros: c.spentMicros, neededMicros: amountMicros });
    }
  }
  for (const c of now) await setBudgetCounter(trx, c.row.id, c.spentMicros + amountMicros, c.windowStart);
  return now.map((c) => ({ budgetId: c.row.id, windowStart: c.windowStart }));
}

/** What the `block` budgets leave to a call, micro-USD (never negative), and the budget leaving least; null when none applies. */
export interface BudgetRoom {
  leftMicros: Micros;
  budget: { id: string; amountMicros: Micros; spentMicros: Micros };
}

function roomOf(rows: readonly BudgetCounterRow[], nowMs: number): BudgetRoom | null {
  let room: BudgetRoom | null = null;
  for (const r of rows) {
    if (r.action !== "block") continue;
    const c = counterNow(r, nowMs);
    const left = Math.max(0, r.amountMicros - c.spentMicros);
    if (room === null || left < room.leftMicros) room = { leftMicros: left, budget: { id: r.id, amountMicros: r.amountMicros, spentMicros: c.spentMicros } };
  }
  return room;
}

/**
 * What the `block` budgets applying to `call` leave at `nowMs` (a realtime socket sizes its first hold by
 * it; answers show it as `X-Svc-Budget-Remaining-USD`). Reads inside `db`; locks nothing (the hold itself
 * counts atomically).
 */
export async function budgetRoom(db: Executor, call: BudgetCall, nowMs: number): Promise<BudgetRoom | null> {
  return roomOf(await applicableBudgets(db, call.accountId, call.userId, call.keyId, false), nowMs);
}

/**
 * A realtime hold's extension (D42) against the budgets its hold was counted in: what their `block` ones
 * leave (null when none), and `count(amount)` raising each counter by the amount in the current window, in
 * `trx`, which must hold the account row locked on PostgreSQL. An extension in a
 * window later than the hold's counts in the new window and is not given back to it at settlement: the
 * new window is over-counted by it, never under-counted.
 */
export async function holdBudgetsForExtension(
  trx: Executor,
  holdId: string,
  nowMs: number,
): Promise<{ room: BudgetRoom | null; count: (amountMicros: Micros) => Promise<void> }> {
  // Not locked here: the caller holds the account row, which every write of these counters takes first
  // (holds, settlements), and the key row is locked after this read (the order of settlements).
  const rows = await budgetsOfHold(trx, holdId, false);
  return {
    room: roomOf(rows, nowMs),
    count: async (amountMicros) => {
      for (const r of rows) {
        const c = counterNow(r, nowMs);
        await setBudgetCounter(trx, r.id, c.spentMicros + amountMicros, c.windowStart);
      }
    },
  };
}

/** A budget whose counter restarts: its id, organization, scope and window. */
export interface BudgetToRecount {
  id: string;
  accountId: string;
  scopeType: BudgetScopeType;
  scopeId: string;
  period: BudgetPeriod;
  timezone: string;
}

/**
 * Starts (or restarts) a budget's counter, when the budget is created or its period or time zone changes:
 * the counter takes what the scope's live calls of the current window hold or were charged (the usage
 * log), and the open holds of those calls are counted in it, so their settlements give back to it. In
 * `trx`, in the order settlements lock: the holds first, then the budget row (locked before it is read,
 * so a hold placed meanwhile counts on top of the new figure once this commits). Returns the window start.
 */
export async function restartBudgetCounter(trx: Executor, b: BudgetToRecount, nowMs: number): Promise<number> {
  const from = budgetWindow(b.period, b.timezone, nowMs).start;
  await markScopeHoldsBudgeted(trx, b, from);
  if (isPostgres(trx)) await lockBudget(trx, b.id);
  const spent = await scopeSpend(trx, b, from);
  await recountHoldBudgets(trx, b.id, b, from);
  await setBudgetCounter(trx, b.id, spent, from);
  return from;
}

/** What a budget's threshold check finds: the thresholds crossed and not yet announced, and the new mark. */
export interface ThresholdsDue {
  /** The window the counter is on (epoch ms): the one the thresholds are announced for. */
  windowStart: number;
  /** Percentages crossed since the last mark, ascending (each one event). */
  crossed: number[];
  /** The highest percentage announced in the window after this check. */
  percent: number;
  /** The spend at which the next threshold is due, micro-USD (`Number.MAX_SAFE_INTEGER`: none left). */
  nextMicros: Micros;
}

/**
 * The thresholds of `row` crossed in its counter's window and not yet announced there (D44: each threshold
 * once per window): a threshold `t` is crossed when `spent * 100 >= amount * t`. Pure.
 */
export function thresholdsDue(row: Pick<BudgetAlertRow, "amountMicros" | "spentMicros" | "windowStart" | "thresholds" | "alertedWindowStart" | "alertedPercent">): ThresholdsDue {
  const already = row.alertedWindowStart === row.windowStart ? row.alertedPercent : 0;
  const crossed = row.thresholds.filter((t) => t > already && row.spentMicros * 100 >= row.amountMicros * t).sort((a, b) => a - b);
  const percent = Math.max(already, ...crossed);
  const next = [...row.thresholds].sort((a, b) => a - b).find((t) => t > percent);
  return {
    windowStart: row.windowStart,
    crossed,
    percent,
    nextMicros: next === undefined ? Number.MAX_SAFE_INTEGER : Math.ceil((row.amountMicros * next) / 100),
  };
}
