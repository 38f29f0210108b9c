/**
 * Tier limits over HTTP (spec "Rate limiting", tier matrix; D12, D13, D15, D22): the per-minute window
 * of all of an account's keys with its headers, per-model windows, audio pools (429 at once, other pools
 * unaffected, slots given back), and `GET /v1/auth/limits`.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { DEMO_ALPHA_VOICE_ID, DEMO_BETA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("tier limits over HTTP", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });

  test("every authenticated answer carries the window headers; all keys share the window; 429 with Retry-After", async () => {
    const u = await gw.register();
    const k2 = (await gw.request("POST", "/v1/auth/keys", { token: u.api_key, body: {} })).json.api_key as string;
    // Tier 0: 30 requests per minute, counted for every authenticated request (the key creation was #1).
    const first = await gw.request("GET", "/v1/auth/me", { token: u.api_key });
    assert.equal(first.headers.get("x-ratelimit-limit"), "30");
    assert.equal(first.headers.get("x-ratelimit-remaining"), "28");
    const reset = Number(first.headers.get("x-ratelimit-reset"));
    assert.ok(reset > 0 && reset <= 60);
    for (let i = 0; i < 28; i++) {
      const r = await gw.request("GET", "/v1/auth/me", { token: i % 2 ? u.api_key : k2 });
      assert.equal(r.status, 200);
    }
    const over = await gw.request("GET", "/v1/auth/me", { token: k2 });
    assert.equal(over.status, 429);
    assert.equal(over.json.error.code, "rate_limited");
    assert.equal(over.json.error.type, "rate_limit_error");
    assert.ok(Number(over.headers.get("retry-after")) >= 1);
    assert.equal(over.headers.get("x-ratelimit-remaining"), "0");
    // Public routes are not counted.
    assert.equal((await gw.request("GET", "/v1/pricing")).status, 200);
    // Another account is not affected.
    const other = await gw.register();
    assert.equal((await gw.request("GET", "/v1/auth/me", { token: other.api_key })).status, 200);
  });

  test("a refused speech call (window) charges nothing", async () => {
    const u = await gw.register();
    await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 2 } });
    const speak = () => gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "hi", voice_id: DEMO_ALPHA_VOICE_ID } });
    assert.equal((await speak()).status, 200);
    assert.equal((await speak()).status, 200);
    const refused = await speak();
    assert.equal(refused.status, 429);
    const db = gw.services.db.kysely;
    assert.equal(await getBalance(db, u.org_id), 500_000 - 2 * 810);
    assert.equal(await ledgerSum(db, u.org_id), 500_000 - 2 * 810);
  });

  test("per-model window", async () => {
    const u = await gw.register();
    await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { per_model_rpm: 1 } });
    const speak = (model: string, voice: string) =>
      gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { model, input: "hi", voice_id: voice, response_format: "ulaw_8000" } });
    assert.equal((await speak("alpha-v3", DEMO_ALPHA_VOICE_ID)).status, 200);
    const r = await speak("alpha-v3", DEMO_ALPHA_VOICE_ID);
    assert.equal(r.status, 429);
    assert.match(r.json.error.message, /alpha-v3/);
    assert.equal((await speak("beta-speech-hd", DEMO_BETA_VOICE_ID)).status, 200);
  });

  test("audio pools: over the cap 429 at once, another pool unaffected, slots come back (also on errors)", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 10);
    await gw.request("PUT", `/v1/admin/users/${u.user_id}/tier`, { token: ADMIN_TOKEN, body: { tier: 0 } });
    const slow = (model: string, voice: string) =>
      gw.request("POST", "/v1/audio/speech", {
        token: u.api_key,
        headers: { "x-svc-simulate": "slow" },
        body: { model, input: "slow one", voice_id: voice, response_format: "ulaw_8000" },
      });
    // Tier 0: the alpha pool has one slot.
    const running = slow("alpha-v3", DEMO_ALPHA_VOICE_ID);
    await new Promise((r) => setTimeout(r, 200));
    const refused = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "x", voice_id: DEMO_ALPHA_VOICE_ID } });
    assert.equal(refused.status, 429);
    // A full pool frees itself: retry after a second (D48: only a pool of size 0 says never).
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.equal(refused.headers.get("x-should-retry"), null);
    const limits = await gw.request("GET", "/v1/auth/limits", { token: u.api_key });
    assert.equal(limits.json.usage.audio_in_use.alpha, 1);
    // The beta pool is separate.
    assert.equal((await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { model: "beta-speech-turbo", input: "x", voice_id: DEMO_BETA_VOICE_ID } })).status, 200);
    assert.equal((await running).status, 200);
    // Freed: the next alpha call goes through; a failing call gives its slot back too.
    const failed = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, headers: { "x-svc-simulate": "fail" }, body: { input: "x", voice_id: DEMO_ALPHA_VOICE_ID } });
    assert.equal(failed.status, 502);
    assert.equal((await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "x", voice_id: DEMO_ALPHA_VOICE_ID } })).status, 200);
    assert.equal((await gw.request("GET", "/v1/auth/limits", { token: u.api_key })).json.usage.audio_in_use.alpha, 0);
  });

  test("a pool of size 0 (an operator's override): 429 that no wait lifts, naming the operator; nothing charged (D48)", async () => {
    const u = await gw.register();
    const set = await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { audio_concurrent_per_provider: { alpha: 0 } } });
    assert.equal(set.status, 200, JSON.stringify(set.json));
    const before = (await gw.request("GET", "/v1/auth/me", { token: u.api_key })).json.balance_usd;
    const r = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "x", voice_id: DEMO_ALPHA_VOICE_ID } });
    assert.equal(r.status, 429);
    assert.equal(r.json.error.code, "rate_limited");
    assert.equal(r.headers.get("retry-after"), null);
    assert.equal(r.headers.get("x-should-retry"), "false");
    assert.match(r.json.error.message, /The alpha audio pool has no slots on Tier 0\. The gateway's operator set this limit/);
    assert.equal((await gw.request("GET", "/v1/auth/me", { token: u.api_key })).json.balance_usd, before);
  });

  test("a streamed answer holds its slot until its last chunk, then gives it back", async () => {
    const u = await gw.register();
    const res = await fetch(`${gw.url}/v1/audio/speech`, {
      method: "POST",
      headers: { authorization: `Bearer ${u.api_key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "beta-speech-hd", input: "streamed words", voice_id: DEMO_BETA_VOICE_ID, stream: true }),
    });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal((await gw.request("GET", "/v1/auth/limits", { token: u.api_key })).json.usage.audio_in_use.beta, 0);
    const again = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { model: "beta-speech-hd", input: "x", voice_id: DEMO_BETA_VOICE_ID } });
    assert.equal(again.status, 200);
  });

  test("a client that disconnects mid-call gives its slot back", async () => {
    const u = await gw.register();
    const controller = new AbortController();
    const pending = fetch(`${gw.url}/v1/audio/speech`, {
      method: "POST",
      signal: controller.signal,
      headers: { authorization: `Bearer ${u.api_key}`, "content-type": "application/json", "x-svc-simulate": "slow" },
      body: JSON.stringify({ input: "gone", voice_id: DEMO_ALPHA_VOICE_ID }),
    }).catch(() => null);
    await new Promise((r) => setTimeout(r, 200));
    controller.abort();
    await pending;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await gw.request("GET", "/v1/auth/limits", { token: u.api_key })).json.usage.audio_in_use.alpha, 0);
    assert.equal(await getBalance(gw.services.db.kysely, u.org_id), 500_000);
  });

  test("GET /v1/auth/limits shows the effective tier row (override wins) and usage", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 60);
    await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 777 } });
    const r = await gw.request("GET", "/v1/auth/limits", { token: u.api_key });
    assert.equal(r.status, 200);
    assert.equal(r.json.tier, 2);
    assert.equal(r.json.name, "Tier 2");
    assert.equal(r.json.rpm, 777);
    assert.equal(r.json.per_model_rpm, 80);
    assert.equal(r.json.image_concurrent, 8);
    assert.deepEqual(r.json.audio_concurrent_per_provider, { host_1: 4, host_2: 8, alpha: 4, beta: 4, host_3: 4 });
    assert.equal(r.json.usage.requests_this_minute, 1);
    assert.equal(r.json.usage.image_running, 0);
  });
});
