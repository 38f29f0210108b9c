/**
 * Ledger invariants (docs/architecture.md 1, 2, 4) on both databases: balance never negative and always the
 * ledger sum, holds settled exactly once, concurrent holds never overdraw.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  captureHold,
  credit,
  getBalance,
  InsufficientFundsError,
  ledgerSum,
  listLedger,
  placeHold,
  releaseHold,
} from "../../src/billing/ledger.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

for (const backend of BACKENDS) {
  describe(`ledger on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name);
    });
    after(async () => {
      await gw?.close();
    });

    async function invariant(accountId: string) {
      const db = gw.services.db.kysely;
      const balance = await getBalance(db, accountId);
      assert.ok(balance !== null && balance >= 0, "balance is never negative");
      assert.equal(balance, await ledgerSum(db, accountId), "balance equals the ledger sum");
      return balance;
    }

    test("signup credit is a signup_credit entry of 0.50", async () => {
      const u = await gw.register();
      assert.equal(await invariant(u.org_id), 500_000);
      const page = await listLedger(gw.services.db.kysely, u.org_id, { limit: 10, after: null });
      assert.deepEqual(
        page.entries.map((e) => [e.kind, e.amountMicros, e.balanceAfterMicros]),
        [["signup_credit", 500_000, 500_000]],
      );
    });

    test("hold, capture less than held: hold_release + charge, net -final", async () => {
      const u = await gw.register();
      const db = gw.services.db.kysely;
      const hold = await placeHold(db, { accountId: u.org_id, amountMicros: 300_000, reference: "m" });
      assert.equal(hold.balanceAfterMicros, 200_000);
      assert.equal(await invariant(u.org_id), 200_000);
      const s = await captureHold(db, hold.id, 123_457);
      assert.equal(s.balanceAfterMicros, 500_000 - 123_457);
      assert.equal(await invariant(u.org_id), 376_543);
      const page = await listLedger(db, u.org_id, { limit: 10, after: null });
      assert.deepEqual(
        page.entries.map((e) => [e.kind, e.amountMicros, e.balanceAfterMicros]),
        [
          ["charge", -123_457, 376_543],
          ["hold_release", 300_000, 500_000],
          ["hold", -300_000, 200_000],
          ["signup_credit", 500_000, 500_000],
        ],
      );
    });

    test("a hold is settled exactly once", async () => {
      const u = await gw.register();
      const db = gw.services.db.kysely;
      const h1 = await placeHold(db, { accountId: u.org_id, amountMicros: 100_000 });
      await captureHold(db, h1.id, 100_000);
      await assert.rejects(captureHold(db, h1.id, 100_000));
      assert.equal(await releaseHold(db, h1.id), null);
      const h2 = await placeHold(db, { accountId: u.org_id, amountMicros: 100_000 });
      assert.notEqual(await releaseHold(db, h2.id), null);
      assert.equal(await releaseHold(db, h2.id), null);
      await assert.rejects(captureHold(db, h2.id, 1));
      assert.equal(await invariant(u.org_id), 400_000);
    });

    test("capture cannot exceed the hold", async () => {
      const u = await gw.register();
      const db = gw.services.db.kysely;
      const h = await placeHold(db, { accountId: u.org_id, amountMicros: 1000 });
      await assert.rejects(captureHold(db, h.id, 1001));
      assert.equal(await invariant(u.org_id), 499_000);
      await releaseHold(db, h.id);
      assert.equal(await invariant(u.org_id), 500_000);
    });

    test("a hold over the balance is refused and writes nothing", async () => {
      const u = await gw.register();
      const db = gw.services.db.kysely;
      await assert.rejects(
        placeHold(db, { accountId: u.org_id, amountMicros: 500_001 }),
        InsufficientFundsError,
      );
      assert.equal(await invariant(u.org_id), 500_000);
      const page = await listLedger(db, u.org_id, { limit: 10, after: null });
      assert.equal(page.entries.length, 1);
    });

    test("30 concurrent holds on a balance covering 5: exactly 5 succeed, no overdraft", async () => {
      const u = await gw.register();
      const db = gw.services.db.kysely;
      const results = await Promise.allSettled(
        Array.from({ length: 30 }, () => placeHold(db, { accountId: u.org_id, amountMicros: 100_000 })),
      );
      const ok = results.filter((r) => r.status === "fulfilled");
      assert.equal(ok.length, 5);
      for (const r of results) {
        if (r.status === "rejected") assert.ok(r.reason instanceof InsufficientFundsError);
      }
      assert.equal(await invariant(u.org_id), 0);
      await Promise.all(
        ok.map((r, i) =>
          i % 2 === 0
            ? captureHold(db, (r as PromiseFulfilledResult<{ id: string }>).value.id, 50_000)
            : releaseHold(db, (r as PromiseFulfilledResult<{ id: string }>).value.id),
        ),
      );
      // 3 captured at 0.05 each, 2 released: 0.50 - 0.15.
      assert.equal(await invariant(u.org_id), 350_000);
    });

    test("ledger pages newest first with after cursor and has_more", async () => {
      const u = await gw.register();
      const db = gw.services.db.kysely;
      for (let i = 1; i <= 5; i++)
        await credit(db, { accountId: u.org_id, kind: "adjustment", amountMicros: i });
      const p1 = await listLedger(db, u.org_id, { limit: 4, after: null });
      assert.equal(p1.hasMore, true);
      assert.deepEqual(
        p1.entries.map((e) => e.amountMicros),
        [5, 4, 3, 2],
      );
      const p2 = await listLedger(db, u.org_id, { limit: 4, after: p1.entries[3].id });
      assert.equal(p2.hasMore, false);
      assert.deepEqual(
        p2.entries.map((e) => e.amountMicros),
        [1, 500_000],
      );
      await invariant(u.org_id);
    });

    test("entry ids are opaque (le_ + 8 time and 22 random characters, D29) on every write path", async () => {
      const u = await gw.register();
      const db = gw.services.db.kysely;
      const captured = await placeHold(db, { accountId: u.org_id, amountMicros: 100_000, reference: "m" });
      await captureHold(db, captured.id, 40_000);
      const released = await placeHold(db, { accountId: u.org_id, amountMicros: 100_000 });
      await releaseHold(db, released.id);
      await credit(db, { accountId: u.org_id, kind: "adjustment", amountMicros: 7 });
      const { entries } = await listLedger(db, u.org_id, { limit: 100, after: null });
      assert.deepEqual(
        entries.map((e) => e.kind),
        ["adjustment", "hold_release", "hold", "charge", "hold_release", "hold", "signup_credit"],
      );
      for (const e of entries) assert.match(e.id, /^le_[A-Za-z0-9]{30}$/);
      assert.equal(new Set(entries.map((e) => e.id)).size, entries.length, "ids are unique");
    });

    test("after pages through every entry exactly once, in order, within one millisecond too", async () => {
      const u = await gw.register();
      const db = gw.services.db.kysely;
      for (let i = 1; i <= 11; i++) await credit(db, { accountId: u.org_id, kind: "adjustment", amountMicros: i });
      // All entries in one millisecond: only the internal sequence orders them.
      await db.updateTable("ledger_entries").set({ created_at: 1_700_000_000_000 }).where("account_id", "=", u.org_id).execute();
      const all = (await listLedger(db, u.org_id, { limit: 100, after: null })).entries;
      assert.deepEqual(
        all.map((e) => e.amountMicros),
        [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 500_000],
      );
      const seen: string[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 20; pages++) {
        const page: Awaited<ReturnType<typeof listLedger>> = await listLedger(db, u.org_id, { limit: 5, after });
        seen.push(...page.entries.map((e) => e.id));
        if (!page.hasMore) break;
        after = page.entries[page.entries.length - 1].id;
      }
      assert.deepEqual(seen, all.map((e) => e.id));
    });

    test("an after naming no entry of the caller gives the first page", async () => {
      const u = await gw.register();
      const other = await gw.register();
      const db = gw.services.db.kysely;
      await credit(db, { accountId: u.org_id, kind: "adjustment", amountMicros: 1 });
      const first = await listLedger(db, u.org_id, { limit: 1, after: null });
      const othersEntry = (await listLedger(db, other.org_id, { limit: 1, after: null })).entries[0].id;
      for (const after of ["le_1", "le_AAAAAAAAAAAAAAAAAAAAAA", othersEntry, ""]) {
        assert.deepEqual(await listLedger(db, u.org_id, { limit: 1, after }), first, after);
      }
    });
  });
}

describe("stale synchronous holds", () => {
  test("an open hold without a job older than the cutoff is released; job holds and fresh ones stay", async () => {
    const { releaseStaleHolds } = await import("../../src/billing/ledger.ts");
    const gw = await startGateway("sqlite");
    try {
      const u = await gw.register();
      const db = gw.services.db.kysely;
      const old = await placeHold(db, { accountId: u.org_id, amountMicros: 100_000 });
      const job = await placeHold(db, { accountId: u.org_id, amountMicros: 100_000, jobId: "job_x" });
      await db.updateTable("holds").set({ created_at: Date.now() - 3_600_000 }).where("id", "in", [old.id, job.id]).execute();
      const fresh = await placeHold(db, { accountId: u.org_id, amountMicros: 100_000 });
      assert.equal(await releaseStaleHolds(db, 30 * 60_000), 1);
      assert.equal(await getBalance(db, u.org_id), 300_000);
      assert.equal(await ledgerSum(db, u.org_id), 300_000);
      await releaseHold(db, fresh.id);
      await releaseHold(db, job.id);
      assert.equal(await getBalance(db, u.org_id), 500_000);
    } finally {
      await gw.close();
    }
  });
});
