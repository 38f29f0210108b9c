/** Public catalog endpoints over HTTP: no key, cache headers, shapes (spec "GET /v1/pricing", tiers). */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { startGateway, type TestGateway } from "../helpers/gateway.ts";

describe("public catalog", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite");
  });
  after(async () => {
    await gw?.close();
  });

  test("GET /v1/pricing: public, cached 60 s, rows sorted by id with mode and detail", async () => {
    // Through the typed client: the row fields read here are the documented ones (tsc checks them).
    const { data: body, response } = await gw.client().GET("/v1/pricing");
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("cache-control"), "public, max-age=60");
    assert.ok(body);
    assert.equal(body.object, "pricing.catalog");
    assert.equal(body.text_count, body.text.length);
    assert.equal(body.media_count, body.media.length);
    const ids = body.media.map((m) => m.id);
    assert.deepEqual(
      ids,
      [...ids].sort((a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    for (const row of body.media) {
      assert.ok(["image", "video", "audio"].includes(row.modality));
      assert.equal(typeof row.usd_per_call, "number");
      assert.equal(typeof row.detail, "object");
    }
    const byId = new Map(body.media.map((m) => [m.id, m]));
    const v3 = byId.get("alpha-v3");
    assert.equal(v3?.pricing_mode, "per-char");
    // `detail` is open by documentation (its shape follows `pricing_mode`).
    const detail = v3?.detail as { provider_cost_per_kchar: number; markup: number };
    assert.equal(detail.provider_cost_per_kchar * detail.markup, 0.405);
    assert.equal(byId.get("alpha-flash-v2-5")?.usd_per_call, 0.2);
    for (const id of [
      "imgB-2-pro",
      "imgC-q1",
      "vidA-3-pro",
      "beta-music-pro",
      "beta-voice-design",
      "beta-voice-clone",
      "alpha-sfx",
    ]) {
      assert.ok(byId.has(id), id);
    }
  });

  test("GET /v1/limits/tiers: public, cached 300 s, 5 tiers with every field", async () => {
    const r = await gw.request("GET", "/v1/limits/tiers");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("cache-control"), "public, max-age=300");
    assert.equal(r.json.object, "tier.matrix");
    assert.equal(r.json.tiers.length, 5);
    const fields = [
      "tier",
      "name",
      "min_deposit",
      "rpm",
      "per_model_rpm",
      "tpm",
      "max_single_request",
      "image_concurrent",
      "image_queue_depth_cap",
      "video_concurrent",
      "video_queue_depth_cap",
      "audio_concurrent",
      "audio_concurrent_per_provider",
    ];
    r.json.tiers.forEach((t: Record<string, unknown>, i: number) => {
      assert.equal(t.tier, i);
      for (const f of fields) assert.ok(f in t, `${f} in tier ${i}`);
    });
    assert.equal(r.json.tiers[4].combined_media_concurrent, 38);
    assert.equal(r.json.tiers[4].combined_queue_depth_cap, 114);
    assert.deepEqual(r.json.tiers[0].audio_concurrent_per_provider, {
      host_1: 1,
      host_2: 2,
      alpha: 1,
      beta: 1,
      host_3: 1,
    });
  });

  test("GET /v1/credits/pricing (legacy) answers", async () => {
    const r = await gw.request("GET", "/v1/credits/pricing");
    assert.equal(r.status, 200);
    assert.ok(Array.isArray(r.json.data));
  });
});
