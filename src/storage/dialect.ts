/**
 * The SQL dialect a database speaks: `sqlite` (node:sqlite, one file) or `postgres` (pg). A leaf module:
 * the migrations read it to choose their SQL without importing db.ts, which lists them.
 */
import { type Kysely, PostgresAdapter, type Transaction } from "kysely";
import type { Database } from "./schema.ts";

/** The dialect's name. */
export type Dialect = "sqlite" | "postgres";

/** Whether `db` (a handle or an open transaction) runs on PostgreSQL; false on SQLite. */
export function isPostgres(db: Kysely<Database> | Transaction<Database>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
