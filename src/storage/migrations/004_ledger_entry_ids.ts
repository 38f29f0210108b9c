/**
 * Opaque public ids of ledger entries (D29: `le_<random>`, never a counter that tells anyone how much
 * business the gateway does). `seq` stays the internal order (newest first); `id` is what the API shows
 * and what an `after` cursor names. Existing rows get random ids; new rows are written with one.
 *
 * SQLite cannot add NOT NULL to an existing column: there the unique index and the ledger's inserts
 * (which always write an id) keep it filled; PostgreSQL also gets the NOT NULL constraint.
 */
import { type Kysely, sql } from "kysely";
import { newId } from "../../ids.ts";
import type { Dialect } from "../dialect.ts";

/** Rows updated per statement while backfilling (two parameters each, well under both dialects' limits). */
const BATCH = 500;

export async function up(db: Kysely<unknown>, dialect: Dialect): Promise<void> {
  await db.schema.alterTable("ledger_entries").addColumn("id", "text").execute();
  for (;;) {
    const rows = await sql<{ seq: number }>`select seq from ledger_entries where id is null order by seq limit ${BATCH}`.execute(db);
    if (rows.rows.length === 0) break;
    const cases = sql.join(rows.rows.map((r) => sql`when ${Number(r.seq)} then ${newId("le")}`), sql` `);
    const seqs = sql.join(rows.rows.map((r) => sql`${Number(r.seq)}`));
    await sql`update ledger_entries set id = case seq ${cases} end where seq in (${seqs})`.execute(db);
  }
  await db.schema.createIndex("ledger_entries_id").on("ledger_entries").column("id").unique().execute();
  if (dialect === "postgres") {
    await db.schema.alterTable("ledger_entries").alterColumn("id", (c) => c.setNotNull()).execute();
  }
}
