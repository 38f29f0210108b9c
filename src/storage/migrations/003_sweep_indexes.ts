/**
 * Indexes for the sweep, which runs every few seconds in every process: open holds by age (orphaned
 * synchronous holds) and processing jobs by heartbeat.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.createIndex("holds_status_created").on("holds").columns(["status", "created_at"]).execute();
  await db.schema.createIndex("jobs_status_heartbeat").on("jobs").columns(["status", "heartbeat_at"]).execute();
}
