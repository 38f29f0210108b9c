/**
 * Orphaned synchronous holds (issue "Hardening" 8): the default age after which the sweep releases them
 * is the longest synchronous call plus a margin (minutes, not a quarter of an hour), and the sweep
 * releases a hold older than the setting, never a younger one.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { holdOrRefuse } from "../../src/billing/paid-call.ts";
import { BUILT_IN_SYNC_CALL_S, loadConfig, longestSyncCallS, SYNC_HOLD_MARGIN_S } from "../../src/config.ts";
import { sweepJobs } from "../../src/jobs/sweep.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway } from "../helpers/gateway.ts";

test("the default is the longest synchronous call plus 60 s: 180 s, or the text upstreams' timeouts added up", () => {
  assert.equal(BUILT_IN_SYNC_CALL_S + SYNC_HOLD_MARGIN_S, 180);
  assert.equal(loadConfig({}).sweepSyncHoldsAfterS, 180);
  const two = JSON.stringify([
    { name: "a", baseUrl: "http://127.0.0.1:1", apiKey: "k", timeoutMs: 90_000 },
    { name: "b", baseUrl: "http://127.0.0.1:2", apiKey: "k", timeoutMs: 100_000 },
  ]);
  assert.equal(longestSyncCallS([{ timeoutMs: 90_000 }, { timeoutMs: 100_000 }]), 190);
  assert.equal(loadConfig({ TEXT_UPSTREAMS: two }).sweepSyncHoldsAfterS, 250);
  assert.equal(loadConfig({ SWEEP_SYNC_HOLDS_AFTER_S: "600" }).sweepSyncHoldsAfterS, 600);
});

for (const { name: backend, skip } of BACKENDS) {
  describe(`the sweep of orphaned synchronous holds (${backend})`, { skip }, () => {
    test("releases a hold older than the setting and keeps a younger one", async () => {
      const gw = await startGateway(backend, {}, { runner: false });
      try {
        const db = gw.services.db.kysely;
        const u = await gw.register();
        const old = await holdOrRefuse(db, { accountId: u.org_id, amountMicros: 10_000, reference: "speech" }, () => new Error("funds") as never);
        const young = await holdOrRefuse(db, { accountId: u.org_id, amountMicros: 20_000, reference: "speech" }, () => new Error("funds") as never);
        await db.updateTable("holds").set({ created_at: Date.now() - 181_000 }).where("id", "=", old.id).execute();
        await db.updateTable("holds").set({ created_at: Date.now() - 170_000 }).where("id", "=", young.id).execute();
        const r = await sweepJobs(db, { sweepImageAfterS: 420, sweepVideoAfterS: 720, sweepSyncHoldsAfterS: gw.services.config.sweepSyncHoldsAfterS }, gw.services.jobChanges);
        assert.equal(r.syncHolds, 1);
        const statuses = await db.selectFrom("holds").select(["id", "status"]).where("id", "in", [old.id, young.id]).execute();
        const byId = Object.fromEntries(statuses.map((h) => [h.id, h.status]));
        assert.equal(byId[old.id], "released");
        assert.equal(byId[young.id], "open");
        assert.equal(await getBalance(db, u.org_id), 500_000 - 20_000);
        assert.equal(await ledgerSum(db, u.org_id), 500_000 - 20_000);
      } finally {
        await gw.close();
      }
    });
  });
}
