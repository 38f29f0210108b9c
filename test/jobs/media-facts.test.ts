/**
 * The media describe themselves truthfully (issue 42 point 5): every fact the gateway reports about an
 * output (pixel size, length, frames per second, content type) is the file's own, on every surface: the
 * native job (`GET /v1/jobs/{id}`), OpenAI's Video object, the fal dialect's result, the MCP `get_job`
 * tool and the `job.succeeded` webhook. Each file is downloaded and read by a parser other than the
 * gateway's (music-metadata for the MP4's video track and length, its `stsz` box for the frames, zlib
 * for the PNG's rows: test/helpers/media-fixtures.ts); ffprobe is not on the test machines.
 *
 * On the simulator, a video asked for at 1280x720 or 720x1280 is rendered at that size (up to the model's
 * largest). Through the loopback fakes of fal and BFL, the files are what the providers' fakes make (a
 * 640x360 Veo clip of 4 s for a 2 s, 1280x720 ask; a FLUX.2 PNG on BFL's 16 px grid), and what is
 * reported is that, not the request.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { appsOfModel } from "../../src/http/dialects/fal/endpoints.ts";
import { type BflFake, startBflFake } from "../../fakes/bfl.ts";
import { type FalFake, startFalFake } from "../../fakes/fal.ts";
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../helpers/gateway.ts";
import { decodedPngSize, independentVideoFacts } from "../helpers/media-fixtures.ts";
import { type Receiver, startReceiver } from "../webhooks/receiver.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON
type Json = Record<string, any>;

/** A gateway with a customer on tier 2 (video allowed, requests per minute to spare), its webhook receiver and an MCP client. */
interface Setup {
  gw: TestGateway;
  key: string;
  rx: Receiver;
  mcp: Client;
}

async function setUp(gw: TestGateway): Promise<Setup> {
  const user = await gw.register();
  await gw.deposit(user.user_id, 20);
  await gw.request("PUT", `/v1/admin/users/${user.user_id}/tier`, { token: ADMIN_TOKEN, body: { tier: 2 } });
  const rx = await startReceiver();
  const ep = await gw.request("POST", "/v1/webhooks", { token: user.api_key, body: { url: `${rx.url}/hook` } });
  assert.equal(ep.status, 201, JSON.stringify(ep.json));
  const mcp = new Client({ name: "media-facts-test", version: "1.0.0" });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${user.api_key}` } } }));
  return { gw, key: user.api_key, rx, mcp };
}

async function tearDown(s: Setup | undefined): Promise<void> {
  await s?.mcp.close();
  await s?.rx.close();
  await s?.gw.close();
}

/** The job, succeeded, and its first file's bytes. */
async function finished(s: Setup, id: string): Promise<{ job: Json; bytes: Uint8Array }> {
  const done = await s.gw.waitForJob(s.key, id, 60_000);
  assert.equal(done.json.status, "succeeded", JSON.stringify(done.json));
  const file = await s.gw.request("GET", new URL(done.json.output.url).pathname);
  assert.equal(file.status, 200);
  assert.equal(file.headers.get("content-type"), done.json.output.content_type, "the file is served with the type reported");
  return { job: done.json, bytes: file.bytes };
}

/**
 * The job's `output` as every other surface reports it: MCP `get_job` (the job object), the webhook's
 * `job.succeeded` data, and the fal dialect's result (its own field names). Each must equal the native
 * `output` (the fal result: the same facts).
 */
async function assertEverySurfaceAgrees(s: Setup, job: Json): Promise<void> {
  const viaMcp = (await s.mcp.callTool({ name: "get_job", arguments: { job_id: job.id } })) as CallToolResult;
  assert.deepEqual((viaMcp.structuredContent as Json).job.output, job.output, "MCP get_job");

  await s.rx.waitFor(() => s.rx.on("/hook").some((r) => (JSON.parse(r.body) as Json).data?.id === job.id), `the webhook of ${job.id}`);
  const hook = s.rx.on("/hook").map((r) => JSON.parse(r.body) as Json).find((e) => e.data?.id === job.id) as Json;
  assert.equal(hook.type, "job.succeeded");
  assert.deepEqual(hook.data.output, job.output, "webhook");

  const [app] = [...appsOfModel(job.model)];
  const fal = await s.gw.request("GET", "/fal/proxy", { headers: { authorization: `Key ${s.key}`, "x-fal-target-url": `https://queue.fal.run/${app}/requests/${job.id}` } });
  assert.equal(fal.status, 200, JSON.stringify(fal.json));
  const o = job.output;
  if (job.kind === "video") {
    const v = fal.json.video;
    assert.deepEqual([v.url, v.content_type, v.width, v.height, v.fps, v.duration], [o.url, o.content_type, o.width, o.height, o.fps, o.duration_sec], "fal result");
  } else {
    const i = fal.json.images[0];
    assert.deepEqual([i.url, i.content_type, i.width, i.height], [o.url, o.content_type, o.width, o.height], "fal result");
  }
}

/** Checks a video job's reported facts against its MP4, read independently; returns those facts. */
async function assertVideoFactsAreTheFile(job: Json, mp4: Uint8Array): Promise<{ width: number; height: number; durationSec: number }> {
  const file = await independentVideoFacts(mp4);
  const o = job.output;
  assert.equal(o.content_type, "video/mp4");
  assert.deepEqual([o.width, o.height], [file.width, file.height], "size");
  assert.equal(o.duration_sec, file.durationSec, "length");
  assert.equal(o.fps, file.frames / file.durationSec, "frames per second");
  return file;
}

/** An OpenAI-dialect create (JSON, as the SDK also sends it), answered as the Video object. */
async function createVideo(s: Setup, body: Record<string, unknown>): Promise<Json> {
  const r = await s.gw.request("POST", "/v1/videos", { token: s.key, body });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return r.json;
}

describe("what the gateway reports of an output is the file's own: the simulator", () => {
  let s: Setup;
  before(async () => {
    s = await setUp(await startGateway("sqlite", { WEBHOOK_ALLOW_PRIVATE: "1" }));
  });
  after(async () => {
    await tearDown(s);
  });

  test("OpenAI-dialect videos at 1280x720 and 720x1280: rendered at that size; the Video object and every surface say the MP4's size and length", async () => {
    for (const size of ["1280x720", "720x1280"]) {
      const created = await createVideo(s, { model: "vidD-3-fast", prompt: "waves rolling onto a beach at dusk", seconds: "2", size });
      // Before there is a file: what was asked.
      assert.deepEqual([created.size, created.seconds], [size, "2"]);
      const { job, bytes } = await finished(s, created.id);
      const file = await assertVideoFactsAreTheFile(job, bytes);
      assert.equal(`${file.width}x${file.height}`, size, "the simulator rendered the size asked for");
      const video = (await s.gw.request("GET", `/v1/videos/${created.id}`, { token: s.key })).json;
      assert.equal(video.status, "completed");
      assert.equal(video.size, `${file.width}x${file.height}`);
      assert.equal(video.seconds, String(file.durationSec));
      const content = await s.gw.request("GET", `/v1/videos/${created.id}/content`, { token: s.key });
      assert.deepEqual(content.bytes, bytes);
      await assertEverySurfaceAgrees(s, job);
    }
  });

  test("native video jobs: no size asked is 640x360 as before; a size beyond the model's largest is rendered at its largest", async () => {
    for (const [body, want] of [
      [{ model: "vidA-2.5-pro", prompt: "a paper boat on a rainy street", duration: 1 }, [640, 360]],
      [{ model: "vidD-3-fast", prompt: "a paper boat on a rainy street", duration: 1, parameters: { size: "1920x1080" } }, [1280, 720]],
    ] as const) {
      const r = await s.gw.request("POST", "/v1/videos/generations", { token: s.key, body });
      assert.equal(r.status, 202, JSON.stringify(r.json));
      const { job, bytes } = await finished(s, r.json.id);
      const file = await assertVideoFactsAreTheFile(job, bytes);
      assert.deepEqual([file.width, file.height, file.durationSec], [...want, 1], body.model);
      await assertEverySurfaceAgrees(s, job);
    }
  });

  test("image jobs: the PNG's own size (decoded), natively and through the OpenAI images call", async () => {
    const r = await s.gw.request("POST", "/v1/images/generations", { token: s.key, body: { model: "imgA-v4", prompt: "a lighthouse at dawn", size: "320x200", n: 2 } });
    assert.equal(r.status, 202, JSON.stringify(r.json));
    const { job, bytes } = await finished(s, r.json.id);
    assert.equal(job.output.content_type, "image/png");
    assert.deepEqual({ width: job.output.width, height: job.output.height }, decodedPngSize(bytes));
    assert.deepEqual(decodedPngSize(bytes), { width: 320, height: 200 }, "the simulator honours the size asked for");
    await assertEverySurfaceAgrees(s, job);
    // Every image of the job, as the fal result lists them.
    const second = await s.gw.request("GET", new URL(job.output.urls[1]).pathname);
    assert.deepEqual(decodedPngSize(second.bytes), { width: 320, height: 200 });

    const openai = await s.gw.request("POST", "/openai/v1/images/generations", { token: s.key, body: { model: "imgA-v4", prompt: "a lighthouse", size: "1024x576" } });
    assert.equal(openai.status, 200, JSON.stringify(openai.json));
    const png = await s.gw.request("GET", new URL(openai.json.data[0].url).pathname);
    assert.deepEqual(decodedPngSize(png.bytes), { width: 1024, height: 576 });
  });
});

describe("what the gateway reports of an output is the file's own: loopback fakes of fal and BFL", () => {
  const FAL_KEY = "fal-facts-key-0a1b2c3d4e5f";
  const BFL_KEY = "bfl-facts-key-6a7b8c9d0e1f";
  let fal: FalFake;
  let bfl: BflFake;
  let s: Setup;
  before(async () => {
    fal = await startFalFake({ apiKey: FAL_KEY, queueMs: 20, runMs: 40 });
    bfl = await startBflFake({ apiKey: BFL_KEY, pendingMs: 40 });
    const upstreams = [
      { name: "fal", protocol: "fal", base_url: fal.url, api_key: "env:FACTS_FAL_KEY", families: ["vidD", "imgA"] },
      { name: "bfl", protocol: "bfl", base_url: bfl.url, api_key: "env:FACTS_BFL_KEY", families: ["imgB"] },
    ];
    const gw = await startGateway(
      "sqlite",
      { FACTS_FAL_KEY: FAL_KEY, FACTS_BFL_KEY: BFL_KEY, UPSTREAMS: JSON.stringify(upstreams), WEBHOOK_ALLOW_PRIVATE: "1" },
      { runner: { pollMs: 20, upstreamPoll: { pollMs: 20, backoffMaxMs: 100 } } },
    );
    s = await setUp(gw);
  });
  after(async () => {
    await tearDown(s);
    await Promise.all([fal?.close(), bfl?.close()]);
  });

  test("an OpenAI-dialect video at 1280x720 on fal: the provider's clip (640x360, 4 s) is what the Video object and every surface report", async () => {
    const created = await createVideo(s, { model: "vidD-3-fast", prompt: "waves at dusk", seconds: "2", size: "1280x720" });
    const { job, bytes } = await finished(s, created.id);
    // fal was asked for Veo's shortest clip of at least 2 s and the aspect ratio; never the gateway's `size`.
    const sent = fal.submits().at(-1)?.body as Json;
    assert.deepEqual([sent.duration, sent.aspect_ratio, sent.size], ["4s", "16:9", undefined]);
    const file = await assertVideoFactsAreTheFile(job, bytes);
    assert.deepEqual([file.width, file.height, file.durationSec], [640, 360, 4], "the fake's clip, not the request");
    const video = (await s.gw.request("GET", `/v1/videos/${created.id}`, { token: s.key })).json;
    assert.deepEqual([video.size, video.seconds], ["640x360", "4"]);
    // Charged for what was both asked for and delivered (D26): 2 s of vidD-3-fast.
    assert.equal(job.cost_usd, 0.27);
    await assertEverySurfaceAgrees(s, job);
  });

  test("a FLUX.2 image on BFL: the PNG's own size (BFL's 16 px grid), not the size asked for", async () => {
    const r = await s.gw.request("POST", "/v1/images/generations", { token: s.key, body: { model: "imgB-2-pro", prompt: "a harbour", size: "1000x600" } });
    assert.equal(r.status, 202, JSON.stringify(r.json));
    const { job, bytes } = await finished(s, r.json.id);
    const png = decodedPngSize(bytes);
    assert.deepEqual(png, { width: 1008, height: 608 });
    assert.deepEqual([job.output.content_type, job.output.width, job.output.height], ["image/png", png.width, png.height]);
    await assertEverySurfaceAgrees(s, job);
  });
});
