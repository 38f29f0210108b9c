/**
 * Tracing (D40): a job row keeps the W3C `traceparent` of the request that submitted it, so the runner's
 * work on the job and its webhook deliveries continue that trace. Null when tracing was off at submit.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable("jobs").addColumn("traceparent", "text").execute();
}
