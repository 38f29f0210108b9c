/**
 * What a dialect keeps on a job besides the native request (D47, the Replicate dialect):
 * - `deadline_at`: epoch ms after which the job is canceled (`Cancel-After`); the sweep finds overdue jobs
 *   through a partial index, so rows without a deadline cost nothing;
 * - `webhook_events_json`: when set, the job's `webhook_url` receives the prediction format, and only these
 *   events (`start`, `output`, `completed`), instead of the native job events;
 * - `dialect_json`: how the caller named the job (model, version, input as sent), to render it back.
 * All null on native jobs.
 */
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable("jobs").addColumn("deadline_at", "bigint").execute();
  await db.schema.alterTable("jobs").addColumn("webhook_events_json", "text").execute();
  await db.schema.alterTable("jobs").addColumn("dialect_json", "text").execute();
  await db.schema.createIndex("jobs_deadline").on("jobs").column("deadline_at").where(sql.ref("deadline_at"), "is not", null).execute();
}
