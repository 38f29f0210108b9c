/**
 * Webhooks (D31): endpoints per account with their signing secrets, the account's default secret (for a
 * submit's `webhook_url`), the outbox of events and one delivery row per event and destination, and the
 * job's own `webhook_url`.
 *
 * Secrets are stored as they are (`whsec_...`): unlike API keys they must stay usable, since the gateway
 * signs with them. `disabled` is 0/1 (one integer type on both dialects). `*_at` are epoch ms.
 * `webhook_deliveries.seq` is the internal order of the delivery log (newest first); `id` is the public id.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable("jobs").addColumn("webhook_url", "text").execute();

  await db.schema
    .createTable("webhook_endpoints")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("events_json", "text", (c) => c.notNull())
    .addColumn("secret", "text", (c) => c.notNull())
    .addColumn("disabled", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("webhook_endpoints_account").on("webhook_endpoints").columns(["account_id", "created_at"]).execute();

  await db.schema
    .createTable("webhook_secrets")
    .addColumn("account_id", "text", (c) => c.primaryKey().references("accounts.id"))
    .addColumn("secret", "text", (c) => c.notNull())
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("webhook_events")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("job_id", "text")
    .addColumn("data_json", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("webhook_deliveries")
    .addColumn("seq", dialect === "postgres" ? "bigserial" : "integer", (c) =>
      dialect === "postgres" ? c.primaryKey() : c.primaryKey().autoIncrement(),
    )
    .addColumn("id", "text", (c) => c.notNull().unique())
    .addColumn("event_id", "text", (c) => c.notNull())
    .addColumn("event_type", "text", (c) => c.notNull())
    .addColumn("account_id", "text", (c) => c.notNull())
    .addColumn("endpoint_id", "text")
    .addColumn("url", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("attempts_json", "text", (c) => c.notNull())
    .addColumn("failures", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("next_attempt_at", "bigint")
    .addColumn("lease_until", "bigint")
    .addColumn("lease_owner", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  await db.schema.createIndex("webhook_deliveries_due").on("webhook_deliveries").columns(["status", "next_attempt_at"]).execute();
  await db.schema.createIndex("webhook_deliveries_account_seq").on("webhook_deliveries").columns(["account_id", "seq"]).execute();
}
