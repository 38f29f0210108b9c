/**
 * Request ids, the usage log and test-mode keys (D29, D32).
 *
 * - `usage_records`: one row per paid call (every call that placed a hold, or for a test-mode key would
 *   have), keyed by the request id `req_...`. Units are columns, not JSON, so `GET /v1/usage` sums them in
 *   SQL; a unit that does not apply to the call's kind is null. `duration_ms` holds the `seconds` unit
 *   in milliseconds so that sums stay exact integers.
 * - `holds.request_id` and `ledger_entries.request_id`: every entry of a call names its request (the
 *   capture and release entries take it from the hold, as they take `job_id`).
 * - `api_keys.mode` and `jobs.mode`: `live` or `test` (D32); a job remembers the mode of the key that
 *   submitted it, so the runner serves a test job with the simulator.
 *
 * Indexes: every listing filters on `(account_id, mode)` and orders by `(created_at, id)` newest first;
 * each optional filter of `GET /v1/requests` (model, key, status) has its own index with those columns
 * after it, so a page is an index range scan that stops after `limit + 1` rows whatever the table size.
 * Query plans seen with 10,000,000 rows spread over 1,000 accounts (EXPLAIN; PostgreSQL 16 after ANALYZE,
 * SQLite 3.50 after ANALYZE), for the first page and for a page after a cursor:
 *
 *   PostgreSQL, `where account_id = $1 and mode = 'live' order by created_at desc, id desc limit 21`:
 *     Limit -> Index Scan Backward using usage_account_created on usage_records
 *              Index Cond: ((account_id = $1) AND (mode = 'live'))
 *   ... and `(created_at, id) < ($2, $3)` (the `after` cursor):
 *     Limit -> Index Scan Backward using usage_account_created on usage_records
 *              Index Cond: ((account_id = $1) AND (mode = 'live') AND (ROW(created_at, id) < ROW($2, $3)))
 *   ... and `model = $4`:
 *     Limit -> Index Scan Backward using usage_account_model on usage_records
 *              Index Cond: ((account_id = $1) AND (mode = 'live') AND (model = $4))
 *   `GET /v1/usage` (`created_at >= $2 and created_at < $3`, grouped):
 *     GroupAggregate / HashAggregate -> Index Scan using usage_account_created on usage_records
 *              Index Cond: ((account_id = $1) AND (mode = 'live') AND (created_at >= $2) AND (created_at < $3))
 *   `GET /v1/requests/{id}` ledger: Index Scan using ledger_request on ledger_entries (request_id = $1)
 *
 *   SQLite (EXPLAIN QUERY PLAN):
 *     SEARCH usage_records USING INDEX usage_account_created (account_id=? AND mode=?)   -- no temp B-tree
 *     SEARCH usage_records USING INDEX usage_account_created (account_id=? AND mode=? AND (created_at,id)<(?,?))
 *     SEARCH usage_records USING INDEX usage_account_model (account_id=? AND mode=? AND model=?)
 *     SEARCH usage_records USING INDEX usage_account_created (account_id=? AND mode=? AND created_at>? AND created_at<?)
 *     SEARCH ledger_entries USING INDEX ledger_request (request_id=?)
 *
 * test/usage/plans.test.ts re-checks these plans (index used, no sort) on both databases.
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../db.ts";

export async function up(db: Kysely<unknown>, _dialect: Dialect): Promise<void> {
  await db.schema
    .createTable("usage_records")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("account_id", "text", (c) => c.notNull().references("accounts.id"))
    .addColumn("key_id", "text")
    .addColumn("mode", "text", (c) => c.notNull())
    .addColumn("model", "text", (c) => c.notNull())
    .addColumn("kind", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull())
    .addColumn("job_id", "text")
    .addColumn("hold_micros", "bigint", (c) => c.notNull())
    .addColumn("cost_micros", "bigint")
    .addColumn("characters", "bigint")
    .addColumn("duration_ms", "bigint")
    .addColumn("images", "bigint")
    .addColumn("input_tokens", "bigint")
    .addColumn("output_tokens", "bigint")
    .addColumn("cached_tokens", "bigint")
    .addColumn("minutes", "bigint")
    .addColumn("fallback_layer", "integer", (c) => c.notNull().defaultTo(0))
    .addColumn("latency_ms", "bigint")
    .addColumn("created_at", "bigint", (c) => c.notNull())
    .addColumn("updated_at", "bigint", (c) => c.notNull())
    .execute();
  const index = (name: string, columns: string[]) => db.schema.createIndex(name).on("usage_records").columns(columns).execute();
  await index("usage_account_created", ["account_id", "mode", "created_at", "id"]);
  await index("usage_account_model", ["account_id", "mode", "model", "created_at", "id"]);
  await index("usage_account_key", ["account_id", "mode", "key_id", "created_at", "id"]);
  await index("usage_account_status", ["account_id", "mode", "status", "created_at", "id"]);
  await db.schema.createIndex("usage_job").on("usage_records").column("job_id").where("job_id", "is not", null).execute();

  await db.schema.alterTable("holds").addColumn("request_id", "text").execute();
  await db.schema.alterTable("ledger_entries").addColumn("request_id", "text").execute();
  await db.schema.createIndex("ledger_request").on("ledger_entries").column("request_id").where("request_id", "is not", null).execute();

  await db.schema.alterTable("api_keys").addColumn("mode", "text", (c) => c.notNull().defaultTo("live")).execute();
  await db.schema.alterTable("jobs").addColumn("mode", "text", (c) => c.notNull().defaultTo("live")).execute();
}
