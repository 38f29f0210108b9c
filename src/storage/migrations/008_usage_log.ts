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
 *
 * Plans seen with EXPLAIN on 10,000,000 records over 1,000 accounts (10,000 each, 10 % test mode),
 * after ANALYZE, on PostgreSQL 15.20 (EXPLAIN ANALYZE) and SQLite 3.53.4 (EXPLAIN QUERY PLAN), for the
 * queries of billing/usage-report.ts with `limit 21`:
 *
 *   first page `account_id = ? and mode = 'live' order by created_at desc, id desc`
 *     pg:     Limit -> Index Scan Backward using usage_account_created (actual rows=21)
 *               Index Cond: ((account_id = 'usr_7') AND (mode = 'live'))
 *     sqlite: SEARCH usage_records USING INDEX usage_account_created (account_id=? AND mode=?)
 *   after a cursor `... and (created_at, id) < (?, ?)`
 *     pg:     Limit -> Index Scan Backward using usage_account_created (actual rows=21)
 *               Index Cond: (... AND (ROW(created_at, id) < ROW('1735719477021'::bigint, 'req_9959007'::text)))
 *     sqlite: SEARCH usage_records USING INDEX usage_account_created (account_id=? AND mode=? AND (created_at,id)<(?,?))
 *   `model = ?` / `key_id = ?` / `status = ?`
 *     pg:     Limit -> Index Scan Backward using usage_account_model / usage_account_key / usage_account_status
 *               Index Cond: ((account_id = ...) AND (mode = 'live') AND (model = 'model_7'))   (and alike)
 *     sqlite: SEARCH usage_records USING INDEX usage_account_model (account_id=? AND mode=? AND model=?)   (and alike)
 *   `from`/`to` `... and created_at >= ? and created_at < ?`
 *     pg:     Limit -> Index Scan Backward using usage_account_created
 *               Index Cond: (... AND (created_at >= ...) AND (created_at < ...))
 *     sqlite: SEARCH usage_records USING INDEX usage_account_created (account_id=? AND mode=? AND created_at>? AND created_at<?)
 *   `GET /v1/usage` (30 days, `group by model` or `group by created_at / 900000`)
 *     pg:     HashAggregate -> Bitmap Heap Scan on usage_records
 *               -> Bitmap Index Scan on usage_account_created (actual rows=10000)   ~0.2-0.3 s for 10,000 records
 *     sqlite: SEARCH usage_records USING INDEX usage_account_created (...created_at>? AND created_at<?)
 *             USE TEMP B-TREE FOR GROUP BY
 *   `GET /v1/requests/{id}`: pg Index Scan using usage_records_pkey; sqlite SEARCH ... sqlite_autoindex_usage_records_1 (id=?)
 *     its ledger entries (3,000,000 entries): pg Sort (a handful of rows) -> Index Scan using ledger_request;
 *     sqlite SEARCH ledger_entries USING INDEX ledger_request (request_id=?)
 *   a job's record (jobs/ended.ts): pg Index Scan using usage_job; sqlite SEARCH ... USING INDEX usage_job (job_id=?)
 * No listing sorts its rows: each reads `limit + 1` index entries backwards (test/usage/plans.test.ts
 * checks that on both databases).
 */
import type { Kysely } from "kysely";
import type { Dialect } from "../dialect.ts";

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
