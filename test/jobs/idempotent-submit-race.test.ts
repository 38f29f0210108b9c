/**
 * Concurrent submits with one idempotency key while the first job already runs to its end (the runner's
 * success updates the job row, then the account row) never deadlock with a submit that holds the account
 * row (D3 idempotency, D30 cancel takes the same job-then-account path): each round answers one 202 and
 * eleven 200 with the same job, never a 500, on both databases; one hold per round; balance == ledger sum.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const ROUNDS = 20;

for (const backend of BACKENDS) {
  describe(`idempotent submits racing the job's end on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name, {}, { runner: { pollMs: 10 } });
    });
    after(async () => {
      await gw?.close();
    });

    test(`${ROUNDS} rounds of 12 concurrent submits with one key: one job, one hold, no error`, async () => {
      const db = gw.services.db.kysely;
      for (let round = 0; round < ROUNDS; round++) {
        const u = await gw.register();
        await gw.deposit(u.user_id, 10);
        const body = { model: "imgA-v4", prompt: `round ${round}`, idempotency_key: "same" };
        const results = await Promise.all(Array.from({ length: 12 }, () => gw.request("POST", "/v1/images/generations", { token: u.api_key, body })));
        const statuses = results.map((r) => r.status).sort();
        assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 200, 202], `round ${round}: ${JSON.stringify(results.map((r) => r.json))}`);
        assert.equal(new Set(results.map((r) => r.json.id)).size, 1);
        assert.equal((await db.selectFrom("holds").select("id").where("account_id", "=", u.org_id).execute()).length, 1);
        await gw.waitForJob(u.api_key, results[0].json.id);
        assert.equal(await getBalance(db, u.org_id), await ledgerSum(db, u.org_id));
      }
    });
  });
}
