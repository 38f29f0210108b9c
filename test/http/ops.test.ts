/**
 * Operations endpoints (healthz, readyz, metrics) and the limit store's failure modes: with Redis
 * unreachable the gateway keeps serving (`open`) or answers 503 (`closed`), and readiness says why.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../../src/config.ts";
import { startMetricsListener } from "../../src/http/routes/ops.ts";
import { DEMO_ALPHA_VOICE_ID } from "../../src/upstreams/simulator/voices.ts";
import { REDIS_SKIP, REDIS_TEST_URL } from "../helpers/backends.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

const METRICS_TOKEN = "metrics-token-0123456789";

describe("operations endpoints", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite", { METRICS_TOKEN });
  });
  after(async () => {
    await gw?.close();
  });

  test("healthz and readyz", async () => {
    assert.deepEqual((await gw.request("GET", "/healthz")).json, { status: "ok" });
    const ready = await gw.request("GET", "/readyz");
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.json, { status: "ready", checks: { database: "ok", storage: "ok" } });
  });

  test("metrics in Prometheus format: requests, latency, upstreams, ledger, holds, jobs, pools", async () => {
    const u = await gw.register();
    await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "metrics", voice_id: DEMO_ALPHA_VOICE_ID } });
    await gw.request("POST", "/v1/audio/speech", { token: u.api_key, headers: { "x-svc-simulate": "fail" }, body: { input: "x", voice_id: DEMO_ALPHA_VOICE_ID } });
    const r = await gw.request("GET", "/metrics", { token: METRICS_TOKEN });
    assert.equal(r.status, 200);
    assert.match(r.headers.get("content-type") ?? "", /text\/plain/);
    const text = Buffer.from(r.bytes).toString();
    assert.match(text, /gateway_http_requests_total\{route="\/v1\/audio\/speech",method="POST",status="200"\} \d+/);
    assert.match(text, /gateway_http_requests_total\{route="\/v1\/audio\/speech",method="POST",status="502"\} \d+/);
    assert.match(text, /gateway_http_request_duration_seconds_bucket\{le="0.005",route="\/v1\/audio\/speech",method="POST"\}/);
    assert.match(text, /gateway_upstream_duration_seconds_count\{model="alpha-multilingual-v2",outcome="ok"\} \d+/);
    assert.match(text, /gateway_upstream_errors_total\{model="alpha-multilingual-v2"\} \d+/);
    assert.match(text, /gateway_ledger_entries_total\{kind="charge"\} \d+/);
    assert.match(text, /gateway_holds_open 0/);
    assert.match(text, /gateway_audio_pool_slots_in_use/);
    assert.match(text, /process_cpu_seconds_total/);
    // No secret of the caller, the operator or the metrics endpoint appears in the text.
    for (const secret of [u.api_key, u.session_token, METRICS_TOKEN]) assert.ok(!text.includes(secret));
  });

  test("metrics need the metrics token: none or a wrong one is 401 in the D1 body", async () => {
    for (const token of [undefined, "wrong-token-0123456789", `${METRICS_TOKEN}x`]) {
      const r = await gw.request("GET", "/metrics", token === undefined ? {} : { token });
      assert.equal(r.status, 401, String(token));
      assert.equal(r.json.error.code, "auth_error");
      assert.ok(!JSON.stringify(r.json).includes(METRICS_TOKEN));
    }
  });
});

describe("metrics exposure settings", () => {
  test("without METRICS_TOKEN or METRICS_PORT the API port does not serve metrics (404)", async () => {
    const gw = await startGateway("sqlite");
    try {
      const r = await gw.request("GET", "/metrics");
      assert.equal(r.status, 404);
      assert.equal(r.json.error.code, "not_found");
    } finally {
      await gw.close();
    }
  });

  test("METRICS_PORT: metrics on their own listener without a token, and not on the API port", async () => {
    const gw = await startGateway("sqlite", { METRICS_PORT: "0", METRICS_TOKEN });
    const listener = await startMetricsListener(gw.services, 0, "127.0.0.1");
    try {
      const api = await gw.request("GET", "/metrics", { token: METRICS_TOKEN });
      assert.equal(api.status, 404);
      const res = await fetch(`http://127.0.0.1:${listener.port}/metrics`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /gateway_holds_open/);
      assert.equal((await fetch(`http://127.0.0.1:${listener.port}/other`)).status, 404);
    } finally {
      await listener.close();
      await gw.close();
    }
  });

  test("a METRICS_TOKEN shorter than 16 characters stops the configuration", () => {
    assert.throws(() => loadConfig({ METRICS_TOKEN: "short" }), /METRICS_TOKEN must be at least 16 characters/);
  });
});

describe("limit store unreachable", () => {
  test("open: requests are served without limits; readiness reports Redis and stays ready", async () => {
    const gw = await startGateway("sqlite", { REDIS_URL: "redis://127.0.0.1:1", LIMITS_ON_STORE_ERROR: "open" });
    try {
      const u = await gw.register();
      const r = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "still here", voice_id: DEMO_ALPHA_VOICE_ID } });
      assert.equal(r.status, 200);
      const ready = await gw.request("GET", "/readyz");
      assert.equal(ready.status, 200);
      assert.notEqual(ready.json.checks.redis, "ok");
      assert.equal(ready.json.checks.database, "ok");
    } finally {
      await gw.close();
    }
  });

  test("closed: authenticated requests answer 503 and nothing is charged", async () => {
    const gw = await startGateway("sqlite", { REDIS_URL: "redis://127.0.0.1:1", LIMITS_ON_STORE_ERROR: "closed" });
    try {
      const u = await gw.register();
      const r = await gw.request("POST", "/v1/audio/speech", { token: u.api_key, body: { input: "x", voice_id: DEMO_ALPHA_VOICE_ID } });
      assert.equal(r.status, 503);
      assert.equal(r.json.error.code, "limits_unavailable");
      assert.equal(r.headers.get("retry-after"), "1");
      assert.equal((await gw.request("GET", "/v1/pricing")).status, 200);
      const ready = await gw.request("GET", "/readyz");
      assert.equal(ready.status, 503);
      assert.notEqual(ready.json.checks.redis, "ok");
    } finally {
      await gw.close();
    }
  });
});

describe("two gateways sharing one Redis", { skip: REDIS_SKIP }, () => {
  test("the per-minute window is global: exactly the limit passes through both", async () => {
    const prefix = `gwtest:${randomBytes(4).toString("hex")}`;
    const a = await startGateway("sqlite", { REDIS_URL: REDIS_TEST_URL }, { overrides: { redisPrefix: prefix } });
    // The second gateway uses a different database: the account is looked up there too, so register
    // it in both with the same API key is impossible; instead share the database file.
    const b = await startGateway("sqlite", { REDIS_URL: REDIS_TEST_URL, DATABASE_URL: a.services.config.databaseUrl }, { overrides: { redisPrefix: prefix } });
    try {
      const u = await a.register();
      // Tier 0: 30 per minute; registration is not authenticated, so all 30 are left.
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).request("GET", "/v1/auth/me", { token: u.api_key })),
      );
      assert.equal(results.filter((r) => r.status === 200).length, 30);
      assert.equal(results.filter((r) => r.status === 429).length, 10);
      assert.equal((await a.request("GET", "/readyz")).json.checks.redis, "ok");
    } finally {
      await b.close();
      await a.close();
    }
  });
});
