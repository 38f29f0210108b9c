/**
 * The SQL of budget counters (D44, billing/budgets.ts): the budgets that apply to a call, their counters
 * raised by a hold and lowered by its settlement, the counters a hold was counted in, and the threshold
 * marks. Amounts micro-USD, times epoch ms. Writes run in the caller's transaction.
 */
import { sql } from "kysely";
import type { Executor } from "./executor.ts";
import type { Micros } from "../money.ts";
import type { BudgetAction, BudgetPeriod, BudgetScopeType } from "../storage/schema.ts";

/** A budget's counting fields as a hold reads them. */
export interface BudgetCounterRow {
  id: string;
  scopeType: BudgetScopeType;
  scopeId: string;
  amountMicros: Micros;
  period: BudgetPeriod;
  timezone: string;
  action: BudgetAction;
  spentMicros: Micros;
  windowStart: number;
}

const COUNTER_COLUMNS = ["id", "scope_type", "scope_id", "amount_micros", "period", "timezone", "action", "spent_micros", "window_start"] as const;

/** The counter columns as a query returns them. */
interface CounterRecord {
  id: string;
  scope_type: BudgetScopeType;
  scope_id: string;
  amount_micros: number;
  period: BudgetPeriod;
  timezone: string;
  action: BudgetAction;
  spent_micros: number;
  window_start: number;
}

function counterOf(r: CounterRecord): BudgetCounterRow {
  return {
    id: r.id,
    scopeType: r.scope_type,
    scopeId: r.scope_id,
    amountMicros: Number(r.amount_micros),
    period: r.period,
    timezone: r.timezone,
    action: r.action,
    spentMicros: Number(r.spent_micros),
    windowStart: Number(r.window_start),
  };
}

/**
 * The budgets of `accountId` that apply to a call of member `userId` with key `keyId` (the organization's,
 * that member's, that key's), in id order, locked until the end of `trx` when `lock` (PostgreSQL: after the
 * account row, as every settlement locks them).
 */
export async function applicableBudgets(trx: Executor, accountId: string, userId: string | null, keyId: string | null, lock: boolean): Promise<BudgetCounterRow[]> {
  let q = trx
    .selectFrom("budgets")
    .select([...COUNTER_COLUMNS])
    .where("account_id", "=", accountId)
    .where((eb) => {
      const scopes = [eb("scope_type", "=", "org")];
      if (userId !== null) scopes.push(eb.and([eb("scope_type", "=", "member"), eb("scope_id", "=", userId)]));
      if (keyId !== null) scopes.push(eb.and([eb("scope_type", "=", "key"), eb("scope_id", "=", keyId)]));
      return eb.or(scopes);
    })
    .orderBy("id");
  if (lock) q = q.forUpdate();
  return (await q.execute()).map(counterOf);
}

/** The budgets a hold was counted in, with the window it counted in (locked with `lock`, in id order). */
export async function budgetsOfHold(trx: Executor, holdId: string, lock: boolean): Promise<(BudgetCounterRow & { holdWindow: number })[]> {
  let q = trx
    .selectFrom("hold_budgets")
    .innerJoin("budgets", "budgets.id", "hold_budgets.budget_id")
    .select(COUNTER_COLUMNS.map((c) => `budgets.${c}` as const))
    .select("hold_budgets.window_start as hold_window")
    .where("hold_budgets.hold_id", "=", holdId)
    .orderBy("budgets.id");
  if (lock) q = q.forUpdate();
  return (await q.execute()).map((r) => ({ ...counterOf(r), holdWindow: Number(r.hold_window) }));
}

/** Sets a budget's counter to `spentMicros` for the window starting at `windowStart`. */
export async function setBudgetCounter(trx: Executor, budgetId: string, spentMicros: Micros, windowStart: number): Promise<void> {
  await trx
    .updateTable("budgets")
    .set({ spent_micros: sql<number>`cast(${spentMicros} as bigint)`, window_start: sql<number>`cast(${windowStart} as bigint)` })
    .where("id", "=", budgetId)
    .execute();
}

/** Records the counters a hold was counted in and marks the hold budgeted. */
export async function noteHoldBudgets(trx: Executor, holdId: string, counted: readonly { budgetId: string; windowStart: number }[]): Promise<void> {
  if (counted.length === 0) return;
  await trx
    .insertInto("hold_budgets")
    .values(counted.map((c) => ({ hold_id: holdId, budget_id: c.budgetId, window_start: c.windowStart })))
    .execute();
  await trx.updateTable("holds").set({ budgeted: 1 }).where("id", "=", holdId).execute();
}

/**
 * Gives `amountMicros` back to every counter the hold was counted in that is still on the hold's window (a
 * capture's unused part, a release, a refund); counters that moved on to a later window are left alone.
 */
export async function uncountHoldBudgets(trx: Executor, holdId: string, amountMicros: Micros): Promise<void> {
  if (amountMicros <= 0) return;
  await trx
    .updateTable("budgets")
    .set({ spent_micros: sql<number>`spent_micros - cast(${amountMicros} as bigint)` })
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom("hold_budgets")
          .select(sql`1`.as("one"))
          .where("hold_budgets.hold_id", "=", holdId)
          .whereRef("hold_budgets.budget_id", "=", "budgets.id")
          .whereRef("hold_budgets.window_start", "=", "budgets.window_start"),
      ),
    )
    .execute();
}

/** Whether the hold was counted in budgets (`holds.budgeted`). */
export async function holdIsBudgeted(db: Executor, holdId: string): Promise<boolean> {
  const row = await db.selectFrom("holds").select("budgeted").where("id", "=", holdId).executeTakeFirst();
  return row !== undefined && Number(row.budgeted) === 1;
}

/** A budget whose thresholds may be due: counting fields plus thresholds and the last announced mark. */
export interface BudgetAlertRow extends BudgetCounterRow {
  accountId: string;
  thresholds: number[];
  alertedWindowStart: number | null;
  alertedPercent: number;
}

const ALERT_COLUMNS = [...COUNTER_COLUMNS, "account_id", "thresholds_json", "alerted_window_start", "alerted_percent"] as const;

function alertRowOf(
  r: CounterRecord & {
  account_id: string;
  thresholds_json: string;
  alerted_window_start: number | null;
  alerted_percent: number;
  },
): BudgetAlertRow {
  return {
    ...counterOf(r),
    accountId: r.account_id,
    thresholds: JSON.parse(r.thresholds_json) as number[],
    alertedWindowStart: r.alerted_window_start === null ? null : Number(r.alerted_window_start),
    alertedPercent: Number(r.alerted_percent),
  };
}

/**
 * Ids of budgets (of `accountId`, or of every organization) that may have a threshold to announce:
 * something spent, and either no mark for the counter's window or a spend at or above the next threshold's.
 * At most `limit`.
 */
export async function budgetsMaybeDue(db: Executor, accountId: string | null, limit: number): Promise<string[]> {
  let q = db
    .selectFrom("budgets")
    .select("id")
    .where("spent_micros", ">", 0)
    .where((eb) =>
      eb.or([
        eb("alerted_window_start", "is", null),
        eb("alerted_window_start", "<>", eb.ref("window_start")),
        eb("spent_micros", ">=", eb.ref("alert_next_micros")),
      ]),
    )
    .limit(limit);
  if (accountId !== null) q = q.where("account_id", "=", accountId);
  return (await q.execute()).map((r) => r.id);
}

/** The budget's alert fields, its row locked until the end of `trx` on PostgreSQL; null when it is gone. */
export async function lockBudgetAlert(trx: Executor, budgetId: string, lock: boolean): Promise<BudgetAlertRow | null> {
  let q = trx.selectFrom("budgets").select([...ALERT_COLUMNS]).where("id", "=", budgetId);
  if (lock) q = q.forUpdate();
  const r = await q.executeTakeFirst();
  return r ? alertRowOf(r) : null;
}

/** Records that the window starting at `windowStart` announced up to `percent`, the next due at `nextMicros`. */
export async function setAlertMark(trx: Executor, budgetId: string, windowStart: number, percent: number, nextMicros: Micros): Promise<void> {
  await trx
    .updateTable("budgets")
    .set({
      alerted_window_start: sql<number>`cast(${windowStart} as bigint)`,
      alerted_percent: percent,
      alert_next_micros: sql<number>`cast(${nextMicros} as bigint)`,
    })
    .where("id", "=", budgetId)
    .execute();
}

/** The usage records of a budget's scope: the organization's live calls, of one member, or of one key. */
interface ScopeOf {
  accountId: string;
  scopeType: BudgetScopeType;
  scopeId: string;
}

/** The usage records (D29) of the scope's live calls since `from` (epoch ms): a query to select from. */
function scopeRecords(db: Executor, s: ScopeOf, from: number) {
  let q = db.selectFrom("usage_records").where("account_id", "=", s.accountId).where("mode", "=", "live").where("created_at", ">=", from);
  if (s.scopeType === "member") q = q.where("user_id", "=", s.scopeId);
  if (s.scopeType === "key") q = q.where("key_id", "=", s.scopeId);
  return q;
}

/**
 * Marks as budgeted the open holds of the scope's live calls since `from` (epoch ms; the usage log says
 * whose calls they are). Run first when a counter restarts: settlements lock holds before budgets.
 */
export async function markScopeHoldsBudgeted(trx: Executor, s: ScopeOf, from: number): Promise<void> {
  await trx
    .updateTable("holds")
    .set({ budgeted: 1 })
    .where("status", "=", "open")
    .where("account_id", "=", s.accountId)
    .where("created_at", ">=", from)
    .where("request_id", "in", scopeRecords(trx, s, from).select("id"))
    .execute();
}

/** Locks the budget row until the end of `trx` (PostgreSQL), so no hold counts in it meanwhile. */
export async function lockBudget(trx: Executor, budgetId: string): Promise<void> {
  await trx.selectFrom("budgets").select("id").where("id", "=", budgetId).forUpdate().execute();
}

/**
 * What the scope's live calls since `from` (epoch ms) hold or were charged, from the usage log (D29): the
 * hold of each call still open plus the cost of each succeeded one, micro-USD.
 */
export async function scopeSpend(db: Executor, s: ScopeOf, from: number): Promise<Micros> {
  const row = await scopeRecords(db, s, from)
    .select(
      sql<number>`coalesce(sum(case when status in ('pending', 'processing') then hold_micros when status = 'succeeded' then coalesce(cost_micros, 0) else 0 end), 0)`.as("spent"),
    )
    .executeTakeFirst();
  return Number(row?.spent ?? 0);
}

/**
 * Replaces the counters the budget's holds were counted in: every row of the budget goes, and each open
 * hold of the scope's live calls since `from` is counted in the window starting at `from`.
 */
export async function recountHoldBudgets(trx: Executor, budgetId: string, s: ScopeOf, from: number): Promise<void> {
  await trx.deleteFrom("hold_budgets").where("budget_id", "=", budgetId).execute();
  await trx
    .insertInto("hold_budgets")
    .columns(["hold_id", "budget_id", "window_start"])
    .expression((eb) =>
      eb
        .selectFrom("holds")
        .select(["holds.id", sql<string>`${budgetId}`.as("budget_id"), sql<number>`cast(${from} as bigint)`.as("window_start")])
        .where("holds.status", "=", "open")
        .where("holds.account_id", "=", s.accountId)
        .where("holds.created_at", ">=", from)
        .where("holds.request_id", "in", scopeRecords(trx, s, from).select("id")),
    )
    .execute();
}

/** Whether the organization has at least one budget. */
export async function hasBudget(db: Executor, accountId: string): Promise<boolean> {
  return (await db.selectFrom("budgets").select("id").where("account_id", "=", accountId).limit(1).executeTakeFirst()) !== undefined;
}
