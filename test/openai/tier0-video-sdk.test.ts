/**
 * Video on Tier 0 (D48), proven with the official `openai` SDK itself, unchanged, against a real gateway
 * on loopback: a live key's `videos.create` is refused with 429 `rate_limited`, `x-should-retry: false`
 * and no `Retry-After`, so the SDK (with its default retries on) makes one request and throws at once;
 * a test-mode key (D32) runs a simulated video on Tier 0, one at a time per organization (the second
 * while one is in flight is an ordinary 429 with `Retry-After`), and no money moves either way.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import OpenAI, { RateLimitError } from "openai";
import { checkedBalance, failure } from "./fixtures.ts";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("video on Tier 0 through the openai SDK (D48)", () => {
  let gw: TestGateway;
  let user: { user_id: string; org_id: string; api_key: string; session_token: string };
  let requests = 0;
  /**
   * The SDK's fetch, counting the requests it sends to the gateway (its retries included; the SDK also
   * fetches a `data:` URL once to probe its form support).
   */
  const countingFetch: typeof fetch = (input, init) => {
    if (String(input instanceof Request ? input.url : input).startsWith(gw.url)) requests++;
    return fetch(input, init);
  };

  const balance = () => checkedBalance(gw.services.db.kysely, user.org_id);
  const ledgerEntries = async () => (await gw.services.db.kysely.selectFrom("ledger_entries").select("id").where("account_id", "=", user.org_id).execute()).length;

  before(async () => {
    gw = await startGateway("sqlite");
    user = await gw.register();
  });
  after(async () => {
    await gw?.close();
  });

  test("a live key: 429 rate_limited at once, x-should-retry false, no Retry-After, the way up named; nothing held", async () => {
    const start = await balance();
    const entries = await ledgerEntries();
    // The SDK's defaults: two retries of a 429, with backoff (it would wait Retry-After otherwise).
    const client = new OpenAI({ apiKey: user.api_key, baseURL: `${gw.url}/openai/v1`, fetch: countingFetch });
    requests = 0;
    const err = await failure(client.videos.create({ prompt: "waves at dusk", seconds: "4", model: "vidD-3-fast" }));
    assert.ok(err instanceof RateLimitError, String(err));
    assert.equal(err.status, 429);
    assert.equal(requests, 1, "the SDK did not retry");
    assert.equal(err.headers?.get("x-should-retry"), "false");
    assert.equal(err.headers?.get("retry-after"), null);
    const body = err.error as { code?: string; message?: string };
    assert.equal(body.code, "rate_limited");
    assert.match(body.message ?? "", /Tier 0/);
    assert.match(body.message ?? "", /Tier 1/);
    assert.match(body.message ?? "", /top up/);
    assert.match(body.message ?? "", /test-mode key/);
    assert.equal(await balance(), start);
    assert.equal(await ledgerEntries(), entries);
  });

  test("the native route answers the same refusal (D1 body, same headers)", async () => {
    const r = await gw.request("POST", "/v1/videos/generations", { token: user.api_key, body: { model: "vidD-3-fast", prompt: "p", duration: 1 } });
    assert.equal(r.status, 429);
    assert.equal(r.json.error.code, "rate_limited");
    assert.equal(r.headers.get("x-should-retry"), "false");
    assert.equal(r.headers.get("retry-after"), null);
  });

  test("a test-mode key: a simulated video on Tier 0, one at a time per organization; no money moves", async () => {
    const key = await gw.request("POST", "/v1/auth/keys", { token: user.session_token, body: { name: "try", mode: "test" } });
    assert.equal(key.status, 201, JSON.stringify(key.json));
    const testKey = key.json.api_key as string;
    assert.match(testKey, /^gw_test_/);
    const start = await balance();
    const entries = await ledgerEntries();
    const client = new OpenAI({ apiKey: testKey, baseURL: `${gw.url}/openai/v1`, maxRetries: 0 });

    // One in flight (the simulator holds it), then a second: an ordinary, retryable 429.
    const hanging = await client.videos.create({ prompt: "a slow one", seconds: "4", model: "vidD-3-fast" }, { headers: { "x-svc-simulate": "hang" } });
    assert.ok(["queued", "in_progress"].includes(hanging.status), hanging.status);
    const busy = await failure(client.videos.create({ prompt: "a second one", seconds: "4", model: "vidD-3-fast" }));
    assert.equal(busy.status, 429);
    assert.ok(Number(busy.headers?.get("retry-after")) >= 1, "a full queue can be waited out");
    assert.notEqual(busy.headers?.get("x-should-retry"), "false");
    // The live key is still refused outright while the test key's video runs.
    const live = await gw.request("POST", "/v1/videos/generations", { token: user.api_key, body: { model: "vidD-3-fast", prompt: "p", duration: 1 } });
    assert.equal(live.headers.get("x-should-retry"), "false");

    // Delete (cancel) the running one; then a video runs to the end and downloads as a real MP4.
    await client.videos.delete(hanging.id);
    const video = await client.videos.create({ prompt: "waves rolling onto a beach", seconds: "4", model: "vidD-3-fast" });
    await gw.waitForJob(testKey, video.id, 30_000);
    const done = await client.videos.retrieve(video.id);
    assert.equal(done.status, "completed", JSON.stringify(done));
    const mp4 = Buffer.from(await (await client.videos.downloadContent(video.id)).arrayBuffer());
    assert.equal(mp4.subarray(4, 8).toString("latin1"), "ftyp", "an MP4");

    assert.equal(await balance(), start, "a test-mode key moves no money");
    assert.equal(await ledgerEntries(), entries);
  });
});

describe("a test-mode video on Tier 0 left queued by its submit is claimed by a runner (D48)", () => {
  test("no runner at the submit: the job waits queued; a runner started later runs it to the end", async () => {
    // Without a runner in the process the submit cannot start the job at once: it is left pending, and a
    // claim must take it although Tier 0's video pool has size 0 (its one test-mode place, D48).
    const gw = await startGateway("sqlite", {}, { runner: false });
    try {
      const user = await gw.register();
      const key = await gw.request("POST", "/v1/auth/keys", { token: user.session_token, body: { name: "try", mode: "test" } });
      const client = new OpenAI({ apiKey: key.json.api_key as string, baseURL: `${gw.url}/openai/v1`, maxRetries: 0 });
      const video = await client.videos.create({ prompt: "a tide coming in", seconds: "4", model: "vidD-3-fast" });
      assert.equal(video.status, "queued");
      gw.services.startRunner({ pollMs: 50, sweepMs: 500, heartbeatMs: 200 });
      await gw.waitForJob(key.json.api_key as string, video.id, 30_000);
      assert.equal((await client.videos.retrieve(video.id)).status, "completed");
    } finally {
      await gw.close();
    }
  });
});
