/**
 * The source a designed or cloned voice lives on (D27: "a designed or cloned voice lives on the source
 * that created it"): the `UPSTREAMS` entry's name, or null for a voice the built-in simulator made.
 * Speech with the voice uses that source only.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.alterTable("voices").addColumn("upstream_source", "text").execute();
}
