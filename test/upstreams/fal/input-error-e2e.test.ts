/**
 * D35 last bullet and D27, end to end (issue 27 point 4): imgB on fal first, BFL second. A job that fal
 * accepts and then ends for its input (a pass-through `safety_tolerance: 5`, a number where fal's FLUX.2
 * pro takes the strings "1".."5"; BFL would take it) ends `failed` with `provider_error`: nothing charged,
 * nothing sent to BFL. A job fal fails in its own infrastructure still fails over to BFL. The gateway
 * runs on the strict loopback fakes with its real adapters, configured through `UPSTREAMS`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../../src/billing/ledger.ts";
import { type BflFake, startBflFake } from "../../../fakes/bfl.ts";
import { type FalFake, startFalFake } from "../../../fakes/fal.ts";
import { startGateway, type TestGateway } from "../../helpers/gateway.ts";

const FAL_KEY = "fal-input-e2e-key-4b8d1f0e2a6c";
const BFL_KEY = "bfl-input-e2e-key-9e3a7c5d1b08";

describe("a fal job that ends for its input is not moved to BFL (D27, D35)", () => {
  let fal: FalFake;
  let bfl: BflFake;
  let gw: TestGateway;

  before(async () => {
    fal = await startFalFake({ apiKey: FAL_KEY, queueMs: 20, runMs: 40 });
    bfl = await startBflFake({ apiKey: BFL_KEY, pendingMs: 40 });
    const upstreams = [
      { name: "fal", protocol: "fal", base_url: fal.url, api_key: "env:E2E_FAL_KEY", families: ["imgB"] },
      { name: "bfl", protocol: "bfl", base_url: bfl.url, api_key: "env:E2E_BFL_KEY", families: ["imgB"] },
    ];
    gw = await startGateway(
      "sqlite",
      { E2E_FAL_KEY: FAL_KEY, E2E_BFL_KEY: BFL_KEY, UPSTREAMS: JSON.stringify(upstreams) },
      { runner: { pollMs: 20, upstreamPoll: { pollMs: 20, backoffMaxMs: 100 } } },
    );
  });

  after(async () => {
    await gw?.close();
    await Promise.all([fal?.close(), bfl?.close()]);
  });

  test("fal refuses the input: failed, provider_error, nothing charged, BFL never asked", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 5);
    const before = await getBalance(gw.services.db.kysely, u.org_id);
    const r = await gw.request("POST", "/v1/images/generations", {
      token: u.api_key,
      body: { model: "imgB-2-pro", prompt: "a harbour", parameters: { safety_tolerance: 5 } },
    });
    assert.equal(r.status, 202, JSON.stringify(r.json));
    const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
    assert.equal(done.json.status, "failed", JSON.stringify(done.json));
    assert.equal(done.json.error.code, "provider_error");
    assert.match(done.json.error.message, /safety_tolerance/);
    assert.ok(!JSON.stringify(done.json).includes(FAL_KEY));
    assert.equal(fal.submits().length, 1);
    assert.equal(bfl.submits().length, 0, "an input error is not moved to the next source");
    const db = gw.services.db.kysely;
    assert.equal(await getBalance(db, u.org_id), before, "nothing charged");
    assert.equal(await getBalance(db, u.org_id), await ledgerSum(db, u.org_id));
    const kinds = (await db.selectFrom("ledger_entries").select("kind").where("job_id", "=", r.json.id).orderBy("seq").execute()).map((e) => e.kind);
    assert.ok(!kinds.includes("charge"), kinds.join(","));
  });

  test("fal's own failure (runner_disconnected) still fails over to BFL", async () => {
    fal.reset();
    bfl.reset();
    const u = await gw.register();
    await gw.deposit(u.user_id, 5);
    const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgB-2-pro", prompt: "a harbour [fake:failed-completed]" } });
    assert.equal(r.status, 202, JSON.stringify(r.json));
    const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    assert.equal(done.json.fallback_layer, 1);
    assert.equal(fal.submits().length, 1);
    assert.equal(bfl.submits().length, 1);
  });
});
