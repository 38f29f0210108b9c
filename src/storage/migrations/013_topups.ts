/**
 * Stripe Checkout top-ups (D33): one row per Checkout Session whose payment became a deposit. The session
 * id is the primary key and the row is written in the same transaction as the ledger `deposit`, so a
 * session is credited exactly once however often (or however concurrently) Stripe delivers its events:
 * a second insert is a unique violation and rolls its deposit back. `*_at` are epoch ms.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("topups")
    .addColumn("session_id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    .addColumn("amount_micros", "bigint", (c) => c.notNull())
    .addColumn("event_id", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("topups_account").on("topups").columns(["account_id", "created_at"]).execute();
}
