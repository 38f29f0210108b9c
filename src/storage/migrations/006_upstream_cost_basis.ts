/**
 * Where a job's `upstream_cost_micros` comes from (issue "Real upstreams, part 1" point 6):
 * `reported` (the source said what it charged: BFL's `cost`) or `list_price` (the provider's public list
 * price of what was delivered, when the source says nothing); null for jobs no real source served.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable("jobs").addColumn("upstream_cost_basis", "text").execute();
}
