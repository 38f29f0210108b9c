/**
 * Budgets on calendar windows (D44):
 * - `budgets`: one row per budget of an organization, scoped to the organization, a member or a key, with
 *   its counter (`spent_micros` for the window starting at `window_start`, epoch ms) that every counted hold
 *   raises and its settlement lowers, and the highest threshold already announced in a window
 *   (`alerted_percent` for `alerted_window_start`) with the spend at which the next one is due
 *   (`alert_next_micros`), so the alert sweep reads only budgets with something to announce;
 * - `hold_budgets`: which counters (budget and window) a hold was counted in, so its settlement gives back
 *   to exactly those;
 * - `holds.budgeted`: 1 when the hold has rows in `hold_budgets` (settlements of other holds skip the lookup);
 * - `accounts.has_budgets`: 1 while the organization has a budget, read with the caller's principal so
 *   calls of organizations without budgets never look for one.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("budgets")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull())
    .addColumn("scope_type", "text", (c) => c.notNull())
    .addColumn("scope_id", "text", (c) => c.notNull())
    .addColumn("amount_micros", "bigint", (c) => c.notNull())
    .addColumn("period", "text", (c) => c.notNull())
    .addColumn("timezone", "text", (c) => c.notNull())
    .addColumn("action", "text", (c) => c.notNull())
    .addColumn("thresholds_json", "text", (c) => c.notNull())
    .addColumn("spent_micros", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("window_start", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("alerted_window_start", "bigint")
    .addColumn("alerted_percent", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("alert_next_micros", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("budgets_account").on("budgets").columns(["account_id", "scope_type", "scope_id"]).execute();
  await db.schema
    .createTable("hold_budgets")
    .addColumn("hold_id", "text", (c) => c.notNull())
    .addColumn("budget_id", "text", (c) => c.notNull())
    .addColumn("window_start", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("hold_budgets_pk", ["hold_id", "budget_id"])
    .execute();
  await db.schema.alterTable("holds").addColumn("budgeted", "integer", (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable("accounts").addColumn("has_budgets", "integer", (c) => c.notNull().defaultTo(0)).execute();
}
