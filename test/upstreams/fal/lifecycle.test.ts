/**
 * The life of a fal job against the loopback fake: every status and result shape mapped to
 * {@link UpstreamJobState} (queued with position, running, succeeded with outputs, every failure),
 * cancel, and resume from a stored handle without a second submit (D28).
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startFalFake } from "../../../fakes/fal.ts";
import type { FalFake } from "../../../fakes/fal.ts";
import { createFalSource } from "../../../src/upstreams/fal/source.ts";
import type { FalSource } from "../../../src/upstreams/fal/source.ts";
import type { UpstreamHandle, UpstreamJobState } from "../../../src/upstreams/types.ts";
import { FAL_KEY, falFailure, imageRequest, pollUntil, videoRequest } from "./helpers.ts";

let fake: FalFake;
let source: FalSource;

before(async () => {
  fake = await startFalFake({ apiKey: FAL_KEY, queueMs: 30, runMs: 60, slowMs: 60_000 });
  source = createFalSource({ name: "fal-main", baseUrl: fake.url, apiKey: FAL_KEY, timeoutMs: 3000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

type Succeeded = Extract<UpstreamJobState, { state: "succeeded" }>;
type Failed = Extract<UpstreamJobState, { state: "failed" }>;

async function succeeded(handle: UpstreamHandle): Promise<Succeeded> {
  const state = await pollUntil(source, handle);
  assert.equal(state.state, "succeeded", JSON.stringify(state));
  return state as Succeeded;
}

async function failed(handle: UpstreamHandle): Promise<Failed> {
  const state = await pollUntil(source, handle);
  assert.equal(state.state, "failed", JSON.stringify(state));
  return state as Failed;
}

/** Downloads an output URL from the fake (no key: fal's media hosts are public). */
async function download(url: string): Promise<{ type: string | null; bytes: Uint8Array }> {
  const res = await fetch(url);
  assert.equal(res.status, 200);
  return { type: res.headers.get("content-type"), bytes: new Uint8Array(await res.arrayBuffer()) };
}

describe("states", () => {
  test("queued with fal's position, then running, then succeeded", async () => {
    const slowQueue = await startFalFake({ apiKey: FAL_KEY, queueMs: 1000, runMs: 100 });
    const s = createFalSource({ name: "fal-main", baseUrl: slowQueue.url, apiKey: FAL_KEY });
    try {
      const first = await s.submitVideo(videoRequest());
      const second = await s.submitVideo(videoRequest());
      assert.deepEqual(await s.poll(first), { state: "queued", position: 0 });
      assert.deepEqual(await s.poll(second), { state: "queued", position: 1 });
      const running = await pollUntil(s, first, (st) => st.state !== "queued");
      assert.deepEqual(running, { state: "running", progress: null });
      const done = await pollUntil(s, first);
      assert.equal(done.state, "succeeded");
      // The status calls go to fal's status_url: the app id without the endpoint's sub-path.
      const statusCalls = slowQueue.requests.filter((r) => r.method === "GET" && r.path.includes("/status"));
      assert.ok(statusCalls.length >= 3);
      for (const r of statusCalls) {
        assert.match(r.path, /^\/fal-ai\/kling-video\/requests\/[0-9a-f-]{36}\/status\?logs=0$/);
        assert.equal(r.headers.authorization, "Key [redacted]");
      }
    } finally {
      await s.close();
      await slowQueue.close();
    }
  });

  test("a video: one url output (an MP4), duration null when fal does not report it", async () => {
    const handle = await source.submitVideo(videoRequest({ model: "vidD-3-fast", durationSec: 4, parameters: { aspect_ratio: "9:16" } }));
    const state = await succeeded(handle);
    assert.equal(state.outputs.length, 1);
    const [out] = state.outputs;
    assert.equal(out.kind, "url");
    assert.equal(out.kind === "url" ? out.contentType : null, "video/mp4");
    assert.equal(state.durationSec, null);
    assert.equal(state.megapixels, null);
    assert.equal(state.upstreamCostUsd, null);
    const file = await download(out.kind === "url" ? out.url : "");
    assert.equal(file.type, "video/mp4");
    assert.equal(new TextDecoder().decode(file.bytes.subarray(4, 8)), "ftyp");
    // The result was read at response_url.
    const result = fake.requests.find((r) => r.method === "GET" && /\/requests\/[0-9a-f-]{36}$/.test(r.path));
    assert.ok(result);
    assert.match(result.path, /^\/fal-ai\/veo3\.1\/requests\//);
  });

  test("images: every image of num_images, with content types and the first image's megapixels", async () => {
    const handle = await source.submitImage(imageRequest({ model: "imgB-edit-pro", n: 2, aspect: "16:9", imageUrls: ["https://images.example.com/a.png"] }));
    const state = await succeeded(handle);
    assert.equal(state.outputs.length, 2);
    for (const out of state.outputs) {
      assert.equal(out.kind, "url");
      if (out.kind !== "url") continue;
      assert.equal(out.contentType, "image/png");
      const file = await download(out.url);
      assert.deepEqual([...file.bytes.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10]);
    }
    // The fake makes 16:9 at about one megapixel (1328 x 752): what fal reports is passed on.
    assert.equal(state.megapixels, (1328 * 752) / 1_000_000);
  });

  test("FLUX.2 pro: the reported size gives the megapixels of the final charge", async () => {
    const handle = await source.submitImage(imageRequest({ model: "imgB-2-pro", width: 2048, height: 2048 }));
    const state = await succeeded(handle);
    assert.equal(state.megapixels, (2048 * 2048) / 1_000_000);
  });

  test("a vector model's output is SVG", async () => {
    const handle = await source.submitImage(imageRequest({ model: "imgA-v4-vector", output: "svg" }));
    const state = await succeeded(handle);
    const [out] = state.outputs;
    assert.equal(out.kind === "url" ? out.contentType : null, "image/svg+xml");
    const file = await download(out.kind === "url" ? out.url : "");
    assert.match(new TextDecoder().decode(file.bytes), /^<svg /);
  });

  test("a fanned-out job (Recraft, n = 2) succeeds with both images, in order", async () => {
    const handle = await source.submitImage(imageRequest({ model: "imgA-v4", n: 2 }));
    const state = await succeeded(handle);
    assert.equal(state.outputs.length, 2);
    assert.notEqual(state.outputs[0].kind === "url" && state.outputs[0].url, state.outputs[1].kind === "url" && state.outputs[1].url);
    assert.equal(fake.submits().length, 2);
  });
});

describe("failures", () => {
  test("moderation (422 content_policy_violation at the result): failed, content rejected, not retryable", async () => {
    const prompt = "something forbidden [fake:moderation]";
    const handle = await source.submitImage(imageRequest({ model: "imgB-1.1-ultra", prompt }));
    const state = await failed(handle);
    assert.equal(state.contentRejected, true);
    assert.equal(state.retryable, false);
    assert.match(state.message, /content_policy_violation/);
    assert.ok(!state.message.includes("something forbidden"), "fal's echo of the input is not copied");
  });

  test("fal's safety checker flagged the image (has_nsfw_concepts): content rejected", async () => {
    const handle = await source.submitImage(imageRequest({ model: "imgB-1.1-ultra", prompt: "x [fake:nsfw]" }));
    const state = await failed(handle);
    assert.equal(state.contentRejected, true);
    assert.equal(state.retryable, false);
  });

  test("COMPLETED with an error (runner_disconnected): failed, retryable, no result call", async () => {
    const handle = await source.submitVideo(videoRequest({ prompt: "x [fake:failed-completed]" }));
    const state = await failed(handle);
    assert.equal(state.retryable, true);
    assert.equal(state.contentRejected, false);
    assert.match(state.message, /Runner disconnected \(runner_disconnected\)/);
    assert.equal(fake.requests.filter((r) => /\/requests\/[0-9a-f-]{36}$/.test(r.path)).length, 0);
  });

  test("a status call answering 500 throws a retryable error: poll again, never resubmit", async () => {
    const handle = await source.submitVideo(videoRequest({ prompt: "x [fake:status-500]" }));
    const err = await falFailure(source.poll(handle));
    assert.equal(err.retryable, true);
    assert.equal(err.status, 500);
    assert.equal(err.errorType, "internal_error");
  });

  test("a result answering 502 from the ingress (no fal body) throws retryable: poll again", async () => {
    const handle = await source.submitVideo(videoRequest({ prompt: "x [fake:result-502]" }));
    await pollUntil(source, handle, (s) => s.state === "running");
    await new Promise((resolve) => setTimeout(resolve, 120));
    const err = await falFailure(source.poll(handle));
    assert.equal(err.retryable, true);
    assert.equal(err.status, 502);
    assert.ok(err.message.length < 400);
  });

  test("one failed part fails a fanned-out job", async () => {
    const handle = await source.submitImage(imageRequest({ model: "imgA-v4", n: 2, prompt: "x [fake:moderation]" }));
    const state = await failed(handle);
    assert.equal(state.contentRejected, true);
  });
});

describe("cancel", () => {
  test("cancel sends PUT cancel_url; the job then ends failed, not retryable", async () => {
    const handle = await source.submitVideo(videoRequest({ prompt: "long one [fake:slow]" }));
    await source.cancel(handle);
    const put = fake.requests.filter((r) => r.method === "PUT");
    assert.equal(put.length, 1);
    assert.equal(put[0].path, new URL(handle.urls.cancel_url).pathname);
    assert.equal(put[0].headers.authorization, "Key [redacted]");
    const state = await failed(handle);
    assert.equal(state.retryable, false);
    assert.match(state.message, /client_cancelled/);
  });

  test("cancelling a finished job is not an error", async () => {
    const handle = await source.submitVideo(videoRequest());
    await succeeded(handle);
    await source.cancel(handle);
    assert.equal(fake.requests.filter((r) => r.method === "PUT").length, 1);
  });

  test("cancel reaches every part of a fanned-out job", async () => {
    const handle = await source.submitImage(imageRequest({ model: "imgA-v4-pro", n: 3, prompt: "x [fake:slow]" }));
    await source.cancel(handle);
    assert.equal(fake.requests.filter((r) => r.method === "PUT").length, 3);
  });

  test("a part that fails to submit withdraws the parts already accepted, and the error is thrown", async () => {
    const prompt = "three of these [fake:429-after-first]";
    const err = await falFailure(source.submitImage(imageRequest({ model: "imgA-v4", n: 3, prompt })));
    assert.equal(err.retryable, true);
    assert.equal(err.status, 429);
    const posts = fake.submits();
    assert.equal(posts.length, 2, "the second submit failed; no third was tried");
    const put = fake.requests.filter((r) => r.method === "PUT");
    assert.equal(put.length, 1);
    assert.match(put[0].path, /^\/fal-ai\/recraft\/requests\/[0-9a-f-]{36}\/cancel$/);
  });
});

describe("resume (D28)", () => {
  test("a stored handle is polled by a fresh source to the end without a second submit", async () => {
    const handle = await source.submitVideo(videoRequest({ model: "vidB-2-pro" }));
    const stored = JSON.parse(JSON.stringify(handle)) as UpstreamHandle;
    await source.close();
    // Another runner, another process: a new source built from the same configuration.
    source = createFalSource({ name: "fal-main", baseUrl: fake.url, apiKey: FAL_KEY, timeoutMs: 3000 });
    const first = await source.poll(stored);
    assert.notEqual(first.state, "failed");
    const state = await succeeded(stored);
    assert.equal(state.outputs.length, 1);
    assert.equal(fake.submits().length, 1, "exactly one submit");
  });

  test("a handle of another source is refused", async () => {
    const handle = await source.submitVideo(videoRequest());
    const err = await falFailure(source.poll({ ...handle, source: "fal-other" }));
    assert.equal(err.retryable, false);
    assert.equal(err.kind, "handle");
  });

  test("a handle without its URLs is refused", async () => {
    const err = await falFailure(source.poll({ source: "fal-main", requestId: "x", urls: {} }));
    assert.equal(err.retryable, false);
    assert.equal(fake.requests.length, 0);
  });
});
