/**
 * The job API of D30: `progress` (0..1, or null when the upstream does not say) of a `processing` job, as
 * the runner last learned it; and an index on (account, status, created_at) for the two per-account reads
 * that filter by status: the caller's pending jobs in start order (`queue_position`) and `GET /v1/jobs`
 * with a `status` filter (newest first). The unfiltered list is served by `jobs_account_created`.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable("jobs").addColumn("progress", "double precision").execute();
  await db.schema.createIndex("jobs_account_status_created").on("jobs").columns(["account_id", "status", "created_at"]).execute();
}
