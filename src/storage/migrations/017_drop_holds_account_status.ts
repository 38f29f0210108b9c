/**
 * Drops the index `holds_account_status` (account, status) of migration 001 (issue 33: the ledger's write
 * cost per call). Every query that names an account's holds also asks for `status = 'open'`
 * (accounts/orgs.repository.ts `orgContents`, billing/key-spend.repository.ts `markHoldsCounted`), and
 * `holds_status_created` (status, created_at) finds the open holds, which are only the calls in flight and
 * the jobs not yet ended. Meanwhile every hold wrote an entry into it, and every capture or release moved
 * that entry (the status changes): on SQLite, 4.5 % more chat calls/s without it in alternated slices.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema.dropIndex("holds_account_status").ifExists().execute();
}
