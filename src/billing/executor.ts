/**
 * The database handle the billing modules take: a Kysely instance or an open transaction, and the helper
 * that runs work in one. A leaf of billing/ that the ledger, the key-spend counter and the usage log all
 * import, so none of them imports another for it (no import cycle).
 */
import type { Kysely, Transaction } from "kysely";
import type { Database } from "../storage/schema.ts";

/** A database handle or an open transaction. */
export type Executor = Kysely<Database> | Transaction<Database>;

/** Runs `fn` in the given transaction, or opens one. */
export async function inTransaction<T>(
  db: Executor,
  fn: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  if (db.isTransaction) return fn(db as Transaction<Database>);
  return (db as Kysely<Database>).transaction().execute(fn);
}
