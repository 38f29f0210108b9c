/**
 * Migration 017 on both databases: the index `holds_account_status` is gone, and the queries that name an
 * account's open holds still answer (on SQLite through `holds_status_created`, with no full scan).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { sql } from "kysely";
import { orgContents } from "../../src/accounts/orgs.repository.ts";
import { credit, placeHold, releaseHold } from "../../src/billing/ledger.ts";
import { migrate, openDatabase } from "../../src/storage/db.ts";
import { BACKENDS, createTempDatabase } from "../helpers/backends.ts";

for (const backend of BACKENDS) {
  describe(`migration 017 (holds_account_status dropped) on ${backend.name}`, { skip: backend.skip }, () => {
    test("the index is gone; an account's open holds are still counted, through the status index", async () => {
      const temp = await createTempDatabase(backend.name);
      const db = openDatabase(temp.url);
      try {
        await migrate(db, { to: "016_organizations" });
        const k = db.kysely;
        const indexes = async () =>
          backend.name === "sqlite"
            ? (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'holds'`.execute(k)).rows.map((r) => r.name)
            : (await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'holds'`.execute(k)).rows.map((r) => r.name);
        assert.ok((await indexes()).includes("holds_account_status"), "there before 017");
        await migrate(db);
        const after = await indexes();
        assert.ok(!after.includes("holds_account_status"), after.join(", "));
        assert.ok(after.includes("holds_status_created"));

        await sql`insert into accounts (id, name, balance_micros, total_deposits_micros, created_at) values ('org_a', 'a', 0, 0, 0), ('org_b', 'b', 0, 0, 0)`.execute(k);
        for (const id of ["org_a", "org_b"]) await credit(k, { accountId: id, kind: "adjustment", amountMicros: 1_000 });
        const a1 = await placeHold(k, { accountId: "org_a", amountMicros: 100 });
        await placeHold(k, { accountId: "org_a", amountMicros: 100 });
        await placeHold(k, { accountId: "org_b", amountMicros: 100 });
        await releaseHold(k, a1.id);
        assert.equal((await orgContents(k, "org_a"))?.openHolds, 1);
        assert.equal((await orgContents(k, "org_b"))?.openHolds, 1);
        if (backend.name === "sqlite") {
          const plan = (await sql<{ detail: string }>`explain query plan select count(*) from holds where account_id = 'org_a' and status = 'open'`.execute(k)).rows
            .map((r) => r.detail)
            .join("; ");
          assert.match(plan, /holds_status_created/, plan);
        }
      } finally {
        await db.close();
        await temp.drop();
      }
    });
  });
}
