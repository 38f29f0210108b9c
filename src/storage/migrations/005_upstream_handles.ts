/**
 * Durable upstream work (D27, D28): a job records which source accepted it and the handle to resume it
 * (`upstream_source`, `upstream_handle_json`), the failover layer that served it (`fallback_layer`, 0 for
 * the first source) and what the source said it charged (`upstream_cost_micros`, micro-USD, null when it
 * did not say); `not_before` (ms since epoch) keeps a pending job in its queue until then, when every
 * source of its family was at `max_concurrency`.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable("jobs").addColumn("upstream_source", "text").execute();
  await db.schema.alterTable("jobs").addColumn("upstream_handle_json", "text").execute();
  await db.schema.alterTable("jobs").addColumn("fallback_layer", "integer", (c) => c.notNull().defaultTo(0)).execute();
  await db.schema.alterTable("jobs").addColumn("upstream_cost_micros", "bigint").execute();
  await db.schema.alterTable("jobs").addColumn("not_before", "bigint").execute();
}
