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
    // Through the typed client: query parameters and answer fields are the documented ones.
    const u = await gw.register();
    const api = gw.client(u.api_key);
    const all = (await api.GET("/v1/models")).data;
    assert.equal(all?.object, "list");
    const ids = (all?.data ?? []).map((m) => m.id);
    for (const id of ["txtA-large", "alpha-v3", "imgA-v4", "vidA-3-pro", "host1-transcribe-1"]) assert.ok(ids.includes(id), id);
    for (const m of all?.data ?? []) {
      assert.equal(m.object, "model");
      assert.equal(typeof m.owned_by, "string");
      assert.ok(Array.isArray(m.capabilities));
    }
    const t0 = ((await api.GET("/v1/models", { params: { query: { tier: "0" } } })).data?.data ?? []).map((m) => m.id);
    assert.ok(!t0.includes("vidA-3-pro"), "video needs tier 1");
    assert.ok(t0.includes("imgA-v4"));
    const tools = (await api.GET("/v1/models", { params: { query: { capability: "tools" } } })).data?.data ?? [];
    assert.ok(tools.length > 0);
    assert.ok(tools.every((m) => m.capabilities.includes("tools")));
    assert.equal((await api.GET("/v1/models", { params: { query: { tier: "9" } } })).response.status, 400);
    const rec = (await api.GET("/v1/models/recommend", { params: { query: { agent: "coding" } } })).data;
    assert.equal(rec?.alias, "code");
    assert.ok(ids.includes(rec?.model ?? ""));
    const unknownAgent = await api.GET("/v1/models/recommend", { params: { query: { agent: "nope" as "chat" } } });
    assert.equal(unknownAgent.response.status, 400);
    const caps = (await api.GET("/v1/capabilities")).data;
    assert.ok(caps?.capabilities.includes("chat"));
    assert.equal(caps?.aliases?.best, "txtA-large");
  });

  test("a model above the caller's tier: 403 model_not_available, nothing charged", async () => {
    const u = await gw.register();
    const api = gw.client(u.api_key);
    const body = { model: "txtB-pro", messages: [{ role: "user" as const, content: "hi" }], max_tokens: 10 };
    const r = await api.POST("/v1/chat/completions", { body });
    assert.equal(r.response.status, 403);
    assert.equal(r.error?.error.code, "model_not_available");
    assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000);
    await gw.deposit(u.user_id, 10);
    assert.equal((await api.POST("/v1/chat/completions", { body })).response.status, 200);
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
    const balance = await getBalance(gw.services.db.kysely, u.org_id);
    const ledger = await gw.request("GET", "/v1/billing/ledger?limit=10", { token: u.api_key });
    assert.equal(ledger.json.data.filter((e: { kind: string }) => e.kind === "charge").length, 1);
    assert.ok((balance ?? 0) < 50_500_000);
  });
});
