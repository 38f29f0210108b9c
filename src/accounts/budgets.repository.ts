/**
 * The SQL of budget management (D44, accounts/budgets.ts): budget rows of an organization and the
 * organization's `has_budgets` mark. The counters are billing/budgets.repository.ts's. Amounts micro-USD,
 * times epoch ms.
 */
import type { Insertable, Updateable } from "kysely";
import type { Executor } from "../billing/executor.ts";
import type { BudgetsTable } from "../storage/schema.ts";

/** A budget row as the API renders it. */
export type BudgetRow = Pick<
  BudgetsTable,
  "id" | "account_id" | "scope_type" | "scope_id" | "period" | "timezone" | "action" | "thresholds_json" | "created_at" | "updated_at"
> & { amount_micros: number; spent_micros: number; window_start: number };

const COLUMNS = [
  "id",
  "account_id",
  "scope_type",
  "scope_id",
  "amount_micros",
  "period",
  "timezone",
  "action",
  "thresholds_json",
  "spent_micros",
  "window_start",
  "created_at",
  "updated_at",
] as const;

/** The organization's budgets, oldest first. */
export async function budgetRowsOf(db: Executor, accountId: string): Promise<BudgetRow[]> {
  return db.selectFrom("budgets").select([...COLUMNS]).where("account_id", "=", accountId).orderBy("created_at").orderBy("id").execute();
}

/** One budget of the organization, or null. */
export async function budgetRowOf(db: Executor, accountId: string, budgetId: string): Promise<BudgetRow | null> {
  return (await db.selectFrom("budgets").select([...COLUMNS]).where("account_id", "=", accountId).where("id", "=", budgetId).executeTakeFirst()) ?? null;
}

/** How many budgets the organization has. */
export async function budgetCountOf(db: Executor, accountId: string): Promise<number> {
  const row = await db.selectFrom("budgets").select((eb) => eb.fn.countAll<number>().as("n")).where("account_id", "=", accountId).executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Inserts a budget row. */
export async function insertBudget(trx: Executor, row: Insertable<BudgetsTable>): Promise<void> {
  await trx.insertInto("budgets").values(row).execute();
}

/** Changes a budget row's fields. */
export async function updateBudgetRow(trx: Executor, budgetId: string, set: Updateable<BudgetsTable>): Promise<void> {
  await trx.updateTable("budgets").set(set).where("id", "=", budgetId).execute();
}

/** Deletes a budget and the records of the holds counted in it; true when it existed. */
export async function deleteBudgetRow(trx: Executor, accountId: string, budgetId: string): Promise<boolean> {
  const res = await trx.deleteFrom("budgets").where("account_id", "=", accountId).where("id", "=", budgetId).executeTakeFirst();
  await trx.deleteFrom("hold_budgets").where("budget_id", "=", budgetId).execute();
  return Number(res.numDeletedRows) > 0;
}

/** Sets the organization's `has_budgets` mark from its budget rows (1 while it has one). */
export async function refreshHasBudgets(trx: Executor, accountId: string): Promise<void> {
  const n = await budgetCountOf(trx, accountId);
  await trx.updateTable("accounts").set({ has_budgets: n > 0 ? 1 : 0 }).where("id", "=", accountId).execute();
}
