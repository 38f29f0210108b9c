/**
 * The exact submit request of every imgB model on BFL, against the loopback fake
 * (fakes/bfl.ts): method, path (`POST /v1/{endpoint}`), the `x-key` header, and the body's
 * field names and values, including sizes on the 16 px grid, aspect ratios, reference images, the D3
 * pass-through policy, n > 1 fan-out and the D25 `models` overrides. Field names follow BFL's API
 * reference pages for FLUX.2 [pro], Kontext [pro] and FLUX 1.1 [pro] Ultra (see models.ts).
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startBflFake } from "../../../fakes/bfl.ts";
import type { BflFake } from "../../../fakes/bfl.ts";
import { createBflSource } from "../../../src/upstreams/bfl/source.ts";
import type { BflSource } from "../../../src/upstreams/bfl/source.ts";
import type { ImageRequest } from "../../../src/upstreams/types.ts";
import { BFL_KEY, bflFailure, bflImage } from "./helpers.ts";

const REF = (i: number): string => `https://images.example.com/ref-${i}.png`;

let fake: BflFake;
let source: BflSource;

before(async () => {
  fake = await startBflFake({ apiKey: BFL_KEY, pendingMs: 60_000 });
  source = createBflSource({ name: "bfl-main", baseUrl: fake.url, apiKey: BFL_KEY, timeoutMs: 2000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

/** Submits and returns the one recorded request, after checking what every submit shares. */
async function submitted(req: ImageRequest, s: BflSource = source): Promise<{ path: string; body: unknown }> {
  const handle = await s.submitImage(req);
  assert.equal(handle.source, s.name);
  assert.equal(fake.requests.length, 1, "exactly one request per image");
  const [r] = fake.requests;
  assert.equal(r.method, "POST");
  assert.equal(r.headers["x-key"], "[redacted]", "the key goes in x-key");
  assert.equal(r.headers.authorization, undefined);
  assert.equal(r.headers["content-type"], "application/json");
  assert.equal(r.headers.accept, "application/json");
  return { path: r.path, body: r.body };
}

describe("imgB-2-pro: FLUX.2 [pro]", () => {
  test("text-to-image: width and height as requested, PNG", async () => {
    const r = await submitted(bflImage({ width: 1024, height: 768 }));
    assert.equal(r.path, "/v1/flux-2-pro");
    assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", width: 1024, height: 768, output_format: "png" });
  });

  test("sides go to the nearest multiple of 16 within 64..2048", async () => {
    const r = await submitted(bflImage({ width: 1000, height: 70 }));
    assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", width: 1008, height: 64, output_format: "png" });
    fake.reset();
    const big = await submitted(bflImage({ width: 2048, height: 2047 }));
    assert.deepEqual(big.body, { prompt: "a lighthouse at dusk", width: 2048, height: 2048, output_format: "png" });
  });

  test("reference images: input_image, input_image_2, ... as the URLs the request carries", async () => {
    const r = await submitted(bflImage({ imageUrls: [REF(1), REF(2), REF(3)] }));
    assert.equal(r.path, "/v1/flux-2-pro");
    assert.deepEqual(r.body, {
      prompt: "a lighthouse at dusk",
      width: 1024,
      height: 1024,
      output_format: "png",
      input_image: REF(1),
      input_image_2: REF(2),
      input_image_3: REF(3),
    });
  });

  test("eight references fill input_image_8; a ninth is refused before any request (not retryable)", async () => {
    const eight = Array.from({ length: 8 }, (_, i) => REF(i + 1));
    const r = await submitted(bflImage({ imageUrls: eight }));
    const body = r.body as Record<string, unknown>;
    assert.equal(body.input_image, REF(1));
    assert.equal(body.input_image_8, REF(8));
    fake.reset();
    const err = await bflFailure(source.submitImage(bflImage({ imageUrls: [...eight, REF(9)] })));
    assert.equal(err.kind, "unsupported");
    assert.equal(err.retryable, false);
    assert.match(err.message, /at most 8 reference images/);
    assert.equal(fake.requests.length, 0);
  });
});

describe("imgB-edit-pro: FLUX.1 Kontext [pro]", () => {
  test("the request's aspect ratio and its image as input_image", async () => {
    const r = await submitted(bflImage({ model: "imgB-edit-pro", aspect: "16:9", width: 1344, height: 768, imageUrls: [REF(1)] }));
    assert.equal(r.path, "/v1/flux-kontext-pro");
    assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", aspect_ratio: "16:9", output_format: "png", input_image: REF(1) });
  });
});

describe("imgB-1.1-ultra: FLUX 1.1 [pro] Ultra", () => {
  test("aspect_ratio, no pixel size, no reference images", async () => {
    const r = await submitted(bflImage({ model: "imgB-1.1-ultra", aspect: "21:9", width: 1536, height: 640 }));
    assert.equal(r.path, "/v1/flux-pro-1.1-ultra");
    assert.deepEqual(r.body, { prompt: "a lighthouse at dusk", aspect_ratio: "21:9", output_format: "png" });
  });

  test("n = 3 is three identical tasks (BFL makes one image per task), one handle", async () => {
    const handle = await source.submitImage(bflImage({ model: "imgB-1.1-ultra", n: 3, aspect: "9:16" }));
    const posts = fake.submits();
    assert.equal(posts.length, 3);
    for (const p of posts) {
      assert.equal(p.path, "/v1/flux-pro-1.1-ultra");
      assert.deepEqual(p.body, { prompt: "a lighthouse at dusk", aspect_ratio: "9:16", output_format: "png" });
    }
    assert.deepEqual(Object.keys(handle.urls), ["polling_url", "polling_url.1", "polling_url.2"]);
    assert.equal(handle.requestId.split(",").length, 3);
  });
});

describe("pass-through parameters (D3)", () => {
  test("seed, safety_tolerance and other fields are forwarded; the gateway's fields win", async () => {
    const parameters = { seed: 42, safety_tolerance: 5, prompt_upsampling: true, prompt: "overridden", width: 64, output_format: "jpeg" };
    const r = await submitted(bflImage({ parameters }));
    assert.deepEqual(r.body, {
      seed: 42,
      safety_tolerance: 5,
      prompt_upsampling: true,
      prompt: "a lighthouse at dusk",
      width: 1024,
      height: 1024,
      output_format: "png",
    });
  });

  test("sizes, references and webhooks cannot be smuggled in, even where the gateway sets none", async () => {
    const parameters = {
      raw: true,
      width: 4096,
      height: 4096,
      input_image: REF(7),
      input_image_5: REF(5),
      image_prompt: "aGVsbG8=",
      webhook_url: "https://hooks.example.com/x",
      webhook_secret: "s",
    };
    const r = await submitted(bflImage({ model: "imgB-1.1-ultra", aspect: "1:1", parameters }));
    assert.deepEqual(r.body, { raw: true, prompt: "a lighthouse at dusk", aspect_ratio: "1:1", output_format: "png" });
  });
});

describe("models overrides (D25)", () => {
  test('"<model>" replaces the endpoint; "<model>/image" replaces it for requests with references', async () => {
    const s = createBflSource({
      name: "bfl-alt",
      baseUrl: fake.url,
      apiKey: BFL_KEY,
      models: { "imgB-2-pro": "flux-2-max", "imgB-edit-pro/image": "flux-kontext-max" },
    });
    try {
      assert.equal((await submitted(bflImage(), s)).path, "/v1/flux-2-max");
      fake.reset();
      assert.equal((await submitted(bflImage({ imageUrls: [REF(1)] }), s)).path, "/v1/flux-2-max", "the image key defaults to the plain one");
      fake.reset();
      assert.equal((await submitted(bflImage({ model: "imgB-edit-pro", imageUrls: [REF(1)] }), s)).path, "/v1/flux-kontext-max");
    } finally {
      await s.close();
    }
  });

  test("bad overrides stop the construction", () => {
    const bad: Record<string, string>[] = [{ "imgA-v4": "flux-2-pro" }, { "imgB-2-pro": "../flux" }, { "imgB-2-pro": "a b" }, { "imgB-2-pro/image": "" }];
    for (const models of bad) {
      assert.throws(() => createBflSource({ name: "x", apiKey: BFL_KEY, models }), RangeError, JSON.stringify(models));
    }
  });

  test("a model BFL does not serve, or a video, is refused without a request", async () => {
    const err = await bflFailure(source.submitImage(bflImage({ model: "imgA-v4" })));
    assert.equal(err.kind, "unsupported");
    assert.equal(err.retryable, false);
    const video = await bflFailure(source.submitVideo({ model: "vidA-2.5-pro", prompt: "x", durationSec: 5, imageUrl: null, parameters: {}, simulate: null }));
    assert.equal(video.retryable, false);
    assert.equal(fake.requests.length, 0);
  });
});
