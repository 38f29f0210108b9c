/**
 * The exact submit request of every family fal serves, both variants (text-to-x, image-to-x), against
 * the loopback fake (fakes/fal.ts): method, path (`POST /{endpoint_id}`), the
 * `Authorization: Key` scheme, and the body's field names and values, including the D26 duration and
 * size rules, the D3 pass-through policy and the D25 `models` overrides.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startFalFake } from "../../../fakes/fal.ts";
import type { FalFake } from "../../../fakes/fal.ts";
import { createFalSource } from "../../../src/upstreams/fal/source.ts";
import type { FalSource } from "../../../src/upstreams/fal/source.ts";
import type { ImageRequest, VideoRequest } from "../../../src/upstreams/types.ts";
import { FAL_KEY, falFailure, imageRequest, videoRequest } from "./helpers.ts";

const FRAME = "https://images.example.com/frame.png";
const REF2 = "https://images.example.com/ref-2.png";

let fake: FalFake;
let source: FalSource;

before(async () => {
  // Inputs are validated at the submit here, so every mapping below is also checked against the
  // endpoint's input model (fakes/fal.ts): a wrong field name or value fails the submit with fal's 422.
  fake = await startFalFake({ apiKey: FAL_KEY, queueMs: 10_000, inputErrors: "submit" });
  source = createFalSource({ name: "fal-main", baseUrl: fake.url, apiKey: FAL_KEY, timeoutMs: 2000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

/** Submits and returns the one recorded request, after checking what every submit shares. */
async function submitted(req: { video: VideoRequest } | { image: ImageRequest }): Promise<{ path: string; body: unknown }> {
  const handle = "video" in req ? await source.submitVideo(req.video) : await source.submitImage(req.image);
  assert.equal(handle.source, "fal-main");
  assert.equal(fake.requests.length, 1, "exactly one request per submit");
  const [r] = fake.requests;
  assert.equal(r.method, "POST");
  assert.equal(r.headers.authorization, "Key [redacted]");
  assert.equal(r.headers["content-type"], "application/json");
  assert.equal(r.headers.accept, "application/json");
  return { path: r.path, body: r.body };
}

describe("vidA Kling", () => {
  test("2.5 pro text-to-video: duration as a string, parameters passed through", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidA-2.5-pro", durationSec: 5, parameters: { aspect_ratio: "9:16", cfg_scale: 0.7 } }) });
    assert.equal(r.path, "/fal-ai/kling-video/v2.5-turbo/pro/text-to-video");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "5", aspect_ratio: "9:16", cfg_scale: 0.7 });
  });

  test("2.5 pro image-to-video: image_url, 7 s asks for the 10 s clip", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidA-2.5-pro", durationSec: 7, imageUrl: FRAME }) });
    assert.equal(r.path, "/fal-ai/kling-video/v2.5-turbo/pro/image-to-video");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "10", image_url: FRAME });
  });

  test("v3 pro text-to-video without audio", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidA-3-pro", durationSec: 3 }) });
    assert.equal(r.path, "/fal-ai/kling-video/v3/pro/text-to-video");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "3", generate_audio: false });
  });

  test("v3 pro with audio, image-to-video: start_image_url", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidA-3-pro-audio", durationSec: 7, imageUrl: FRAME }) });
    assert.equal(r.path, "/fal-ai/kling-video/v3/pro/image-to-video");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "7", generate_audio: true, start_image_url: FRAME });
  });
});

describe("vidB Seedance", () => {
  test("2.0 text-to-video: audio on, 720p pinned", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidB-2-pro", durationSec: 2 }) });
    assert.equal(r.path, "/bytedance/seedance-2.0/text-to-video");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "4", generate_audio: true, resolution: "720p" });
  });

  test("2.0 fast image-to-video", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidB-2-fast", durationSec: 10, imageUrl: FRAME }) });
    assert.equal(r.path, "/bytedance/seedance-2.0/fast/image-to-video");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "10", generate_audio: true, resolution: "720p", image_url: FRAME });
  });

  test("a caller cannot raise the resolution or switch audio off through parameters", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidB-2-fast", parameters: { resolution: "1080p", generate_audio: false, seed: 9 } }) });
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "5", generate_audio: true, resolution: "720p", seed: 9 });
  });
});

describe("vidC Hailuo-02", () => {
  test("768p text-to-video (standard, no resolution field)", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidC-02-768p", durationSec: 6 }) });
    assert.equal(r.path, "/fal-ai/minimax/hailuo-02/standard/text-to-video");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "6" });
  });

  test("768p image-to-video", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidC-02-768p", durationSec: 10, imageUrl: FRAME }) });
    assert.equal(r.path, "/fal-ai/minimax/hailuo-02/standard/image-to-video");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "10", image_url: FRAME, resolution: "768P" });
  });

  test("512p image-to-video", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidC-02-512p", durationSec: 6, imageUrl: FRAME }) });
    assert.equal(r.path, "/fal-ai/minimax/hailuo-02/standard/image-to-video");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "6", image_url: FRAME, resolution: "512P" });
  });

  test("1080p (pro) takes no duration", async () => {
    const t = await submitted({ video: videoRequest({ model: "vidC-02-1080p", durationSec: 10 }) });
    assert.equal(t.path, "/fal-ai/minimax/hailuo-02/pro/text-to-video");
    assert.deepEqual(t.body, { prompt: "a red fox running" });
    fake.reset();
    const i = await submitted({ video: videoRequest({ model: "vidC-02-1080p", durationSec: 6, imageUrl: FRAME }) });
    assert.equal(i.path, "/fal-ai/minimax/hailuo-02/pro/image-to-video");
    assert.deepEqual(i.body, { prompt: "a red fox running", image_url: FRAME });
  });

  test("512p without an image is refused before any request", async () => {
    const err = await falFailure(source.submitVideo(videoRequest({ model: "vidC-02-512p", durationSec: 6 })));
    assert.equal(err.retryable, false);
    assert.equal(err.kind, "unsupported");
    assert.equal(fake.requests.length, 0);
  });
});

describe("vidD Veo 3.1 (D35: fal removed fal-ai/veo3)", () => {
  test("the OpenAI dialect's pixel size is not sent: the aspect ratio goes, the resolution is the model's", async () => {
    // POST /v1/videos with size 720x1280 stores {aspect_ratio: "9:16", size: "720x1280"}: no fal endpoint has `size`.
    const r = await submitted({ video: videoRequest({ model: "vidD-3-fast", durationSec: 4, parameters: { aspect_ratio: "9:16", size: "720x1280" } }) });
    assert.equal(r.path, "/fal-ai/veo3.1/fast");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "4s", resolution: "720p", generate_audio: false, aspect_ratio: "9:16" });
  });

  test("Veo 3.1 text-to-video: \"6s\" for 5 s, 1080p with audio", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidD-3", durationSec: 5, parameters: { aspect_ratio: "9:16" } }) });
    assert.equal(r.path, "/fal-ai/veo3.1");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "6s", resolution: "1080p", generate_audio: true, aspect_ratio: "9:16" });
  });

  test("Veo 3.1 fast image-to-video: 10 s asks for the longest clip, 8s; 720p silent", async () => {
    const r = await submitted({ video: videoRequest({ model: "vidD-3-fast", durationSec: 10, imageUrl: FRAME }) });
    assert.equal(r.path, "/fal-ai/veo3.1/fast/image-to-video");
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "8s", resolution: "720p", generate_audio: false, image_url: FRAME });
  });

  test("Veo 3.1 image-to-video and Veo 3.1 fast text-to-video", async () => {
    const i = await submitted({ video: videoRequest({ model: "vidD-3", durationSec: 1, imageUrl: FRAME }) });
    assert.equal(i.path, "/fal-ai/veo3.1/image-to-video");
    assert.deepEqual(i.body, { prompt: "a red fox running", duration: "4s", resolution: "1080p", generate_audio: true, image_url: FRAME });
    fake.reset();
    const t = await submitted({ video: videoRequest({ model: "vidD-3-fast", durationSec: 8 }) });
    assert.equal(t.path, "/fal-ai/veo3.1/fast");
    assert.deepEqual(t.body, { prompt: "a red fox running", duration: "8s", resolution: "720p", generate_audio: false });
  });
});

describe("imgA Recraft", () => {
  test("v4 text-to-image: an image_size preset per aspect", async () => {
    const r = await submitted({ image: imageRequest({ model: "imgA-v4", aspect: "16:9", width: 1344, height: 768 }) });
    assert.equal(r.path, "/fal-ai/recraft/v4/text-to-image");
    assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", image_size: "landscape_16_9" });
    for (const [aspect, preset] of [
      ["1:1", "square_hd"],
      ["9:16", "portrait_16_9"],
      ["4:3", "landscape_4_3"],
      ["3:4", "portrait_4_3"],
      ["21:9", "landscape_16_9"],
    ] as const) {
      fake.reset();
      const x = await submitted({ image: imageRequest({ model: "imgA-v4-pro", aspect }) });
      assert.equal(x.path, "/fal-ai/recraft/v4/pro/text-to-image");
      assert.deepEqual(x.body, { prompt: "a lighthouse at dusk", image_size: preset });
    }
  });

  test("vector models use text-to-vector", async () => {
    const v = await submitted({ image: imageRequest({ model: "imgA-v4-vector", output: "svg" }) });
    assert.equal(v.path, "/fal-ai/recraft/v4/text-to-vector");
    fake.reset();
    const p = await submitted({ image: imageRequest({ model: "imgA-v4-vector-pro", output: "svg" }) });
    assert.equal(p.path, "/fal-ai/recraft/v4/pro/text-to-vector");
    assert.deepEqual(p.body, { prompt: "a lighthouse at dusk", image_size: "square_hd" });
  });

  test("n = 3 on a one-image endpoint is three identical requests, one handle", async () => {
    const handle = await source.submitImage(imageRequest({ model: "imgA-v3", n: 3, aspect: "3:4" }));
    assert.equal(fake.submits().length, 3);
    for (const r of fake.submits()) {
      assert.equal(r.path, "/fal-ai/recraft/v3/text-to-image");
      assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", image_size: "portrait_4_3" });
    }
    assert.equal(handle.requestId.split(",").length, 3);
    assert.deepEqual(Object.keys(handle.urls).sort(), [
      "cancel_url",
      "cancel_url.1",
      "cancel_url.2",
      "response_url",
      "response_url.1",
      "response_url.2",
      "status_url",
      "status_url.1",
      "status_url.2",
    ]);
  });

  test("imgA-v3 image-to-image (when an image reaches it) takes the image and no size", async () => {
    const r = await submitted({ image: imageRequest({ model: "imgA-v3", imageUrls: [FRAME] }) });
    assert.equal(r.path, "/fal-ai/recraft/v3/image-to-image");
    assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", image_url: FRAME });
  });
});

describe("imgB FLUX", () => {
  test("FLUX.2 pro text-to-image: image_size in pixels on the 16 px grid, PNG", async () => {
    const r = await submitted({ image: imageRequest({ model: "imgB-2-pro", aspect: "1:1", width: 1450, height: 1450 }) });
    assert.equal(r.path, "/fal-ai/flux-2-pro");
    assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", image_size: { width: 1456, height: 1456 }, output_format: "png" });
  });

  test("FLUX.2 pro with references: the edit endpoint with every image_urls entry", async () => {
    const r = await submitted({ image: imageRequest({ model: "imgB-2-pro", aspect: "16:9", width: 1344, height: 768, imageUrls: [FRAME, REF2] }) });
    assert.equal(r.path, "/fal-ai/flux-2-pro/edit");
    assert.deepEqual(r.body, {
      prompt: "a lighthouse at dusk",
      image_size: { width: 1344, height: 768 },
      output_format: "png",
      image_urls: [FRAME, REF2],
    });
  });

  test("Kontext pro edit: image_url, aspect_ratio, num_images", async () => {
    const r = await submitted({ image: imageRequest({ model: "imgB-edit-pro", n: 2, aspect: "21:9", imageUrls: [FRAME] }) });
    assert.equal(r.path, "/fal-ai/flux-pro/kontext");
    assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", aspect_ratio: "21:9", num_images: 2, output_format: "png", image_url: FRAME });
  });

  test("Kontext pro without an image: its text-to-image endpoint", async () => {
    const r = await submitted({ image: imageRequest({ model: "imgB-edit-pro", aspect: "4:3" }) });
    assert.equal(r.path, "/fal-ai/flux-pro/kontext/text-to-image");
    assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", aspect_ratio: "4:3", num_images: 1, output_format: "png" });
  });

  test("1.1 ultra: num_images in one request; it has no image variant, so an image is ignored", async () => {
    const r = await submitted({ image: imageRequest({ model: "imgB-1.1-ultra", n: 4, aspect: "9:16", imageUrls: [FRAME] }) });
    assert.equal(r.path, "/fal-ai/flux-pro/v1.1-ultra");
    assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", aspect_ratio: "9:16", num_images: 4, output_format: "png" });
  });
});

describe("pass-through parameters (D3)", () => {
  test("the gateway's fields win, sync_mode is dropped, everything else is forwarded", async () => {
    const r = await submitted({
      image: imageRequest({
        model: "imgB-1.1-ultra",
        n: 1,
        aspect: "1:1",
        parameters: {
          prompt: "something else",
          num_images: 4,
          aspect_ratio: "21:9",
          output_format: "jpeg",
          sync_mode: true,
          seed: 42,
          raw: true,
          safety_tolerance: "3",
        },
      }),
    });
    assert.deepEqual(r.body, {
      prompt: "a lighthouse at dusk",
      num_images: 1,
      aspect_ratio: "1:1",
      output_format: "png",
      seed: 42,
      raw: true,
      safety_tolerance: "3",
    });
  });

  test("a video's duration and image cannot be replaced", async () => {
    const r = await submitted({
      video: videoRequest({ model: "vidA-2.5-pro", durationSec: 5, imageUrl: FRAME, parameters: { duration: "10", image_url: "https://x.example/y.png", negative_prompt: "blur" } }),
    });
    assert.deepEqual(r.body, { prompt: "a red fox running", duration: "5", image_url: FRAME, negative_prompt: "blur" });
  });
});

describe("models overrides (D25)", () => {
  test("\"<model>\" replaces the text-to-x endpoint and \"<model>/image\" the image-to-x one", async () => {
    const custom = createFalSource({
      name: "fal-custom",
      baseUrl: fake.url,
      apiKey: FAL_KEY,
      models: { "vidA-2.5-pro": "fal-ai/kling-video/v3/pro/text-to-video", "imgB-1.1-ultra/image": "fal-ai/flux-pro/kontext" },
    });
    try {
      await custom.submitVideo(videoRequest({ model: "vidA-2.5-pro" }));
      // No "/image" override for vidA-2.5-pro: the default image-to-video endpoint stays.
      await custom.submitVideo(videoRequest({ model: "vidA-2.5-pro", imageUrl: FRAME }));
      // imgB-1.1-ultra has no default image variant; the override adds one.
      await custom.submitImage(imageRequest({ model: "imgB-1.1-ultra", imageUrls: [FRAME] }));
      await custom.submitImage(imageRequest({ model: "imgB-1.1-ultra" }));
      assert.deepEqual(
        fake.submits().map((r) => r.path),
        [
          "/fal-ai/kling-video/v3/pro/text-to-video",
          "/fal-ai/kling-video/v2.5-turbo/pro/image-to-video",
          "/fal-ai/flux-pro/kontext",
          "/fal-ai/flux-pro/v1.1-ultra",
        ],
      );
      assert.equal((fake.submits()[2].body as Record<string, unknown>).image_url, FRAME);
    } finally {
      await custom.close();
    }
  });

  test("bad overrides stop the construction", () => {
    assert.throws(() => createFalSource({ name: "x", apiKey: FAL_KEY, models: { "nope-model": "fal-ai/x/y" } }), RangeError);
    assert.throws(() => createFalSource({ name: "x", apiKey: FAL_KEY, models: { "vidD-3": "../admin" } }), RangeError);
    assert.throws(() => createFalSource({ name: "x", apiKey: FAL_KEY, models: { "vidD-3/image": "fal-ai/veo3?x=1" } }), RangeError);
  });

  test("a model fal does not serve is refused without a request", async () => {
    const err = await falFailure(source.submitImage(imageRequest({ model: "imgC-v3" })));
    assert.equal(err.retryable, false);
    assert.equal(fake.requests.length, 0);
  });
});
