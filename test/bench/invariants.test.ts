/**
 * The benchmark's end-of-run check (bench/invariants.ts) on both databases: it passes on a gateway's
 * database after real paid calls, and it reports each broken invariant: a balance off its ledger, a hold
 * left open, usage records off the ledger's charges.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { sql } from "kysely";
import { checkInvariants } from "../../bench/invariants.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway } from "../helpers/gateway.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";

for (const backend of BACKENDS) {
  describe(`bench invariants on ${backend.name}`, { skip: backend.skip }, () => {
    test("hold after paid calls; each kind of breakage is reported", async () => {
      const gw = await startGateway(backend.name);
      try {
        const u = await gw.register();
        for (const input of ["one", "two"]) {
          const r = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input, voice_id: DEMO_ALPHA_VOICE_ID } });
          assert.equal(r.status, 200);
        }
        const failed = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "x", voice_id: DEMO_ALPHA_VOICE_ID }, headers: { "x-svc-simulate": "fail" } });
        assert.equal(failed.status, 502);
        const url = gw.services.config.databaseUrl;
        const ok = await checkInvariants(url);
        assert.deepEqual(ok.problems, []);
        assert.ok(ok.accounts >= 1);

        const db = gw.services.db.kysely;
        await db.updateTable("accounts").set({ balance_micros: sql`balance_micros + 1` }).where("id", "=", u.org_id).execute();
        await db.updateTable("usage_records").set({ cost_micros: sql`cost_micros + 7` }).where("account_id", "=", u.org_id).where("status", "=", "succeeded").execute();
        await db
          .insertInto("holds")
          .values({ id: "hold_left_open", account_id: u.org_id, amount_micros: 5, status: "open", captured_micros: null, job_id: null, reference: null, created_at: Date.now(), settled_at: null })
          .execute();
        const broken = await checkInvariants(url);
        assert.equal(broken.problems.length, 3, broken.problems.join("\n"));
        assert.match(broken.problems.join("\n"), /balance \d+ != ledger sum/);
        assert.match(broken.problems.join("\n"), /1 holds left open/);
        assert.match(broken.problems.join("\n"), /usage records \d+ != ledger charges/);
      } finally {
        await gw.close();
      }
    });
  });
}
