/**
 * The exact generation requests of the OpenAI images source against the loopback fake
 * (fakes/openai-images.ts): method, path, the `Authorization: Bearer` scheme, and
 * the body's fields and values per model (`gpt-image-2`, size mapping, quality, no `response_format`), the
 * D3 pass-through policy and the D25 `models` overrides (a DALL-E id refused). The strict fake refuses any
 * field OpenAI would, so each accepted request is also a check that the adapter sends only OpenAI's fields.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startOpenAIImagesFake } from "../../../fakes/openai-images.ts";
import type { OpenAIImagesFake } from "../../../fakes/openai-images.ts";
import { createOpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import type { OpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import { ASPECT_ORIENTATION, GATEWAY_FIELDS, OPENAI_IMAGE_SIZES } from "../../../src/upstreams/openai-compatible/images.ts";
import type { AspectRatio, ImageRequest } from "../../../src/upstreams/types.ts";
import { IMG_C_Q1_REQUEST, IMG_C_V3_REQUEST } from "./fixtures.ts";
import { imageRequest, OPENAI_KEY, upstreamFailure } from "./helpers.ts";

let fake: OpenAIImagesFake;
let source: OpenAIImagesSource;

before(async () => {
  fake = await startOpenAIImagesFake({ apiKey: OPENAI_KEY, latencyMs: 0 });
  source = createOpenAIImagesSource({ name: "openai-main", baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY, timeoutMs: 30_000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

/** Submits, checks what every generation request shares, and returns the recorded bodies. */
async function sent(req: ImageRequest): Promise<unknown[]> {
  const handle = await source.submitImage(req);
  assert.equal(handle.source, "openai-main");
  assert.deepEqual(handle.urls, {});
  for (const r of fake.requests) {
    assert.equal(r.method, "POST");
    assert.equal(r.path, "/v1/images/generations");
    // The fake accepts only OPENAI_KEY: the answer proves the key went out; the record hides it.
    assert.equal(r.headers.authorization, "Bearer [redacted]");
    assert.equal(r.headers["content-type"], "application/json");
  }
  const state = await source.poll(handle);
  assert.equal(state.state, "succeeded");
  return fake.requests.map((r) => r.body);
}

describe("imgC-v3 (gpt-image-2, high)", () => {
  test("the body of the SDK's ImageGenerateParams: gpt-image-2, high, png, landscape 1536x1024, no response_format", async () => {
    const bodies = await sent(imageRequest({ model: "imgC-v3", aspect: "16:9", width: 1344, height: 768 }));
    assert.deepEqual(bodies, [IMG_C_V3_REQUEST]);
    assert.ok(!Object.hasOwn(bodies[0] as object, "response_format"));
  });

  test("n > 1 is one request for n images", async () => {
    const bodies = await sent(imageRequest({ model: "imgC-v3", n: 3, aspect: "1:1" }));
    assert.deepEqual(bodies, [{ ...IMG_C_V3_REQUEST, n: 3, size: "1024x1024" }]);
  });

  test("the request's quality tier does not change imgC-v3's quality", async () => {
    const [body] = await sent(imageRequest({ model: "imgC-v3", quality: "low" }));
    assert.equal((body as { quality: string }).quality, "high");
  });
});

describe("imgC-q1 (gpt-image-2, the tier)", () => {
  test("n in one request, the quality tier, output_format png, no response_format", async () => {
    const bodies = await sent(imageRequest({ model: "imgC-q1", n: 3, quality: "low", aspect: "9:16", width: 768, height: 1344 }));
    assert.deepEqual(bodies, [IMG_C_Q1_REQUEST]);
    assert.ok(!Object.hasOwn(bodies[0] as object, "response_format"));
  });

  test("each tier is sent as it is; no tier means medium (D14)", async () => {
    for (const quality of ["low", "medium", "high", null] as const) {
      fake.reset();
      const [body] = await sent(imageRequest({ model: "imgC-q1", quality }));
      assert.equal((body as { quality: string }).quality, quality ?? "medium");
    }
  });
});

describe("sizes", () => {
  const expected: Record<AspectRatio, string> = {
    "1:1": "1024x1024",
    "16:9": "1536x1024",
    "4:3": "1536x1024",
    "21:9": "1536x1024",
    "9:16": "1024x1536",
    "3:4": "1024x1536",
  };
  for (const [aspect, size] of Object.entries(expected) as [AspectRatio, string][]) {
    test(`${aspect} -> ${size} (both models)`, async () => {
      const [v3] = await sent(imageRequest({ model: "imgC-v3", aspect }));
      fake.reset();
      const [q1] = await sent(imageRequest({ model: "imgC-q1", aspect }));
      assert.equal((v3 as { size: string }).size, size);
      assert.equal((q1 as { size: string }).size, size);
    });
  }

  test("each mapping is the size nearest to the aspect ratio (log scale)", () => {
    const ratio = (s: string) => {
      const [w, h] = s.split(/[x:]/).map(Number);
      return Math.log(w / h);
    };
    for (const [aspect, orientation] of Object.entries(ASPECT_ORIENTATION)) {
      const chosen = Math.abs(ratio(aspect) - ratio(OPENAI_IMAGE_SIZES[orientation]));
      for (const other of Object.values(OPENAI_IMAGE_SIZES)) assert.ok(chosen <= Math.abs(ratio(aspect) - ratio(other)), `${aspect} -> ${OPENAI_IMAGE_SIZES[orientation]}, not ${other}`);
    }
  });
});

describe("pass-through parameters (D3)", () => {
  test("other fields are forwarded unchanged; the gateway's fields win; DALL-E's response_format and style are dropped", async () => {
    const parameters = { user: "end-user-7", safety_identifier: "hash-7", n: 4, size: "1024x1792", quality: "standard", response_format: "url", style: "natural", model: "dall-e-2", prompt: "other" };
    const [body] = await sent(imageRequest({ model: "imgC-v3", parameters }));
    assert.deepEqual(body, { ...IMG_C_V3_REQUEST, size: "1024x1024", user: "end-user-7", safety_identifier: "hash-7" });
  });

  test("response_format, stream, partial_images, output_compression and other formats are dropped; background and moderation pass", async () => {
    const parameters = {
      background: "transparent",
      moderation: "low",
      response_format: "b64_json",
      stream: true,
      partial_images: 2,
      output_format: "webp",
      output_compression: 50,
    };
    const [body] = await sent(imageRequest({ model: "imgC-q1", quality: "high", parameters }));
    assert.deepEqual(body, {
      model: "gpt-image-2",
      prompt: "a lighthouse at dusk",
      n: 1,
      size: "1024x1024",
      quality: "high",
      output_format: "png",
      background: "transparent",
      moderation: "low",
    });
    for (const field of GATEWAY_FIELDS) assert.ok(Object.hasOwn(body as object, field) === ["model", "prompt", "n", "size", "quality", "output_format"].includes(field), field);
  });
});

describe("models overrides (D25)", () => {
  test("an override replaces the upstream id with the same body; other keys are ignored", async () => {
    const s = createOpenAIImagesSource({
      name: "openai-next",
      baseUrl: `${fake.url}/v1`,
      apiKey: OPENAI_KEY,
      models: { "imgC-q1": "gpt-image-2.5-flare", "transcribe-1": "whisper-1", "imgC-v3/image": "ignored" },
    });
    try {
      await s.submitImage(imageRequest({ model: "imgC-q1", n: 2 }));
      await s.submitImage(imageRequest({ model: "imgC-v3", n: 2, aspect: "16:9" }));
      assert.deepEqual(
        fake.requests.map((r) => r.body),
        [
          { ...IMG_C_Q1_REQUEST, model: "gpt-image-2.5-flare", n: 2, size: "1024x1024", quality: "medium" },
          { ...IMG_C_V3_REQUEST, n: 2 },
        ],
      );
    } finally {
      await s.close();
    }
  });

  test("a DALL-E id is refused when the source is built: OpenAI retired DALL-E, and its request is not the GPT image one", async () => {
    for (const id of ["dall-e-3", "dall-e-2"]) {
      assert.throws(
        () => createOpenAIImagesSource({ name: "x", apiKey: OPENAI_KEY, models: { "imgC-v3": id } }),
        (err: unknown) => err instanceof RangeError && err.message.includes(id) && /retired/.test(err.message),
      );
    }
    // The same key of another capability's map is not the images source's business.
    await createOpenAIImagesSource({ name: "x", apiKey: OPENAI_KEY, models: { "host1-transcribe-1": "dall-e-3" } }).close();
  });

  test("a bad override, key or configuration stops the construction", () => {
    const ok = { name: "x", apiKey: OPENAI_KEY };
    assert.throws(() => createOpenAIImagesSource({ ...ok, models: { "imgC-v3": "not an id" } }), RangeError);
    assert.throws(() => createOpenAIImagesSource({ ...ok, apiKey: " " }), RangeError);
    assert.throws(() => createOpenAIImagesSource({ ...ok, name: "" }), RangeError);
    assert.throws(() => createOpenAIImagesSource({ ...ok, baseUrl: "ftp://x.example" }), RangeError);
    assert.throws(() => createOpenAIImagesSource({ ...ok, timeoutMs: 0 }), RangeError);
    assert.throws(() => createOpenAIImagesSource({ ...ok, trustedHosts: ["http://x.example/path"] }), RangeError);
    assert.throws(() => createOpenAIImagesSource({ ...ok, resultTtlMs: -1 }), RangeError);
  });

  test("a model OpenAI does not serve, and any video, are refused without a request", async () => {
    const err = await upstreamFailure(source.submitImage(imageRequest({ model: "imgB-2-pro" })));
    assert.equal(err.retryable, false);
    assert.match(err.message, /imgB-2-pro is not served by OpenAI images/);
    const video = await upstreamFailure(
      source.submitVideo({ model: "vidA-2.5-pro", prompt: "x", durationSec: 5, imageUrl: null, parameters: {}, simulate: null }),
    );
    assert.equal(video.retryable, false);
    assert.equal(fake.requests.length, 0);
  });
});
