/**
 * The SQL dialect a database speaks: `sqlite` (node:sqlite, one file) or `postgres` (pg). A leaf module:
 * the migrations read it to choose their SQL without importing db.ts, which lists them.
 */
export type Dialect = "sqlite" | "postgres";
