/**
 * The MiniMax vidC job source on the fake: submit (exact request, D26 lengths, resolutions, first
 * frame, overrides), poll through MiniMax's statuses to a download URL on another host, the MP4 behind
 * it, failed tasks (retryable, content), what is unsupported, and a cancel that sends nothing.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startMiniMaxFake } from "../../../fakes/minimax.ts";
import type { MiniMaxFake } from "../../../fakes/minimax.ts";
import { createMiniMaxVideoSource } from "../../../src/upstreams/minimax/video-source.ts";
import { mp4DurationSec } from "../../../src/upstreams/media-probe.ts";
import type { UpstreamJobState, VisualJobSourceAdapter } from "../../../src/upstreams/types.ts";
import { imageRequest } from "../fal/helpers.ts";
import { MM_KEY, mmFailure, pollUntil, seenMessages, startReplay, videoRequest } from "./helpers.ts";

let fake: MiniMaxFake;
let source: VisualJobSourceAdapter;

before(async () => {
  fake = await startMiniMaxFake({ apiKey: MM_KEY, videoRunMs: 400 });
  source = createMiniMaxVideoSource({ name: "mm-video", baseUrl: fake.url, apiKey: MM_KEY });
});

after(async () => {
  await source.close();
  await fake.close();
  for (const message of seenMessages) assert.ok(!message.includes(MM_KEY));
});

beforeEach(() => fake.reset());

describe("lifecycle", () => {
  test("submit, queued, running, succeeded with a download URL; the MP4 lasts the length asked (7 -> 10 s)", async () => {
    const handle = await source.submitVideo(videoRequest({ durationSec: 7 }));
    assert.equal(handle.source, "mm-video");
    assert.match(handle.requestId, /^\d+$/);
    assert.deepEqual(handle.urls, {});
    assert.deepEqual(fake.submits()[0].body, { model: "MiniMax-Hailuo-02", prompt: "a red fox running through snow", duration: 10, resolution: "768P" });
    assert.equal(fake.submits()[0].path, "/v1/video_generation");

    const states: UpstreamJobState["state"][] = [];
    const final = await pollUntil(source, handle, (s) => {
      states.push(s.state);
      return s.state === "succeeded" || s.state === "failed";
    });
    // Which of queued and running a poll sees depends on timing; each mapping is pinned by the replay test below.
    assert.ok(states.length >= 2 && states.slice(0, -1).every((s) => s === "queued" || s === "running"), states.join(","));
    assert.equal(final.state, "succeeded");
    if (final.state !== "succeeded") return;
    assert.equal(final.durationSec, null);
    assert.equal(final.megapixels, null);
    assert.equal(final.upstreamCostUsd, null);
    assert.equal(final.outputs.length, 1);
    const out = final.outputs[0];
    assert.ok(out.kind === "url");
    if (out.kind !== "url") return;
    assert.equal(out.contentType, "video/mp4");
    assert.match(out.url, /\/download\/\d+\/output\.mp4\?Expires=/);
    assert.equal(source.isDirectDownloadHost(out.url), false, "the CDN is another host: the SSRF-safe fetch takes it");

    const paths = fake.requests.map((r) => r.path.replace(/=\d+/, "=N"));
    assert.ok(paths.includes("/v1/query/video_generation?task_id=N"));
    assert.ok(paths.includes("/v1/files/retrieve?file_id=N"));
    assert.ok(fake.requests.filter((r) => r.method === "GET").every((r) => r.headers.authorization === "Bearer [redacted]"));

    const res = await fetch(out.url.replace("localhost", "127.0.0.1"));
    assert.equal(res.status, 200);
    const mp4 = new Uint8Array(await res.arrayBuffer());
    assert.equal(Buffer.from(mp4.subarray(4, 8)).toString("latin1"), "ftyp");
    assert.ok(Math.abs((mp4DurationSec(mp4) ?? 0) - 10) < 0.1);
  });

  test("D26 lengths: the shortest offered at least as long, else the longest; 1080P makes 6 s only", async () => {
    const cases = [
      { model: "vidC-02-768p", asked: 3, sent: 6 },
      { model: "vidC-02-768p", asked: 6, sent: 6 },
      { model: "vidC-02-768p", asked: 10, sent: 10 },
      { model: "vidC-02-1080p", asked: 7, sent: 6 },
      { model: "vidC-02-512p", asked: 9, sent: 10 },
    ];
    for (const c of cases) {
      await source.submitVideo(videoRequest({ model: c.model, durationSec: c.asked, imageUrl: "https://images.example/first.png" }));
      assert.equal((fake.submits().at(-1)?.body as Record<string, unknown>).duration, c.sent, `${c.model} ${c.asked}`);
    }
  });

  test("resolution per model; the first frame as first_frame_image; a models override", async () => {
    const over = createMiniMaxVideoSource({ name: "mm-video", baseUrl: fake.url, apiKey: MM_KEY, models: { "vidC-02-1080p": "MiniMax-Hailuo-2.3" } });
    try {
      await over.submitVideo(videoRequest({ model: "vidC-02-512p", imageUrl: "https://images.example/a.png" }));
      await over.submitVideo(videoRequest({ model: "vidC-02-1080p" }));
    } finally {
      await over.close();
    }
    const [a, b] = fake.submits().map((r) => r.body);
    assert.deepEqual(a, { model: "MiniMax-Hailuo-02", prompt: "a red fox running through snow", duration: 6, resolution: "512P", first_frame_image: "https://images.example/a.png" });
    assert.deepEqual(b, { model: "MiniMax-Hailuo-2.3", prompt: "a red fox running through snow", duration: 6, resolution: "1080P" });
  });

  test("each MiniMax status maps to its state (Preparing, Queueing -> queued; Processing -> running; unknown -> retryable error)", async () => {
    for (const [status, expected] of [
      ["Preparing", { state: "queued", position: null }],
      ["Queueing", { state: "queued", position: null }],
      ["Processing", { state: "running", progress: null }],
    ] as const) {
      const replay = await startReplay({ "GET /v1/query/video_generation": { task_id: "7", status, file_id: "", base_resp: { status_code: 0, status_msg: "success" } } });
      const s = createMiniMaxVideoSource({ name: "mm-r", baseUrl: replay.url, apiKey: MM_KEY });
      try {
        assert.deepEqual(await s.poll({ source: "mm-r", requestId: "7", urls: {} }), expected);
      } finally {
        await s.close();
        await replay.close();
      }
    }
    const replay = await startReplay({ "GET /v1/query/video_generation": { task_id: "7", status: "Unknown", base_resp: { status_code: 0, status_msg: "success" } } });
    const s = createMiniMaxVideoSource({ name: "mm-r", baseUrl: replay.url, apiKey: MM_KEY });
    try {
      const err = await mmFailure(s.poll({ source: "mm-r", requestId: "7", urls: {} }));
      assert.equal(err.kind, "malformed");
      assert.equal(err.retryable, true);
    } finally {
      await s.close();
      await replay.close();
    }
  });

  test("cancel sends nothing and resolves", async () => {
    const handle = await source.submitVideo(videoRequest());
    fake.reset();
    await source.cancel(handle);
    assert.equal(fake.requests.length, 0);
  });
});

describe("what MiniMax does not serve", () => {
  test("512P without a first frame, another family's model, images: unsupported, nothing sent", async () => {
    for (const p of [
      source.submitVideo(videoRequest({ model: "vidC-02-512p" })),
      source.submitVideo(videoRequest({ model: "vidA-2.5-pro" })),
      source.submitImage(imageRequest()),
    ]) {
      const err = await mmFailure(p);
      assert.equal(err.unsupported, true);
      assert.equal(err.retryable, false);
    }
    assert.equal(fake.requests.length, 0);
  });

  test("a handle of another source is refused without a request", async () => {
    const err = await mmFailure(source.poll({ source: "other", requestId: "1", urls: {} }));
    assert.equal(err.kind, "handle");
    assert.equal(fake.requests.length, 0);
  });
});

describe("failures", () => {
  test("a task that fails at MiniMax: failed, retryable (the next source may serve it)", async () => {
    const state = await pollUntil(source, await source.submitVideo(videoRequest({ prompt: "x [fake:video-fail]" })));
    assert.equal(state.state, "failed");
    if (state.state === "failed") {
      assert.equal(state.retryable, true);
      assert.equal(state.contentRejected, false);
      assert.match(state.message, /^mm-video: the task failed at MiniMax/);
    }
  });

  test("an output refused as sensitive: failed, contentRejected", async () => {
    const state = await pollUntil(source, await source.submitVideo(videoRequest({ prompt: "x [fake:video-sensitive]" })));
    assert.equal(state.state, "failed");
    if (state.state === "failed") {
      assert.equal(state.contentRejected, true);
      assert.equal(state.retryable, false);
    }
  });

  test("submit refusals throw: content (1026), parameters (2013), rate limit (1002) retryable", async () => {
    const content = await mmFailure(source.submitVideo(videoRequest({ prompt: "x [fake:1026]" })));
    assert.equal(content.contentRejected, true);
    const params = await mmFailure(source.submitVideo(videoRequest({ prompt: "x [fake:2013]" })));
    assert.equal(params.retryable, false);
    const busy = await mmFailure(source.submitVideo(videoRequest({ prompt: "x [fake:1002]" })));
    assert.equal(busy.retryable, true);
  });

  test("polling an unknown task: the query's 2013 throws, not retryable", async () => {
    const err = await mmFailure(source.poll({ source: "mm-video", requestId: "123", urls: {} }));
    assert.equal(err.code, 2013);
    assert.equal(err.retryable, false);
  });
});
