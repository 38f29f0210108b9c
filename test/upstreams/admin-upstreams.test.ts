/**
 * `GET /v1/admin/upstreams` (D25): one row per configured source (`UPSTREAMS`, then `TEXT_UPSTREAMS`)
 * with its circuit, calls in flight, statistics (error rate, p50 and p95 over the window) and its latest
 * failure (`last_error`, D35); never a key or a URL; operator token required.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { UpstreamError } from "../../src/upstreams/types.ts";

const FAL_KEY = "fal-key-SECRET-0001";
const LITERAL_KEY = "bfl-key-SECRET-0002";
const TEXT_KEY = "text-key-SECRET-0003";
let gw: TestGateway;

before(async () => {
  gw = await startGateway("sqlite", {
    UPSTREAMS: JSON.stringify([
      { name: "fal-main", protocol: "fal", base_url: "https://queue.fal.example", api_key: "env:FAL_KEY", families: ["imgA", "imgB"], max_concurrency: 4 },
      { name: "bfl-eu", protocol: "bfl", base_url: "https://api.bfl.example", api_key: LITERAL_KEY, families: ["imgB"], trusted_hosts: ["cdn.bfl.example"] },
    ]),
    FAL_KEY,
    TEXT_UPSTREAMS: JSON.stringify([{ name: "text-1", baseUrl: "http://127.0.0.1:9/v1", apiKey: TEXT_KEY, families: ["txtA"] }]),
  });
});
after(async () => {
  await gw?.close();
});

test("rows for every source, in configuration order, without keys or URLs", async () => {
  const res = await gw.request("GET", "/v1/admin/upstreams", { token: ADMIN_TOKEN });
  assert.equal(res.status, 200);
  assert.equal(res.json.object, "list");
  assert.deepEqual(res.json.data, [
    { name: "fal-main", protocol: "fal", families: ["imgA", "imgB"], circuit: "closed", in_flight: 0, successes: 0, failures: 0, error_rate: null, p50_ms: null, p95_ms: null, window_s: 300, last_error: null },
    { name: "bfl-eu", protocol: "bfl", families: ["imgB"], circuit: "closed", in_flight: 0, successes: 0, failures: 0, error_rate: null, p50_ms: null, p95_ms: null, window_s: 300, last_error: null },
    { name: "text-1", protocol: "openai", families: ["txtA"], circuit: "closed", in_flight: 0, successes: 0, failures: 0, error_rate: null, p50_ms: null, p95_ms: null, window_s: 300, last_error: null },
  ]);
  const text = Buffer.from(res.bytes).toString("utf8");
  for (const secret of [FAL_KEY, LITERAL_KEY, TEXT_KEY, "SECRET", "example", "127.0.0.1"]) assert.ok(!text.includes(secret), `answer shows ${secret}`);
});

test("the rows follow the registry: calls, failures and an open circuit", async () => {
  const reg = gw.services.upstreams;
  assert.deepEqual(
    reg.sourcesFor("imgB").map((s) => s.name),
    ["fal-main", "bfl-eu"],
  );
  assert.equal(await reg.run("fal-main", async () => "ok"), "ok");
  for (let i = 0; i < 5; i++) {
    await assert.rejects(reg.run("bfl-eu", () => Promise.reject(new UpstreamError("502 bad gateway", true))));
  }
  let release!: () => void;
  const held = reg.run("fal-main", () => new Promise<void>((r) => (release = r)));
  const res = await gw.request("GET", "/v1/admin/upstreams", { token: ADMIN_TOKEN });
  release();
  await held;
  const [fal, bfl] = res.json.data;
  assert.equal(fal.successes, 1);
  assert.equal(fal.in_flight, 1);
  assert.equal(fal.error_rate, 0);
  assert.equal(typeof fal.p50_ms, "number");
  assert.equal(typeof fal.p95_ms, "number");
  assert.ok(fal.p95_ms >= fal.p50_ms);
  assert.equal(bfl.failures, 5);
  assert.equal(bfl.error_rate, 1);
  assert.equal(bfl.p95_ms, null);
  assert.equal(bfl.circuit, "open");
  assert.equal(fal.last_error, null);
  assert.equal(bfl.last_error.code, "upstream_error");
  assert.equal(bfl.last_error.message, "502 bad gateway");
});

test("last_error: the latest failure of any kind (D35), its code, a redacted one-line message and its time", async () => {
  const reg = gw.services.upstreams;
  const before = Date.now();
  const err = await reg
    .run("fal-main", () =>
      Promise.reject(new UpstreamError(`fal answered 404 for https://queue.fal.example/fal-ai/veo3?key=${FAL_KEY} - no such endpoint (${FAL_KEY})`, false, { modelNotFound: true, upstreamModel: "fal-ai/veo3" })),
    )
    .catch((e: unknown) => e);
  assert.ok(err instanceof UpstreamError && err.modelNotFound);
  const res = await gw.request("GET", "/v1/admin/upstreams", { token: ADMIN_TOKEN });
  assert.equal(res.status, 200);
  const fal = res.json.data[0];
  assert.equal(fal.circuit, "closed", "a source without one model keeps its circuit closed");
  assert.equal(fal.last_error.code, "model_not_found");
  assert.equal(fal.last_error.message, "fal answered 404 for /fal-ai/veo3 - no such endpoint ([redacted])");
  const at = Date.parse(fal.last_error.at);
  assert.ok(at >= before - 1000 && at <= Date.now() + 1000, fal.last_error.at);
  const text = Buffer.from(res.bytes).toString("utf8");
  for (const secret of [FAL_KEY, LITERAL_KEY, TEXT_KEY, "SECRET", "?key=", "example"]) assert.ok(!text.includes(secret), `answer shows ${secret}`);
});

test("operator token required: 401 without or with a wrong token", async () => {
  for (const token of [undefined, "wrong-token", FAL_KEY]) {
    const res = await gw.request("GET", "/v1/admin/upstreams", token === undefined ? {} : { token });
    assert.equal(res.status, 401);
    assert.equal(res.json.error.type, "authentication_error");
    assert.ok(!Buffer.from(res.bytes).toString("utf8").includes("fal-main"));
  }
});

test("the route is in the OpenAPI document under the operator tag and the operator token's scheme", async () => {
  const doc = (await (await fetch(`${gw.url}/openapi.json`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()) as {
    paths: Record<string, { get: { tags: string[]; security: unknown } }>;
  };
  const op = doc.paths["/v1/admin/upstreams"]!.get;
  assert.deepEqual(op.tags, ["operator"]);
  assert.deepEqual(op.security, [{ adminToken: [] }]);
});

test("no UPSTREAMS: an empty list (every family is served by the simulator)", async (t) => {
  const plain = await startGateway("sqlite");
  t.after(() => plain.close());
  const res = await plain.request("GET", "/v1/admin/upstreams", { token: ADMIN_TOKEN });
  assert.equal(res.status, 200);
  assert.deepEqual(res.json, { object: "list", data: [] });
});
