/**
 * Per-key controls and balance alerts (D34).
 *
 * - `api_keys`: the controls (`spend_limit_micros` with `spend_limit_period` `day|week|month|total`,
 *   `expires_at` epoch ms, `models_json` a JSON array of ids or `prefix*` patterns, `rpm`), and the spend
 *   counter of a key with a limit: `spent_micros` is what its open holds and captured charges of the period
 *   starting at `spent_period_start` (epoch ms, UTC; 0 for `total`) add up to. The counter is what makes
 *   the limit atomic with the hold: a hold raises it in the hold's transaction, guarded by the limit.
 * - `holds`: `key_id` and `key_period_start` name the counter a hold was counted in (null when its key had
 *   no limit), so its capture, release or refund lowers that counter, and only while it still counts the
 *   same period.
 * - `accounts`: `low_balance_micros` (the alert threshold, or null) and `low_balance_armed` (0/1: whether
 *   the next fall below the threshold sends `balance.low`), with a partial index for the alert sweep.
 */
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable("api_keys").addColumn("spend_limit_micros", "bigint").execute();
  await db.schema.alterTable("api_keys").addColumn("spend_limit_period", "text").execute();
  await db.schema.alterTable("api_keys").addColumn("expires_at", "bigint").execute();
  await db.schema.alterTable("api_keys").addColumn("models_json", "text").execute();
  await db.schema.alterTable("api_keys").addColumn("rpm", "integer").execute();
  await db.schema.alterTable("api_keys").addColumn("spent_micros", "bigint", (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable("api_keys").addColumn("spent_period_start", "bigint", (c) => c.notNull().defaultTo(0)).execute();

  await db.schema.alterTable("holds").addColumn("key_id", "text").execute();
  await db.schema.alterTable("holds").addColumn("key_period_start", "bigint").execute();

  await db.schema.alterTable("accounts").addColumn("low_balance_micros", "bigint").execute();
  await db.schema.alterTable("accounts").addColumn("low_balance_armed", "integer", (c) => c.notNull().defaultTo(1)).execute();
  await db.schema
    .createIndex("accounts_low_balance")
    .on("accounts")
    .column("id")
    .where(sql.ref("low_balance_micros"), "is not", null)
    .execute();
}
