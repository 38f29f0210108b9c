/**
 * Asynchronous image and video jobs over real HTTP (spec "POST /v1/images/generations",
 * "POST /v1/videos/generations", "GET /v1/jobs/{id}"; D2, D3, D12, D14, D19, D24): every error row, the
 * hold and charge of each pricing mode, the job lifecycle, failures giving the hold back, ownership,
 * tier rules and queue caps.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { parseBuffer } from "music-metadata";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { BACKENDS } from "../helpers/backends.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

function assertError(res: { status: number; json: { error?: Record<string, unknown> } }, status: number, code: string) {
  assert.equal(res.status, status, JSON.stringify(res.json));
  assert.equal(res.json?.error?.code, code, JSON.stringify(res.json));
}

function pngSize(bytes: Uint8Array) {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: dv.getUint32(16), height: dv.getUint32(20) };
}

describe("media jobs", () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startGateway("sqlite", {}, { overrides: { resolveHost: async (h) => (h === "example.com" ? ["93.184.215.14"] : []) } });
  });
  after(async () => {
    await gw?.close();
  });

  async function richUser(usd = 100, tier?: number) {
    const u = await gw.register();
    await gw.deposit(u.user_id, usd);
    if (tier !== undefined) await gw.request("PUT", `/v1/admin/users/${u.user_id}/tier`, { token: ADMIN_TOKEN, body: { tier } });
    return u;
  }
  async function balance(userId: string) {
    const db = gw.services.db.kysely;
    const b = await getBalance(db, userId);
    assert.equal(b, await ledgerSum(db, userId));
    return b ?? -1;
  }
  const submitImage = (token: string, body: unknown, headers?: Record<string, string>) =>
    gw.request("POST", "/v1/images/generations", { token, body, headers });
  const submitVideo = (token: string, body: unknown, headers?: Record<string, string>) =>
    gw.request("POST", "/v1/videos/generations", { token, body, headers });

  test("image job: 202 pending, then succeeded with a rehosted PNG; hold per image x n, charge on success", async () => {
    const u = await richUser();
    // Submit, poll and read the ledger through the typed client (fields checked by tsc).
    const api = gw.client(u.api_key);
    const r = await api.POST("/v1/images/generations", { body: { model: "imgA-v4", prompt: "a red fox in snow", n: 2, size: "16:9" } });
    assert.equal(r.response.status, 202, JSON.stringify(r.error));
    const job = r.data;
    assert.ok(job);
    assert.match(job.id, /^job_/);
    assert.equal(job.object, "media.job");
    assert.equal(job.kind, "image");
    assert.equal(job.model, "imgA-v4");
    assert.ok(["pending", "processing"].includes(job.status));
    assert.equal(job.hold_usd, 0.108);
    assert.equal(job.cost_usd, null);
    assert.equal(job.output, null);
    assert.equal(job.error, null);
    assert.equal(job.idempotency_key, null);
    assert.ok(Date.parse(job.created_at) > 0 && Date.parse(job.updated_at) > 0);

    const done = await gw.waitForJob(u.api_key, job.id);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    assert.equal(done.json.cost_usd, 0.108);
    assert.equal(done.json.output.content_type, "image/png");
    assert.equal(done.json.output.urls.length, 2);
    assert.equal(done.json.output.url, done.json.output.urls[0]);
    for (const url of done.json.output.urls) {
      assert.ok(url.startsWith(gw.url), url);
      const img = await gw.request("GET", new URL(url).pathname);
      assert.equal(img.status, 200);
      assert.equal(img.headers.get("content-type"), "image/png");
      assert.deepEqual(pngSize(img.bytes), { width: 1344, height: 768 });
    }
    assert.equal(await balance(u.org_id), 100_500_000 - 108_000);
    const ledger = await api.GET("/v1/billing/ledger", { params: { query: { limit: "3" } } });
    assert.deepEqual(
      ledger.data?.data.map((e) => [e.kind, e.job_id, e.amount_usd]),
      [
        ["charge", job.id, -0.108],
        ["hold_release", job.id, 0.108],
        ["hold", job.id, -0.108],
      ],
    );
  });

  test("pricing modes: per-quality tiers, per-megapixel from the output size, per-second and per-clip video", async () => {
    const u = await richUser(100, 4);
    const cases: [string, Record<string, unknown>, number][] = [
      ["/v1/images/generations", { model: "imgC-q1", prompt: "p", n: 2, quality: "high" }, 0.45],
      ["/v1/images/generations", { model: "imgC-q1", prompt: "p" }, 0.057],
      ["/v1/images/generations", { model: "imgC-q1", prompt: "p", quality: "low", n: 4 }, 0.06],
      ["/v1/images/generations", { model: "imgB-2-pro", prompt: "p", size: "1024x1024", n: 3 }, 0.041],
      ["/v1/images/generations", { model: "imgB-2-pro", prompt: "p", size: "1448x1448" }, 0.061],
      ["/v1/images/generations", { model: "imgB-2-pro", prompt: "p", size: "2048x2048" }, 0.101],
      ["/v1/images/generations", { model: "imgA-v4-pro", prompt: "p", n: 4 }, 1.352],
      ["/v1/videos/generations", { model: "vidA-3-pro", prompt: "p" }, 0.756],
      ["/v1/videos/generations", { model: "vidB-2-fast", prompt: "p", duration: 3 }, 0.979695],
      ["/v1/videos/generations", { model: "vidC-02-768p", prompt: "p", duration: 10 }, 0.42],
      ["/v1/videos/generations", { model: "vidC-02-1080p", prompt: "p" }, 0.78],
      ["/v1/genmedia/jobs", { model: "vidD-3-fast", prompt: "p", duration: 2 }, 0.27],
    ];
    let expected = 100_500_000;
    for (const [path, body, usd] of cases) {
      const r = await gw.request("POST", path, { token: u.api_key, body });
      assert.equal(r.status, 202, `${JSON.stringify(body)} -> ${JSON.stringify(r.json)}`);
      assert.equal(r.json.hold_usd, usd, JSON.stringify(body));
      const done = await gw.waitForJob(u.api_key, r.json.id);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      assert.equal(done.json.cost_usd, usd, JSON.stringify(body));
      expected -= Math.round(usd * 1e6);
    }
    assert.equal(await balance(u.org_id), expected);
  });

  test("video job: a playable MP4 of the requested duration", async () => {
    const u = await richUser(100, 1);
    const r = await submitVideo(u.api_key, { model: "vidD-3-fast", prompt: "waves at dusk", duration: 3, parameters: { seed: 7 } });
    assert.equal(r.status, 202);
    const done = await gw.waitForJob(u.api_key, r.json.id);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    assert.equal(done.json.kind, "video");
    assert.equal(done.json.output.content_type, "video/mp4");
    const video = await gw.request("GET", new URL(done.json.output.url).pathname);
    const meta = await parseBuffer(video.bytes, { mimeType: "video/mp4" });
    const duration = meta.format.duration ?? meta.format.trackInfo[0]?.duration ?? 0;
    assert.ok(Math.abs(duration - 3) < 0.2, String(duration));
    const part = await gw.request("GET", new URL(done.json.output.url).pathname, { headers: { range: "bytes=0-99" } });
    assert.equal(part.status, 206);
  });

  test("image error rows", async () => {
    const u = await richUser();
    const img = (body: unknown) => submitImage(u.api_key, body);
    assertError(await img({ prompt: "p" }), 400, "invalid_model");
    assertError(await img({ model: "vidA-3-pro", prompt: "p" }), 400, "invalid_model");
    assertError(await img({ model: "nope", prompt: "p" }), 400, "invalid_model");
    assertError(await img({ model: "imgA-v4" }), 400, "invalid_prompt");
    assertError(await img({ model: "imgA-v4", prompt: "p".repeat(4001) }), 400, "invalid_prompt");
    assertError(await img({ model: "imgB-edit-pro", prompt: "p" }), 400, "image_url_required");
    assertError(await img({ model: "imgB-2-pro", prompt: "p", image_urls: Array.from({ length: 11 }, (_, i) => `https://example.com/${i}.png`) }), 400, "too_many_references");
    assertError(await img({ model: "imgB-edit-pro", prompt: "p", image_url: "http://example.com/a.png" }), 400, "invalid_image_url");
    assertError(await img({ model: "imgB-2-pro", prompt: "p", image_urls: ["ftp://x/y"] }), 400, "invalid_image_url");
    for (const url of ["https://127.0.0.1/a.png", "https://localhost/a.png", "https://169.254.169.254/latest", "https://[::1]/a.png", "https://10.1.2.3/a.png"]) {
      assertError(await img({ model: "imgB-edit-pro", prompt: "p", image_url: url }), 400, "invalid_image_url");
    }
    for (const n of [0, 5, 1.5, "2"]) assertError(await img({ model: "imgA-v4", prompt: "p", n }), 400, "invalid_request");
    assertError(await img({ model: "imgA-v4", prompt: "p", idempotency_key: "k".repeat(129) }), 400, "invalid_request");
    assertError(await img({ model: "imgA-v4", prompt: "p", parameters: [1] }), 400, "invalid_request");
    assertError(await img({ model: "imgC-q1", prompt: "p", quality: "ultra" }), 400, "invalid_request");
    assertError(await img("{nope"), 400, "invalid_request");
    const big = JSON.stringify({ model: "imgA-v4", prompt: "p", parameters: { blob: "x".repeat(26 * 1024 * 1024) } });
    assertError(await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: big }), 413, "invalid_request");
    assertError(await gw.request("POST", "/v1/images/generations", { body: { model: "imgA-v4", prompt: "p" } }), 401, "auth_error");
    assert.equal(await balance(u.org_id), 100_500_000);
    assert.equal(
      (await img({ model: "imgA-v4", prompt: "p".repeat(4000), size: "garbage", idempotency_key: "k".repeat(128) })).status,
      202,
    );
  });

  test("video error rows", async () => {
    const u = await richUser(100, 1);
    const vid = (body: unknown) => submitVideo(u.api_key, body);
    assertError(await vid({ prompt: "p" }), 400, "invalid_model");
    assertError(await vid({ model: "imgA-v4", prompt: "p" }), 400, "invalid_model");
    assertError(await vid({ model: "vidA-3-pro" }), 400, "invalid_prompt");
    assertError(await vid({ model: "vidA-3-pro", prompt: "p".repeat(4001) }), 400, "invalid_prompt");
    for (const duration of [0, 11, 2.5, "5"]) assertError(await vid({ model: "vidA-3-pro", prompt: "p", duration }), 400, "invalid_duration");
    assertError(await vid({ model: "vidC-02-768p", prompt: "p", duration: 5 }), 400, "invalid_duration");
    assertError(await vid({ model: "vidC-02-512p", prompt: "p" }), 400, "image_url_required");
    assertError(await vid({ model: "vidA-3-pro", prompt: "p", image_url: "http://example.com/f.png" }), 400, "invalid_image_url");
    assertError(await gw.request("POST", "/v1/genmedia/jobs", { token: u.api_key, body: { model: "vidA-3-pro", prompt: "p" } }), 400, "invalid_model");
    assert.equal(await balance(u.org_id), 100_500_000);
    const i2v = await vid({ model: "vidC-02-512p", prompt: "p", image_url: "https://example.com/first-frame.png" });
    assert.equal(i2v.status, 202);
    assert.equal(i2v.json.hold_usd, 0.14);
  });

  test("balance too low: 402 insufficient_balance and no job", async () => {
    const u = await gw.register();
    const r = await submitImage(u.api_key, { model: "imgA-v4-pro", prompt: "p", n: 2 });
    assertError(r, 402, "insufficient_balance");
    const rows = await gw.services.db.kysely.selectFrom("jobs").select("id").where("account_id", "=", u.org_id).execute();
    assert.equal(rows.length, 0);
    assert.equal(await balance(u.org_id), 500_000);
  });

  test("upstream failure: job failed with its error, the whole hold released", async () => {
    const u = await richUser();
    const r = await submitImage(u.api_key, { model: "imgA-v4", prompt: "p", n: 3 }, { "x-svc-simulate": "fail" });
    assert.equal(r.status, 202);
    const done = await gw.waitForJob(u.api_key, r.json.id);
    assert.equal(done.json.status, "failed");
    assert.equal(done.json.cost_usd, null);
    assert.equal(done.json.output, null);
    assert.equal(done.json.error.code, "provider_error");
    assert.equal(typeof done.json.error.message, "string");
    assert.equal(await balance(u.org_id), 100_500_000);
    const ledger = await gw.request("GET", "/v1/billing/ledger?limit=2", { token: u.api_key });
    assert.deepEqual(ledger.json.data.map((e: { kind: string; job_id: string }) => [e.kind, e.job_id]), [
      ["hold_release", r.json.id],
      ["hold", r.json.id],
    ]);
  });

  test("another account's job is 404 job_not_found", async () => {
    const u = await richUser();
    const other = await gw.register();
    const r = await submitImage(u.api_key, { model: "imgA-v4", prompt: "p" });
    assertError(await gw.request("GET", `/v1/jobs/${r.json.id}`, { token: other.api_key }), 404, "job_not_found");
    assertError(await gw.request("GET", "/v1/jobs/job_nonexistent", { token: u.api_key }), 404, "job_not_found");
    assert.equal((await gw.request("GET", `/v1/jobs/${r.json.id}`, { token: u.api_key })).status, 200);
  });

  test("tier 0 cannot submit video (429 that no wait lifts, naming the tier that can); tier 1 can", async () => {
    const u = await gw.register();
    const r = await submitVideo(u.api_key, { model: "vidD-3-fast", prompt: "p", duration: 1 });
    assertError(r, 429, "rate_limited");
    assert.equal(r.headers.get("retry-after"), null);
    assert.equal(r.headers.get("x-should-retry"), "false");
    assert.match(r.json.error.message, /Tier 1 allows it, reached by deposits of 10(\.0+)? USD in all: top up/);
    assert.equal(await balance(u.org_id), 500_000);
    await gw.deposit(u.user_id, 10);
    assert.equal((await submitVideo(u.api_key, { model: "vidD-3-fast", prompt: "p", duration: 1 })).status, 202);
  });

  test("vector models answer SVG served with a script-blocking Content-Security-Policy", async () => {
    const u = await richUser();
    const r = await submitImage(u.api_key, { model: "imgA-v4-vector", prompt: "a logo" });
    const done = await gw.waitForJob(u.api_key, r.json.id);
    assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
    assert.equal(done.json.output.content_type, "image/svg+xml");
    const svg = await gw.request("GET", new URL(done.json.output.url).pathname);
    assert.equal(svg.headers.get("content-type"), "image/svg+xml");
    const csp = svg.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /sandbox/);
    assert.doesNotMatch(csp, /script-src/);
    assert.match(Buffer.from(svg.bytes).toString(), /^<\?xml|^<svg/);
  });
});

for (const backend of BACKENDS) {
  describe(`job idempotency and queue caps on ${backend.name}`, { skip: backend.skip }, () => {
    let gw: TestGateway;
    before(async () => {
      gw = await startGateway(backend.name);
    });
    after(async () => {
      await gw?.close();
    });

    test("replay answers 200 with the same job and no new hold; a different body is 409", async () => {
      const u = await gw.register();
      await gw.deposit(u.user_id, 10);
      const body = { model: "imgA-v4", prompt: "same", idempotency_key: "order-42" };
      const first = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body });
      assert.equal(first.status, 202);
      const again = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { idempotency_key: "order-42", prompt: "same", model: "imgA-v4" } });
      assert.equal(again.status, 200);
      assert.equal(again.json.id, first.json.id);
      assert.equal(again.json.idempotency_key, "order-42");
      const conflict = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { ...body, prompt: "different" } });
      assertError(conflict, 409, "idempotency_conflict");
      await gw.waitForJob(u.api_key, first.json.id);
      const holds = await gw.services.db.kysely.selectFrom("holds").select("id").where("account_id", "=", u.org_id).execute();
      assert.equal(holds.length, 1);
      // The key is scoped to the API key: another key of the same account makes a new job.
      const k2 = (await gw.request("POST", "/v1/auth/keys", { token: u.api_key, body: {} })).json.api_key;
      const other = await gw.request("POST", "/v1/images/generations", { token: k2, body });
      assert.equal(other.status, 202);
      assert.notEqual(other.json.id, first.json.id);
    });

    test("concurrent submits with one idempotency key create one job and one hold", async () => {
      const u = await gw.register();
      await gw.deposit(u.user_id, 10);
      const body = { model: "imgA-v4", prompt: "race", idempotency_key: "race-1" };
      const results = await Promise.all(
        Array.from({ length: 12 }, () => gw.request("POST", "/v1/images/generations", { token: u.api_key, body })),
      );
      const ids = new Set(results.map((r) => r.json.id));
      assert.equal(ids.size, 1, JSON.stringify(results.map((r) => [r.status, r.json])));
      assert.equal(results.filter((r) => r.status === 202).length, 1);
      assert.equal(results.filter((r) => r.status === 200).length, 11);
      const db = gw.services.db.kysely;
      assert.equal((await db.selectFrom("holds").select("id").where("account_id", "=", u.org_id).execute()).length, 1);
      await gw.waitForJob(u.api_key, [...ids][0]);
      assert.equal(await getBalance(db, u.org_id), await ledgerSum(db, u.org_id));
      assert.equal(await getBalance(db, u.org_id), 10_500_000 - 54_000);
    });

    test("tier 0 images: 2 run, 6 wait, the 9th is 429 with Retry-After; never more than 2 processing", async () => {
      const u = await gw.register();
      await gw.deposit(u.user_id, 5);
      await gw.request("PUT", `/v1/admin/users/${u.user_id}/tier`, { token: ADMIN_TOKEN, body: { tier: 0 } });
      const db = gw.services.db.kysely;
      let maxProcessing = 0;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          const rows = await db.selectFrom("jobs").select("id").where("account_id", "=", u.org_id).where("status", "=", "processing").execute();
          maxProcessing = Math.max(maxProcessing, rows.length);
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, headers: { "x-svc-simulate": "slow" }, body: { model: "imgA-v4", prompt: `p${i}` } });
        assert.equal(r.status, 202, JSON.stringify(r.json));
        ids.push(r.json.id);
      }
      const ninth = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body: { model: "imgA-v4", prompt: "p9" } });
      assertError(ninth, 429, "rate_limited");
      assert.ok(Number(ninth.headers.get("retry-after")) >= 1);
      for (const id of ids) assert.equal((await gw.waitForJob(u.api_key, id, 60_000)).json.status, "succeeded");
      sampling = false;
      await sampler;
      assert.ok(maxProcessing <= 2, `max processing ${maxProcessing}`);
      assert.ok(maxProcessing >= 1);
      assert.equal(await getBalance(db, u.org_id), 5_500_000 - 8 * 54_000);
      assert.equal(await ledgerSum(db, u.org_id), 5_500_000 - 8 * 54_000);
    });
  });
}

describe("hung workers and the combined pool", () => {
  test("X-Svc-Simulate: hang: the worker stops reporting and the sweep refunds the job", async () => {
    const gw = await startGateway("sqlite", { SWEEP_IMAGE_AFTER_S: "1" });
    try {
      const u = await gw.register();
      const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, headers: { "x-svc-simulate": "hang" }, body: { model: "imgA-v4", prompt: "hang" } });
      assert.equal(r.status, 202);
      const done = await gw.waitForJob(u.api_key, r.json.id, 15_000);
      assert.equal(done.json.status, "refunded", JSON.stringify(done.json));
      assert.equal(done.json.error.code, "worker_lost");
      const db = gw.services.db.kysely;
      assert.equal(await getBalance(db, u.org_id), 500_000);
      assert.equal(await ledgerSum(db, u.org_id), 500_000);
    } finally {
      await gw.close();
    }
  });

  test("tier 4: images and videos share one pool of 38 running and 114 queued", async () => {
    const gw = await startGateway("sqlite", {}, { runner: false });
    try {
      const u = await gw.register();
      await gw.deposit(u.user_id, 1000);
      const submit = (i: number) =>
        gw.request("POST", i % 2 ? "/v1/videos/generations" : "/v1/images/generations", {
          token: u.api_key,
          body: i % 2 ? { model: "vidD-3-fast", prompt: `v${i}`, duration: 1 } : { model: "imgA-v4", prompt: `i${i}` },
        });
      // No runner: every job stays pending, so the combined cap is 38 + 114 = 152 in flight.
      await gw.request("PUT", `/v1/admin/users/${u.user_id}/limits`, { token: ADMIN_TOKEN, body: { rpm: 10_000, per_model_rpm: 10_000 } });
      for (let i = 0; i < 152; i++) assert.equal((await submit(i)).status, 202, `job ${i}`);
      const over = await submit(152);
      assert.equal(over.status, 429);
      assert.match(over.json.error.message, /image and video/);
    } finally {
      await gw.close();
    }
  });
});
