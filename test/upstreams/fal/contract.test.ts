/**
 * Contract tests of the fal protocol against the strict loopback fake (fakes/fal.ts, issue 27 point 3
 * and D35): the fake serves exactly the gateway's endpoint table and validates each input as the
 * endpoint's model in fal-js `endpoints.ts` does; every mapping the adapter makes passes it; a wrong
 * field name, a bad value, an unknown or retired endpoint get fal's own answers, called directly and
 * through the adapter; and a request that ends for its input is never retried on another source (D27),
 * while fal's infrastructure failures are.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { FAL_FAKE_ENDPOINTS, startFalFake } from "../../../fakes/fal.ts";
import type { FalFake } from "../../../fakes/fal.ts";
import { validateInput } from "../../../fakes/input-schema.ts";
import { FAL_MODELS, imageCall, videoCall } from "../../../src/upstreams/fal/models.ts";
import { createFalSource } from "../../../src/upstreams/fal/source.ts";
import type { FalSource } from "../../../src/upstreams/fal/source.ts";
import type { AspectRatio, UpstreamJobState } from "../../../src/upstreams/types.ts";
import { assertNoKey, FAL_KEY, falFailure, imageRequest, pollUntil, videoRequest } from "./helpers.ts";

const FRAME = "https://images.example.com/frame.png";
const ASPECTS: readonly AspectRatio[] = ["1:1", "16:9", "9:16", "4:3", "3:4", "21:9"];

let fake: FalFake;
let source: FalSource;

before(async () => {
  fake = await startFalFake({ apiKey: FAL_KEY, queueMs: 10, runMs: 20 });
  source = createFalSource({ name: "fal-main", baseUrl: fake.url, apiKey: FAL_KEY, timeoutMs: 3000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

type Failed = Extract<UpstreamJobState, { state: "failed" }>;

async function failed(handle: Parameters<FalSource["poll"]>[0], s: FalSource = source): Promise<Failed> {
  const state = await pollUntil(s, handle);
  assert.equal(state.state, "failed", JSON.stringify(state));
  return state as Failed;
}

/** A raw submit to the fake, as any client would send it. */
function post(endpointId: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${fake.url}/${endpointId}`, {
    method: "POST",
    headers: { authorization: `Key ${FAL_KEY}`, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** Submits raw, waits for COMPLETED, returns the status answer and the result answer. */
async function submitAndResult(endpointId: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: Record<string, unknown>; result: Response }> {
  const res = await post(endpointId, body, headers);
  assert.equal(res.status, 200);
  const submitted = (await res.json()) as { status_url: string; response_url: string };
  for (let i = 0; i < 200; i++) {
    const status = (await (await fetch(submitted.status_url, { headers: { authorization: `Key ${FAL_KEY}` } })).json()) as Record<string, unknown>;
    if (status.status === "COMPLETED") return { status, result: await fetch(submitted.response_url, { headers: { authorization: `Key ${FAL_KEY}` } }) };
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail("never COMPLETED");
}

interface Detail {
  loc: (string | number)[];
  msg: string;
  type: string;
  url?: string;
  ctx?: Record<string, unknown>;
}

async function detailOf(res: Response): Promise<Detail[]> {
  assert.equal(res.status, 422);
  const body = (await res.json()) as { detail: Detail[] };
  assert.ok(Array.isArray(body.detail) && body.detail.length > 0, JSON.stringify(body));
  for (const item of body.detail) {
    assert.ok(Array.isArray(item.loc) && item.loc[0] === "body", JSON.stringify(item));
    assert.equal(typeof item.msg, "string");
    assert.equal(item.url, `https://docs.fal.ai/errors#${item.type}`);
  }
  return body.detail;
}

describe("the fake serves the gateway's fal table, and every mapping of the adapter passes its input models", () => {
  test("the default endpoints of FAL_MODELS are exactly the endpoints the fake serves", () => {
    const defaults = new Set<string>();
    for (const model of Object.values(FAL_MODELS)) {
      if (model.endpoints.text !== null) defaults.add(model.endpoints.text);
      if (model.endpoints.image !== null) defaults.add(model.endpoints.image);
    }
    assert.deepEqual([...defaults].sort(), Object.keys(FAL_FAKE_ENDPOINTS).sort());
    assert.ok(!defaults.has("fal-ai/veo3") && !defaults.has("fal-ai/veo3/fast"), "D35: fal removed fal-ai/veo3");
  });

  test("every video mapping (each length 1..16 s, text and image variant) is a valid input of its endpoint", () => {
    let checked = 0;
    for (const [model, row] of Object.entries(FAL_MODELS)) {
      if (row.kind !== "video") continue;
      for (const imageUrl of [null, FRAME]) {
        if (imageUrl === null && row.endpoints.text === null) continue;
        for (let durationSec = 1; durationSec <= 16; durationSec++) {
          const call = videoCall(videoRequest({ model, durationSec, imageUrl }), {});
          const errors = validateInput(FAL_FAKE_ENDPOINTS[call.endpointId].input, call.input);
          assert.deepEqual(errors, [], `${model} ${call.endpointId} ${JSON.stringify(call.input)}`);
          checked++;
        }
      }
    }
    assert.ok(checked > 200);
  });

  test("every image mapping (each aspect, n 1..4, with and without references) is a valid input of its endpoint", () => {
    let checked = 0;
    for (const [model, row] of Object.entries(FAL_MODELS)) {
      if (row.kind !== "image") continue;
      for (const imageUrls of [[], [FRAME, FRAME]]) {
        for (const aspect of ASPECTS) {
          for (const n of [1, 2, 4]) {
            for (const [width, height] of [
              [1024, 1024],
              [2048, 2048],
              [1456, 816],
              [64, 64],
            ]) {
              const call = imageCall(imageRequest({ model, aspect, n, width, height, imageUrls }), {});
              const errors = validateInput(FAL_FAKE_ENDPOINTS[call.endpointId].input, call.input);
              assert.deepEqual(errors, [], `${model} ${call.endpointId} ${JSON.stringify(call.input)}`);
              checked++;
            }
          }
        }
      }
    }
    assert.ok(checked > 300);
  });
});

describe("the fake refuses what fal refuses (called directly)", () => {
  test("a misspelt field name: accepted by the queue, the request ends COMPLETED and its result is 422 `missing`", async () => {
    const { status, result } = await submitAndResult("fal-ai/flux-2-pro", { promt: "a lighthouse", imageSize: "bogus" });
    assert.equal(status.error, undefined, "the default: no error on the status");
    const detail = await detailOf(result);
    // `imageSize` is not a field of the model: pydantic ignores it; `prompt` is missing.
    assert.deepEqual(
      detail.map((d) => [d.loc, d.type, d.msg]),
      [[["body", "prompt"], "missing", "Field required"]],
    );
  });

  test("with input-errors-submit the same input is refused at the submit", async () => {
    const res = await post("fal-ai/flux-2-pro", { promt: "a lighthouse" }, { "x-fal-fake": "input-errors-submit" });
    const detail = await detailOf(res);
    assert.deepEqual(detail[0].loc, ["body", "prompt"]);
    assert.equal(detail[0].type, "missing");
    assert.equal(fake.submits().length, 1);
  });

  test("an image_size that is neither a preset nor {width, height}", async () => {
    const detail = await detailOf(await post("fal-ai/flux-2-pro", { prompt: "x", image_size: "bogus" }, { "x-fal-fake": "input-errors-submit" }));
    const types = detail.map((d) => `${d.loc.join(".")} ${d.type}`);
    assert.deepEqual(types, [
      "body.image_size.ImageSize model_type",
      "body.image_size.literal['square_hd','square','portrait_4_3','portrait_16_9','landscape_4_3','landscape_16_9'] literal_error",
    ]);
    const big = await detailOf(await post("fal-ai/recraft/v4/text-to-image", { prompt: "x", image_size: { width: 20_000, height: 512 } }, { "x-fal-fake": "input-errors-submit" }));
    assert.equal(big[0].type, "less_than_equal");
    assert.deepEqual(big[0].loc, ["body", "image_size", "ImageSize", "width"]);
    assert.deepEqual(big[0].ctx, { le: 14142 });
  });

  test("enums: Veo 3.1 durations are \"4s\", \"6s\", \"8s\"; Kling's are \"5\", \"10\"; Seedance fast has no 1080p", async () => {
    const h = { "x-fal-fake": "input-errors-submit" };
    const veo = await detailOf(await post("fal-ai/veo3.1/fast", { prompt: "x", duration: "5" }, h));
    assert.deepEqual([veo[0].loc, veo[0].type, veo[0].msg], [["body", "duration"], "literal_error", "Input should be '4s', '6s' or '8s'"]);
    const kling = await detailOf(await post("fal-ai/kling-video/v2.5-turbo/pro/text-to-video", { prompt: "x", duration: 5 }, h));
    assert.equal(kling[0].type, "literal_error", "5 is not \"5\"");
    const seedance = await detailOf(await post("bytedance/seedance-2.0/fast/text-to-video", { prompt: "x", resolution: "1080p" }, h));
    assert.deepEqual(seedance[0].loc, ["body", "resolution"]);
    assert.equal((await post("bytedance/seedance-2.0/text-to-video", { prompt: "x", resolution: "1080p", duration: "auto" }, h)).status, 200);
  });

  test("ranges, types, required images and model validators", async () => {
    const h = { "x-fal-fake": "input-errors-submit" };
    const cases: [string, unknown, string, (string | number)[]][] = [
      ["fal-ai/flux-pro/kontext/text-to-image", { prompt: "x", num_images: 5 }, "less_than_equal", ["body", "num_images"]],
      ["fal-ai/flux-pro/v1.1-ultra", { prompt: "x", num_images: 0 }, "greater_than_equal", ["body", "num_images"]],
      ["fal-ai/kling-video/v2.5-turbo/pro/text-to-video", { prompt: "x", cfg_scale: 1.5 }, "less_than_equal", ["body", "cfg_scale"]],
      ["fal-ai/kling-video/v2.5-turbo/pro/text-to-video", { prompt: "x".repeat(2501) }, "string_too_long", ["body", "prompt"]],
      ["fal-ai/recraft/v3/text-to-image", { prompt: "" }, "string_too_short", ["body", "prompt"]],
      ["fal-ai/veo3.1", { prompt: 42 }, "string_type", ["body", "prompt"]],
      ["fal-ai/veo3.1", { prompt: "x", generate_audio: "maybe" }, "bool_parsing", ["body", "generate_audio"]],
      ["fal-ai/veo3.1/image-to-video", { prompt: "x" }, "missing", ["body", "image_url"]],
      ["fal-ai/flux-2-pro/edit", { prompt: "x", image_urls: "https://a.example/x.png" }, "list_type", ["body", "image_urls"]],
      ["fal-ai/kling-video/v3/pro/text-to-video", { duration: "5" }, "value_error", ["body"]],
      ["fal-ai/recraft/v4/text-to-image", { prompt: "x", colors: [{ r: 300 }] }, "less_than_equal", ["body", "colors", 0, "r"]],
    ];
    for (const [endpoint, body, type, loc] of cases) {
      const detail = await detailOf(await post(endpoint, body, h));
      assert.deepEqual([detail[0].type, detail[0].loc], [type, loc], `${endpoint} ${JSON.stringify(body).slice(0, 80)}`);
    }
    // pydantic's lax mode: "true" is a boolean and "2" an integer to fal.
    assert.equal((await post("fal-ai/flux-pro/v1.1-ultra", { prompt: "x", num_images: "2", raw: "true" }, h)).status, 200);
  });

  test("an endpoint fal does not serve (the removed fal-ai/veo3) answers 404 at the submit", async () => {
    const res = await post("fal-ai/veo3", { prompt: "x" });
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { detail: "Application 'fal-ai/veo3' not found" });
    const sub = await post("fal-ai/flux-pro/v1.1-ultra/redux", { prompt: "x" });
    assert.equal(sub.status, 404);
    assert.deepEqual(await sub.json(), { detail: "Path /v1.1-ultra/redux not found" });
  });

  test("a retired endpoint answers as an unknown one; the others of its app still work", async () => {
    const retiring = await startFalFake({ apiKey: FAL_KEY, retired: ["fal-ai/veo3.1/fast"] });
    try {
      const send = (id: string) =>
        fetch(`${retiring.url}/${id}`, { method: "POST", headers: { authorization: `Key ${FAL_KEY}`, "content-type": "application/json" }, body: '{"prompt":"x"}' });
      const gone = await send("fal-ai/veo3.1/fast");
      assert.equal(gone.status, 404);
      assert.deepEqual(await gone.json(), { detail: "Path /fast not found" });
      assert.equal((await send("fal-ai/veo3.1")).status, 200);
    } finally {
      await retiring.close();
    }
  });
});

describe("through the adapter", () => {
  test("a retired endpoint: FalError modelNotFound naming it, not retryable (D35)", async () => {
    const retiring = await startFalFake({ apiKey: FAL_KEY, retired: ["fal-ai/veo3.1/fast"] });
    const s = createFalSource({ name: "fal-retiring", baseUrl: retiring.url, apiKey: FAL_KEY });
    try {
      const err = await falFailure(s.submitVideo(videoRequest({ model: "vidD-3-fast", durationSec: 4 })));
      assert.equal(err.modelNotFound, true);
      assert.equal(err.upstreamModel, "fal-ai/veo3.1/fast");
      assert.equal(err.retryable, false);
      assert.equal(err.contentRejected, false);
      assert.equal(err.status, 404);
      assert.match(err.message, /fal-retiring: fal does not serve the endpoint fal-ai\/veo3\.1\/fast \(submit: HTTP 404: Path \/fast not found\)/);
      // The image-to-video variant is another endpoint, still served.
      const handle = await s.submitVideo(videoRequest({ model: "vidD-3-fast", durationSec: 4, imageUrl: FRAME }));
      assert.equal((await pollUntil(s, handle)).state, "succeeded");
    } finally {
      await s.close();
      await retiring.close();
    }
  });

  test("a models override naming the removed fal-ai/veo3: modelNotFound naming it", async () => {
    const s = createFalSource({ name: "fal-old", baseUrl: fake.url, apiKey: FAL_KEY, models: { "vidD-3": "fal-ai/veo3" } });
    try {
      const err = await falFailure(s.submitVideo(videoRequest({ model: "vidD-3", durationSec: 8 })));
      assert.equal(err.modelNotFound, true);
      assert.equal(err.upstreamModel, "fal-ai/veo3");
      assert.equal(err.retryable, false);
      assert.match(err.message, /fal-ai\/veo3 \(submit: HTTP 404: Application 'fal-ai\/veo3' not found\)/);
    } finally {
      await s.close();
    }
  });

  test("a bad override (Kling's mapping sent to Veo 3.1): the request ends for its input, failed, not retryable", async () => {
    const s = createFalSource({ name: "fal-bad", baseUrl: fake.url, apiKey: FAL_KEY, models: { "vidA-2.5-pro": "fal-ai/veo3.1/fast" } });
    try {
      const state = await failed(await s.submitVideo(videoRequest({ model: "vidA-2.5-pro", durationSec: 5 })), s);
      assert.equal(state.retryable, false);
      assert.equal(state.contentRejected, false);
      assert.match(state.message, /HTTP 422: duration: Input should be '4s', '6s' or '8s' \(literal_error\)/);
    } finally {
      await s.close();
    }
  });

  test("a pass-through parameter fal refuses: failed, not retryable, fal's field named", async () => {
    const state = await failed(await source.submitImage(imageRequest({ model: "imgB-1.1-ultra", parameters: { safety_tolerance: "9" } })));
    assert.equal(state.retryable, false);
    assert.match(state.message, /safety_tolerance: Input should be '1', '2', '3', '4', '5' or '6' \(literal_error\)/);
  });

  test("the input error on the COMPLETED status (error_type literal_error): failed, not retryable, no result call", async () => {
    const s = await startFalFake({ apiKey: FAL_KEY, queueMs: 10, runMs: 20, inputErrors: "status" });
    const src = createFalSource({ name: "fal-status", baseUrl: s.url, apiKey: FAL_KEY });
    try {
      const state = await failed(await src.submitImage(imageRequest({ model: "imgB-1.1-ultra", parameters: { safety_tolerance: "9" } })), src);
      assert.equal(state.retryable, false);
      assert.equal(state.contentRejected, false);
      assert.match(state.message, /the request failed: Input should be .* \(literal_error\)/);
      assert.equal(s.requests.filter((r) => r.method === "GET" && /\/requests\/[0-9a-f-]{36}$/.test(r.path)).length, 0);
    } finally {
      await src.close();
      await s.close();
    }
  });

  test("an error on the COMPLETED status without a type: the result decides (422: the input's fault, not retryable)", async () => {
    const s = await startFalFake({ apiKey: FAL_KEY, queueMs: 10, runMs: 20, inputErrors: "status-untyped" });
    const src = createFalSource({ name: "fal-untyped", baseUrl: s.url, apiKey: FAL_KEY });
    try {
      const state = await failed(await src.submitImage(imageRequest({ model: "imgB-1.1-ultra", parameters: { safety_tolerance: "9" } })), src);
      assert.equal(state.retryable, false);
      assert.match(state.message, /result: HTTP 422: safety_tolerance/);
    } finally {
      await src.close();
      await s.close();
    }
  });

  test("input-errors-submit: the adapter's submit throws fal's 422, not retryable", async () => {
    // The gateway pins vidD-3's resolution; a pass-through aspect_ratio Veo 3.1 does not have is refused.
    const bad = await falFailure(source.submitVideo(videoRequest({ model: "vidD-3", prompt: "x [fake:input-errors-submit]", parameters: { aspect_ratio: "4:3" } })));
    assert.equal(bad.status, 422);
    assert.equal(bad.retryable, false);
    assert.equal(bad.modelNotFound, false);
    assert.equal(bad.errorType, "literal_error");
    assert.match(bad.message, /aspect_ratio: Input should be '16:9' or '9:16' \(literal_error\)/);
  });

  test("an untyped failure whose result is fal's 500: retryable (fal's infrastructure)", async () => {
    const state = await failed(await source.submitVideo(videoRequest({ prompt: "x [fake:failed-untyped]" })));
    assert.equal(state.retryable, true);
    assert.equal(state.contentRejected, false);
  });
});

describe("COMPLETED error types: only fal's infrastructure is retryable (D27, D35)", () => {
  let server: http.Server;
  let base = "";
  let errorType: string | null = null;

  before(async () => {
    server = http.createServer((req, res) => {
      const body = req.url?.includes("/status")
        ? { status: "COMPLETED", logs: null, metrics: {}, error: "it failed", ...(errorType === null ? {} : { error_type: errorType }) }
        : { detail: "Internal Server Error" };
      res.writeHead(req.url?.includes("/status") ? 200 : 500, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const table: [string | null, boolean][] = [
    ["request_timeout", true],
    ["startup_timeout", true],
    ["runner_scheduling_failure", true],
    ["runner_connection_timeout", true],
    ["runner_disconnected", true],
    ["runner_connection_refused", true],
    ["runner_connection_error", true],
    ["runner_incomplete_response", true],
    ["runner_server_error", true],
    ["internal_error", true],
    ["internal_server_error", true],
    ["generation_timeout", true],
    ["downstream_service_error", true],
    ["downstream_service_unavailable", true],
    [null, true],
    ["client_cancelled", false],
    ["client_disconnected", false],
    ["bad_request", false],
    ["missing", false],
    ["literal_error", false],
    ["greater_than_equal", false],
    ["image_too_large", false],
    ["file_download_error", false],
    ["no_media_generated", false],
    ["feature_not_supported", false],
  ];
  for (const [type, retryable] of table) {
    test(`error_type ${type ?? "(none, result 500)"}: retryable ${retryable}`, async () => {
      errorType = type;
      const s = createFalSource({ name: "fal-types", baseUrl: base, apiKey: FAL_KEY });
      try {
        const r = `${base}/fal-ai/flux-2-pro/requests/r1`;
        const state = await s.poll({ source: "fal-types", requestId: "r1", urls: { status_url: `${r}/status`, response_url: r, cancel_url: `${r}/cancel` } });
        assert.equal(state.state, "failed");
        if (state.state !== "failed") return;
        assertNoKey(state.message);
        assert.equal(state.retryable, retryable);
        assert.equal(state.contentRejected, false);
      } finally {
        await s.close();
      }
    });
  }
});
