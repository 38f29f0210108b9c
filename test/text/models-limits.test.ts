/**
 * The model list, recommendations and capabilities (D23), and the token limits of the tier on chat
 * (TPM, max_single_request): over a limit 429 and nothing charged.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance } from "../../src/billing/ledger.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("models and token limits", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });

  test("GET /v1/models lists text and media models with filters; recommend and capabilities", async () => {
    const u = await gw.register();
    const all = await gw.request("GET", "/v1/models", { token: u.api_key });
    assert.equal(all.json.object, "list");
    const ids = all.json.data.map((m: { id: string }) => m.id);
    for (const id of ["txtA-large", "alpha-v3", "imgA-v4", "vidA-3-pro", "host1-transcribe-1"]) assert.ok(ids.includes(id), id);
    for (const m of all.json.data) {
      assert.equal(m.object, "model");
      assert.equal(typeof m.owned_by, "string");
      assert.ok(Array.isArray(m.capabilities));
    }
    const tier0 = await gw.request("GET", "/v1/models?tier=0", { token: u.api_key });
    const t0 = tier0.json.data.map((m: { id: string }) => m.id);
    assert.ok(!t0.includes("vidA-3-pro"), "video needs tier 1");
    assert.ok(t0.includes("imgA-v4"));
    const tools = await gw.request("GET", "/v1/models?capability=tools", { token: u.api_key });
    assert.ok(tools.json.data.length > 0);
    assert.ok(tools.json.data.every((m: { capabilities: string[] }) => m.capabilities.includes("tools")));
    assert.equal((await gw.request("GET", "/v1/models?tier=9", { token: u.api_key })).status, 400);
    const rec = await gw.request("GET", "/v1/models/recommend?agent=coding", { token: u.api_key });
    assert.equal(rec.json.alias, "code");
    assert.ok(ids.includes(rec.json.model));
    assert.equal((await gw.request("GET", "/v1/models/recommend?agent=nope", { token: u.api_key })).status, 400);
    const caps = await gw.request("GET", "/v1/capabilities", { token: u.api_key });
    assert.ok(caps.json.capabilities.includes("chat"));
    assert.equal(caps.json.aliases.best, "txtA-large");
  });

  test("a model above the caller's tier: 403 model_not_available, nothing charged", async () => {
    const u = await gw.register();
    const body = { model: "txtB-pro", messages: [{ role: "user", content: "hi" }], max_tokens: 10 };
    const r = await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body });
    assert.equal(r.status, 403);
    assert.equal(r.json.error.code, "model_not_available");
    assert.equal(await getBalance(gw.services.db.kysely, u.user_id), 500_000);
    await gw.deposit(u.user_id, 10);
    assert.equal((await gw.request("POST", "/v1/chat/completions", { token: u.api_key, body })).status, 200);
  });

  test("chat over max_single_request or the TPM window: 429, nothing charged", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 50);
    const chat = (max_tokens: number) =>
      gw.request("POST", "/v1/chat/completions", { token: u.api_key, body: { model: "cheap", messages: [{ role: "user", content: "hi" }], max_tokens } });
    // Tier 2 after the deposit: max_single_request 1,000,000 tokens.
    const big = await chat(2_000_000);
    assert.equal(big.status, 429);
    assert.match(big.json.error.message, /in one request/);
    await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { tpm: 5000 } });
    assert.equal((await chat(3000)).status, 200);
    const over = await chat(3000);
    assert.equal(over.status, 429);
    assert.match(over.json.error.message, /Token limit/);
    const balance = await getBalance(gw.services.db.kysely, u.user_id);
    const ledger = await gw.request("GET", "/v1/billing/ledger?limit=10", { token: u.api_key });
    assert.equal(ledger.json.data.filter((e: { kind: string }) => e.kind === "charge").length, 1);
    assert.ok((balance ?? 0) < 50_500_000);
  });
});
