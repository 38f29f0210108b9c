/**
 * Jobs (stored audio outputs now; image and video jobs later, D3) and the upstream id of owned voices.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("jobs")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    .addColumn("api_key_id", "text")
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("model", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("hold_id", "text")
    .addColumn("hold_micros", "bigint", (c) => c.notNull().defaultTo(0))
    .addColumn("cost_micros", "bigint")
    .addColumn("request_json", "text", (c) => c.notNull())
    .addColumn("request_hash", "text")
    .addColumn("idempotency_key", "text")
    .addColumn("output_json", "text")
    .addColumn("duration_sec", "double precision")
    .addColumn("error_code", "text")
    .addColumn("error_message", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .addColumn("started_at", "bigint")
    .addColumn("heartbeat_at", "bigint")
    .addColumn("worker_id", "text")
    .execute();
  await db.schema.createIndex("jobs_account_created").on("jobs").columns(["account_id", "created_at"]).execute();
  await db.schema.createIndex("jobs_status").on("jobs").columns(["status", "created_at"]).execute();
  await db.schema
    .createIndex("jobs_idempotency")
    .on("jobs")
    .columns(["api_key_id", "idempotency_key"])
    .unique()
    .where("idempotency_key", "is not", null)
    .execute();

  await db.schema.alterTable("voices").addColumn("upstream_voice_id", "text").execute();
  await db.schema.alterTable("voices").addColumn("description", "text").execute();
}
