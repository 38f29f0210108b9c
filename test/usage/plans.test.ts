/**
 * The usage listings' indexes (migration 008) fit their queries on both databases: each page of
 * `GET /v1/requests` (first page, after a cursor, per filter) is read from an index in its order, never
 * sorted. On PostgreSQL a table this small would be scanned whole, so the plan is asked for with sorting
 * and sequential scans priced out: an index that cannot give the order would still show a Sort. The
 * plans on 10,000,000 records are in the migration's comment.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { type Kysely, sql } from "kysely";
import { migrate, openDatabase } from "../../src/storage/db.ts";
import type { Database } from "../../src/storage/schema.ts";
import { BACKENDS, createTempDatabase } from "../helpers/backends.ts";

const QUERIES: { name: string; index: string; query: ReturnType<typeof sql> }[] = [
  { name: "first page", index: "usage_account_created", query: sql`select * from usage_records where account_id = 'usr_1' and mode = 'live' order by created_at desc, id desc limit 21` },
  {
    name: "after a cursor",
    index: "usage_account_created",
    query: sql`select * from usage_records where account_id = 'usr_1' and mode = 'live' and (created_at, id) < (5000, 'req_50') order by created_at desc, id desc limit 21`,
  },
  { name: "model", index: "usage_account_model", query: sql`select * from usage_records where account_id = 'usr_1' and mode = 'live' and model = 'm_1' order by created_at desc, id desc limit 21` },
  { name: "key", index: "usage_account_key", query: sql`select * from usage_records where account_id = 'usr_1' and mode = 'live' and key_id = 'key_1' order by created_at desc, id desc limit 21` },
  { name: "status", index: "usage_account_status", query: sql`select * from usage_records where account_id = 'usr_1' and mode = 'test' and status = 'failed' order by created_at desc, id desc limit 21` },
];

async function planOf(db: Kysely<Database>, backend: string, query: ReturnType<typeof sql>): Promise<string> {
  if (backend === "postgres") {
    const rows = await sql<{ "QUERY PLAN": string }>`explain (costs off) ${query}`.execute(db);
    return rows.rows.map((r) => r["QUERY PLAN"]).join("\n");
  }
  const rows = await sql<{ detail: string }>`explain query plan ${query}`.execute(db);
  return rows.rows.map((r) => r.detail).join("\n");
}

for (const backend of BACKENDS) {
  describe(`usage listing plans on ${backend.name}`, { skip: backend.skip }, () => {
    test("every listing reads its index in order, with no sort", async () => {
      const temp = await createTempDatabase(backend.name);
      // One connection: the planner settings below apply to the session that explains.
      const db = openDatabase(temp.url, { poolSize: 1 });
      try {
        await migrate(db);
        const k = db.kysely;
        await sql`insert into accounts (id, name, balance_micros, total_deposits_micros, created_at) values ('usr_1', 'a@x', 0, 0, 0), ('usr_2', 'b@x', 0, 0, 0)`.execute(k);
        const rows = [];
        for (let i = 0; i < 200; i++) {
          rows.push(sql`(${`req_${i}`}, ${`usr_${1 + (i % 2)}`}, ${`key_${i % 3}`}, ${i % 5 === 0 ? "test" : "live"}, ${`m_${i % 4}`}, 'speech', ${i % 7 === 0 ? "failed" : "succeeded"}, 100, 0, ${i * 50}, ${i * 50})`);
        }
        await sql`insert into usage_records (id, account_id, key_id, mode, model, kind, status, hold_micros, fallback_layer, created_at, updated_at) values ${sql.join(rows)}`.execute(k);
        if (backend.name === "postgres") {
          await sql`analyze usage_records`.execute(k);
          await sql`set enable_seqscan = off`.execute(k);
          await sql`set enable_sort = off`.execute(k);
        } else {
          await sql`analyze`.execute(k);
        }
        for (const q of QUERIES) {
          const plan = await planOf(k, backend.name, q.query);
          assert.ok(plan.includes(q.index), `${q.name}: uses ${q.index}\n${plan}`);
          assert.ok(!/\bSort\b|TEMP B-TREE/i.test(plan), `${q.name}: no sort\n${plan}`);
        }
      } finally {
        await db.close();
        await temp.drop();
      }
    });
  });
}
