/** Which SQL dialect a database handle speaks (storage/ is the one folder that knows dialects, design.md). */
import { type Kysely, PostgresAdapter, type Transaction } from "kysely";
import type { Database } from "./schema.ts";

/** Whether `db` (a handle or an open transaction) runs on PostgreSQL; false on SQLite. */
export function isPostgres(db: Kysely<Database> | Transaction<Database>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
