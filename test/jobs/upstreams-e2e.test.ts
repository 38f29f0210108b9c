/**
 * The gateway configured with `UPSTREAMS` on the loopback fakes of every visual protocol (issue "Real
 * upstreams, part 1", proof): no test seams, the sources built from the configuration exactly as
 * `npm start` builds them. imgA and vidA-vidD run on fal; imgB's first source is a fal whose jobs fail in
 * fal's own infrastructure (accepted, then `COMPLETED` with `runner_disconnected`), so imgB fails over to
 * bfl under the same hold; imgC runs on OpenAI images. Every job succeeds, is submitted once to each source
 * it reached, rehosted, charged once, and records its upstream cost; no key appears anywhere.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { getBalance, ledgerSum } from "../../src/billing/ledger.ts";
import { type BflFake, startBflFake } from "../../fakes/bfl.ts";
import { type FalFake, startFalFake } from "../../fakes/fal.ts";
import { type OpenAIImagesFake, startOpenAIImagesFake } from "../../fakes/openai-images.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";

const FAL_KEY = "fal-e2e-key-7d1c0b9a4e2f";
const BFL_KEY = "bfl-e2e-key-3a8e6f1d0c57";
const OPENAI_KEY = "sk-e2e-openai-5b9c2e7a1f04";
const KEYS = [FAL_KEY, BFL_KEY, OPENAI_KEY];
const FRAME = "https://images.example.com/frame.png";

/** One job per family and variant: the request and where it must run. */
const JOBS: { name: string; path: string; body: Record<string, unknown>; runsOn: "fal" | "bfl" | "openai"; type: RegExp }[] = [
  { name: "imgA Recraft v4, 2 images", path: "/v1/images/generations", body: { model: "imgA-v4", prompt: "a red kite", n: 2, size: "16:9" }, runsOn: "fal", type: /^image\/png/ },
  { name: "imgA vector", path: "/v1/images/generations", body: { model: "imgA-v4-vector", prompt: "a logo" }, runsOn: "fal", type: /^image\/svg\+xml/ },
  { name: "imgB FLUX.2 pro", path: "/v1/images/generations", body: { model: "imgB-2-pro", prompt: "a harbour", size: "1448x1448" }, runsOn: "bfl", type: /^image\/png/ },
  { name: "imgB Kontext, image-to-image", path: "/v1/images/generations", body: { model: "imgB-edit-pro", prompt: "make it night", image_url: FRAME }, runsOn: "bfl", type: /^image\/png/ },
  { name: "imgC-v3 gpt-image-2 high", path: "/v1/images/generations", body: { model: "imgC-v3", prompt: "a teapot" }, runsOn: "openai", type: /^image\/png/ },
  { name: "imgC-q1 gpt-image-2 at the tier", path: "/v1/images/generations", body: { model: "imgC-q1", prompt: "a teapot", quality: "high" }, runsOn: "openai", type: /^image\/png/ },
  { name: "vidA Kling 2.5, image-to-video", path: "/v1/videos/generations", body: { model: "vidA-2.5-pro", prompt: "a fox", duration: 5, image_url: FRAME }, runsOn: "fal", type: /^video\/mp4/ },
  { name: "vidB Seedance fast", path: "/v1/videos/generations", body: { model: "vidB-2-fast", prompt: "rain", duration: 4 }, runsOn: "fal", type: /^video\/mp4/ },
  { name: "vidC Hailuo-02 768p", path: "/v1/videos/generations", body: { model: "vidC-02-768p", prompt: "a city" }, runsOn: "fal", type: /^video\/mp4/ },
  { name: "vidD Veo 3 fast", path: "/v1/videos/generations", body: { model: "vidD-3-fast", prompt: "waves", duration: 4 }, runsOn: "fal", type: /^video\/mp4/ },
];

describe("UPSTREAMS on the fakes of fal, bfl and openai: every visual family", () => {
  let fal: FalFake;
  let falFlaky: FalFake;
  let bfl: BflFake;
  let openai: OpenAIImagesFake;
  let gw: TestGateway;
  const logLines: string[] = [];

  before(async () => {
    fal = await startFalFake({ apiKey: FAL_KEY, queueMs: 20, runMs: 40 });
    falFlaky = await startFalFake({ apiKey: FAL_KEY, queueMs: 20, runMs: 40, markers: ["failed-completed"] });
    bfl = await startBflFake({ apiKey: BFL_KEY, pendingMs: 60 });
    openai = await startOpenAIImagesFake({ apiKey: OPENAI_KEY });
    const upstreams = [
      { name: "fal", protocol: "fal", base_url: fal.url, api_key: "env:E2E_FAL_KEY", families: ["imgA", "vidA", "vidB", "vidC", "vidD"], max_concurrency: 4 },
      { name: "fal-flaky", protocol: "fal", base_url: falFlaky.url, api_key: "env:E2E_FAL_KEY", families: ["imgB"] },
      { name: "bfl", protocol: "bfl", base_url: bfl.url, api_key: "env:E2E_BFL_KEY", families: ["imgB"] },
      { name: "openai", protocol: "openai", base_url: `${openai.url}/v1`, api_key: "env:E2E_OPENAI_KEY", families: ["imgC"] },
    ];
    const logStream = new (await import("node:stream")).Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(chunk.toString());
        done();
      },
    });
    gw = await startGateway(
      "sqlite",
      { E2E_FAL_KEY: FAL_KEY, E2E_BFL_KEY: BFL_KEY, E2E_OPENAI_KEY: OPENAI_KEY, UPSTREAMS: JSON.stringify(upstreams), LOG_LEVEL: "info" },
      {
        overrides: { resolveHost: async (h) => (h === "images.example.com" ? ["93.184.215.14"] : []) },
        runner: { pollMs: 20, upstreamPoll: { pollMs: 20, backoffMaxMs: 100 } },
        logStream,
      },
    );
  });
  after(async () => {
    await gw?.close();
    await Promise.all([fal?.close(), falFlaky?.close(), bfl?.close(), openai?.close()]);
  });

  test("every job succeeds on its source, rehosted, charged once, with its upstream cost", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 20);
    const db = gw.services.db.kysely;
    const submitted: { job: (typeof JOBS)[number]; id: string; hold: number }[] = [];
    for (const job of JOBS) {
      const r = await gw.request("POST", job.path, { token: u.api_key, body: job.body });
      assert.equal(r.status, 202, `${job.name}: ${JSON.stringify(r.json)}`);
      submitted.push({ job, id: r.json.id, hold: r.json.hold_usd });
    }
    for (const { job, id } of submitted) {
      const done = await gw.waitForJob(u.api_key, id, 60_000);
      assert.equal(done.json.status, "succeeded", `${job.name}: ${JSON.stringify(done.json)}`);
      assert.match(done.json.output.content_type, job.type, job.name);
      assert.ok(done.json.output.url.startsWith(gw.url), `${job.name}: rehosted`);
      for (const url of done.json.output.urls as string[]) {
        const media = await gw.request("GET", new URL(url).pathname);
        assert.equal(media.status, 200, job.name);
        assert.ok(media.bytes.length > 100, job.name);
      }
      const row = await db
        .selectFrom("jobs")
        .select(["upstream_source", "fallback_layer", "cost_micros", "upstream_cost_micros", "upstream_cost_basis"])
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
      assert.equal(row.upstream_source, job.runsOn, job.name);
      // imgB's first source (fal-flaky) accepted the job and failed it in its own infrastructure: layer 1.
      assert.equal(done.json.fallback_layer, job.runsOn === "bfl" ? 1 : 0, job.name);
      assert.ok(Number(row.upstream_cost_micros) > 0, `${job.name}: upstream cost recorded`);
      assert.equal(row.upstream_cost_basis, job.runsOn === "bfl" ? "reported" : "list_price", job.name);
      const entries = await db.selectFrom("ledger_entries").select(["kind", "amount_micros"]).where("job_id", "=", id).orderBy("seq").execute();
      assert.deepEqual(entries.map((e) => e.kind), ["hold", "hold_release", "charge"], `${job.name}: one hold, one charge`);
      assert.equal(-Number(entries[2].amount_micros), Number(row.cost_micros), job.name);
    }
    assert.equal(await getBalance(db, u.org_id), await ledgerSum(db, u.org_id));

    // Each source saw one submit per job it ran (Recraft's two images are two fal requests; fal-flaky's
    // imgB submits were each followed by exactly one bfl submit, never a second fal-flaky one).
    const count = (runsOn: string) => submitted.filter((s) => s.job.runsOn === runsOn).length;
    assert.equal(fal.submits().length, count("fal") + 1);
    assert.equal(falFlaky.submits().length, count("bfl"));
    assert.equal(bfl.submits().length, count("bfl"));
    assert.equal(openai.submits().length, count("openai"));
    // The image-to-x variants were asked for (D25 `models` defaults: the `/image` endpoint).
    assert.ok(fal.submits().some((r) => r.path === "/fal-ai/kling-video/v2.5-turbo/pro/image-to-video"));
    assert.ok(bfl.submits().some((r) => r.path === "/v1/flux-kontext-pro" && (r.body as { input_image?: string }).input_image === FRAME));
    // The keys went only to their own sources, in their schemes.
    assert.ok(fal.submits().every((r) => r.headers.authorization === "Key [redacted]"));
    assert.ok(openai.submits().every((r) => r.headers.authorization === "Bearer [redacted]"));
    assert.ok(bfl.submits().every((r) => r.headers["x-key"] === "[redacted]"));
  });

  test("D26: a length the source lacks is delivered longer, shown as delivered and charged as requested", async () => {
    const u = await gw.register();
    await gw.deposit(u.user_id, 10);
    for (const { body, delivered, costUsd } of [
      // Kling 2.5 offers 5 or 10 s: 7 s asks for the 10 s clip.
      { body: { model: "vidA-2.5-pro", prompt: "a fox", duration: 7 }, delivered: 10, costUsd: 0.6615 },
      // Seedance offers 4 to 15 s: 2 s asks for 4 s.
      { body: { model: "vidB-2-fast", prompt: "rain", duration: 2 }, delivered: 4, costUsd: 0.65313 },
    ]) {
      const r = await gw.request("POST", "/v1/videos/generations", { token: u.api_key, body });
      assert.equal(r.status, 202, JSON.stringify(r.json));
      const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
      assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
      // fal's Kling and Seedance answers carry no length: it is read from the MP4 itself.
      assert.equal(done.json.output.duration_sec, delivered, body.model);
      assert.equal(done.json.cost_usd, costUsd, body.model);
    }
  });

  test("the operator sees every source; no key in any answer or log line", async () => {
    const rows = await gw.request("GET", "/v1/admin/upstreams", { token: ADMIN_TOKEN });
    assert.equal(rows.status, 200);
    assert.deepEqual((rows.json.data as { name: string }[]).map((r) => r.name), ["fal", "fal-flaky", "bfl", "openai"]);
    assert.ok(logLines.length > 10, "the request log was captured");
    const text = JSON.stringify(rows.json) + logLines.join("");
    for (const key of KEYS) assert.ok(!text.includes(key), "a key leaked");
  });

  test("a moderation refusal at each protocol ends the job content_rejected, nothing charged", async () => {
    const u = await gw.register();
    const db = gw.services.db.kysely;
    for (const body of [
      { model: "imgA-v4", prompt: "x [fake:moderation]" },
      // fal-flaky fails it in its own infrastructure first: the refusal comes from bfl, the next source.
      { model: "imgB-2-pro", prompt: "x [fake:moderation]" },
      { model: "imgC-v3", prompt: "x [fake:moderation]" },
    ]) {
      const r = await gw.request("POST", "/v1/images/generations", { token: u.api_key, body });
      assert.equal(r.status, 202);
      const done = await gw.waitForJob(u.api_key, r.json.id, 30_000);
      assert.equal(done.json.status, "failed", JSON.stringify(done.json));
      assert.equal(done.json.error.code, "content_rejected", `${body.model}: ${JSON.stringify(done.json)}`);
    }
    assert.equal(await getBalance(db, u.org_id), 500_000);
    assert.equal(await ledgerSum(db, u.org_id), 500_000);
  });
});
