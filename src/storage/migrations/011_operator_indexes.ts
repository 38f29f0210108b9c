/**
 * Indexes for the operator API (docs/operator-api.md): the account list newest first (`GET /v1/admin/users`
 * without a search reads it page by page instead of sorting every account), and the revenue report's scan
 * of live usage records by time (`GET /v1/admin/revenue`), which otherwise reads the whole usage table.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.createIndex("accounts_created").on("accounts").columns(["created_at", "id"]).execute();
  await db.schema.createIndex("usage_mode_created").on("usage_records").columns(["mode", "created_at"]).execute();
}
