/**
 * Idempotent synchronous calls (D37): one row per `(scope, idempotency key)` of a request that placed a hold
 * and answered directly (speech, music, chat, ...). The primary key makes the first request's insert the
 * only one that wins, on every gateway process; the row then holds the stored answer (status, headers, the
 * body's blob key) that a retry replays. `state` is `running` (its `expires_at` is the running request's
 * lease, renewed while it runs) or `done` (`expires_at` 24 h after the answer). `*_at` are epoch ms.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("idempotent_calls")
    .addColumn("scope", "text", (c) => c.notNull())
    .addColumn("idem_key", "text", (c) => c.notNull())
    .addColumn("account_id", "text", (c) => c.notNull())
    .addColumn("request_hash", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("owner", "text", (c) => c.notNull())
    .addColumn("status", "integer")
    .addColumn("headers_json", "text")
    .addColumn("blob_key", "text")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("expires_at", "bigint", (c) => c.notNull())
    .addPrimaryKeyConstraint("idempotent_calls_pk", ["scope", "idem_key"])
    .execute();
  await db.schema.createIndex("idempotent_calls_expiry").on("idempotent_calls").column("expires_at").execute();
}
