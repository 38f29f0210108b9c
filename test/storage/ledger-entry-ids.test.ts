/**
 * Migration 004 on both databases: ledger entries written before it (with counter ids) get opaque,
 * unique `le_` ids, keep their order, and page with `after` like new ones; entries written after it
 * follow them.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { sql } from "kysely";
import { credit, listLedger } from "../../src/billing/ledger.ts";
import { migrate, openDatabase } from "../../src/storage/db.ts";
import { BACKENDS, createTempDatabase } from "../helpers/backends.ts";

/** More rows than one backfill batch, so the loop runs more than once. */
const OLD_ENTRIES = 1_203;

for (const backend of BACKENDS) {
  describe(`migration 004 (ledger entry ids) on ${backend.name}`, { skip: backend.skip }, () => {
    test("existing entries get opaque ids, in the same order, and new ones follow", async () => {
      const temp = await createTempDatabase(backend.name);
      const db = openDatabase(temp.url);
      try {
        await migrate(db, { to: "003_sweep_indexes" });
        const k = db.kysely;
        await sql`insert into accounts (id, email, password_hash, balance_micros, total_deposits_micros, tier_override, limits_override, created_at)
          values ('acct_a', 'a@example.com', 'x', ${OLD_ENTRIES}, 0, null, null, 0)`.execute(k);
        for (let i = 0; i < OLD_ENTRIES; i += 300) {
          const values = [];
          for (let n = i + 1; n <= Math.min(i + 300, OLD_ENTRIES); n++) {
            values.push(sql`('acct_a', 'adjustment', 1, ${n}, null, null, null, 1700000000000)`);
          }
          await sql`insert into ledger_entries (account_id, kind, amount_micros, balance_after_micros, hold_id, job_id, reference, created_at)
            values ${sql.join(values)}`.execute(k);
        }

        await migrate(db);
        // Migration 016 (D41) made the account the personal organization of user `acct_a`.
        const org = (await k.selectFrom("users").select("personal_org_id").where("id", "=", "acct_a").executeTakeFirstOrThrow()).personal_org_id!;
        await credit(k, { accountId: org, kind: "adjustment", amountMicros: 5 });

        const all = (await listLedger(k, org, { limit: OLD_ENTRIES + 1, after: null })).entries;
        assert.equal(all.length, OLD_ENTRIES + 1);
        assert.deepEqual(
          all.map((e) => e.balanceAfterMicros),
          [OLD_ENTRIES + 5, ...Array.from({ length: OLD_ENTRIES }, (_, i) => OLD_ENTRIES - i)],
          "newest first, the new entry on top",
        );
        for (const e of all) assert.match(e.id, /^le_[A-Za-z0-9]{22}([A-Za-z0-9]{8})?$/);
        assert.equal(new Set(all.map((e) => e.id)).size, all.length, "ids are unique");

        const paged: string[] = [];
        let after: string | null = null;
        for (;;) {
          const page: Awaited<ReturnType<typeof listLedger>> = await listLedger(k, org, { limit: 100, after });
          paged.push(...page.entries.map((e) => e.id));
          if (!page.hasMore) break;
          after = page.entries[page.entries.length - 1].id;
        }
        assert.deepEqual(paged, all.map((e) => e.id));

        await assert.rejects(
          sql`insert into ledger_entries (id, account_id, kind, amount_micros, balance_after_micros, created_at)
            values (${all[0].id}, ${org}, 'adjustment', 0, 0, 0)`.execute(k),
          "a public id is unique",
        );
      } finally {
        await db.close();
        await temp.drop();
      }
    });
  });
}
