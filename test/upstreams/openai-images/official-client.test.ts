/**
 * OpenAI's own Node client (the `openai` package, a development dependency) pointed at the loopback fake:
 * when the vendor's client accepts the fake's answers and maps its errors to its own error classes, the
 * fake speaks OpenAI's images protocol (upstreams.md, "Testing without the internet").
 */
import { after, before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { AuthenticationError, BadRequestError, NotFoundError, RateLimitError } from "openai";
import { startOpenAIImagesFake } from "../../../fakes/openai-images.ts";
import type { OpenAIImagesFake } from "../../../fakes/openai-images.ts";
import { pngDimensions } from "../../../src/upstreams/media-probe.ts";
import { OPENAI_KEY } from "./helpers.ts";

let fake: OpenAIImagesFake;
let client: OpenAI;

before(async () => {
  fake = await startOpenAIImagesFake({ apiKey: OPENAI_KEY, latencyMs: 0 });
  // No retries: each call is exactly one request, so the recorded requests can be asserted.
  client = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: OPENAI_KEY, maxRetries: 0 });
});

after(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

function png(b64: string | undefined): { width: number; height: number } | null {
  assert.equal(typeof b64, "string");
  return pngDimensions(Buffer.from(b64 as string, "base64"));
}

test("gpt-image-2: n images in one answer, b64_json only, with the quality, size and token usage", async () => {
  const answer = await client.images.generate({ model: "gpt-image-2", prompt: "a lighthouse", n: 2, quality: "low", size: "1024x1536", output_format: "png" });
  assert.equal(typeof answer.created, "number");
  assert.equal(answer.data?.length, 2);
  for (const image of answer.data ?? []) {
    assert.deepEqual(png(image.b64_json), { width: 1024, height: 1536 });
    assert.equal(image.url, undefined);
  }
  assert.equal(answer.quality, "low");
  assert.equal(answer.size, "1024x1536");
  assert.equal(answer.output_format, "png");
  assert.ok((answer.usage?.output_tokens ?? 0) > 0);
  assert.equal(answer.usage?.total_tokens, (answer.usage?.input_tokens ?? 0) + (answer.usage?.output_tokens ?? 0));
  const [r] = fake.submits();
  assert.equal(r.path, "/v1/images/generations");
  assert.equal(r.headers.authorization, "Bearer [redacted]");
  assert.deepEqual(r.body, { model: "gpt-image-2", prompt: "a lighthouse", n: 2, quality: "low", size: "1024x1536", output_format: "png" });
});

test("gpt-image-2 takes another WxH within its limits; other models the standard sizes only", async () => {
  const answer = await client.images.generate({ model: "gpt-image-2", prompt: "a lighthouse", size: "1536x864" });
  assert.deepEqual(png(answer.data?.[0].b64_json), { width: 1536, height: 864 });
  for (const [model, size] of [
    ["gpt-image-2", "1000x1000"],
    ["gpt-image-2", "3072x768"],
    ["gpt-image-1.5", "1536x864"],
  ] as const) {
    await assert.rejects(client.images.generate({ model, prompt: "x", size }), (err: unknown) => err instanceof BadRequestError && err.param === "size");
  }
});

test("the refusals reach the client as its own error classes with OpenAI's code", async () => {
  await assert.rejects(client.images.generate({ model: "gpt-image-2", prompt: "x [fake:moderation]" }), (err: unknown) => {
    assert.ok(err instanceof BadRequestError);
    assert.equal(err.status, 400);
    assert.equal(err.code, "moderation_blocked");
    return true;
  });
  await assert.rejects(
    client.images.generate({ model: "gpt-image-2", prompt: "x", response_format: "b64_json" }),
    (err: unknown) => err instanceof BadRequestError && err.code === "unknown_parameter" && err.param === "response_format",
  );
  // A field OpenAI does not know, sent through the client as a wrong field name in an adapter would be.
  const wrongName = { model: "gpt-image-2", prompt: "x", num_images: 2 } as unknown as OpenAI.Images.ImageGenerateParamsNonStreaming;
  await assert.rejects(client.images.generate(wrongName), (err: unknown) => {
    assert.ok(err instanceof BadRequestError);
    assert.equal(err.code, "unknown_parameter");
    assert.equal(err.param, "num_images");
    assert.match(err.message, /Unknown parameter: 'num_images'\./);
    return true;
  });
  await assert.rejects(client.images.generate({ model: "gpt-image-2", prompt: "x", n: 11 }), (err: unknown) => err instanceof BadRequestError && err.code === "integer_above_max_value");
});

test("a retired model is the client's NotFoundError with model_not_found", async () => {
  for (const model of ["dall-e-3", "gpt-image-1"]) {
    await assert.rejects(client.images.generate({ model, prompt: "x" }), (err: unknown) => {
      assert.ok(err instanceof NotFoundError);
      assert.equal(err.status, 404);
      assert.equal(err.code, "model_not_found");
      assert.match(err.message, new RegExp(`The model \`${model}\` has been deprecated`));
      return true;
    });
  }
});

test("a rate limit is the client's RateLimitError with retry-after; a wrong key its AuthenticationError", async () => {
  await assert.rejects(client.images.generate({ model: "gpt-image-2", prompt: "x [fake:429]" }), (err: unknown) => {
    assert.ok(err instanceof RateLimitError);
    assert.equal(err.headers?.get("retry-after"), "1");
    assert.equal(err.code, "rate_limit_exceeded");
    return true;
  });
  const wrong = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-not-the-key-000000000000", maxRetries: 0 });
  await assert.rejects(wrong.images.generate({ model: "gpt-image-2", prompt: "x" }), (err: unknown) => {
    assert.ok(err instanceof AuthenticationError);
    assert.equal(err.code, "invalid_api_key");
    assert.ok(!err.message.includes("sk-not-the-key-000000000000"), "the fake masks a wrong key as OpenAI does");
    return true;
  });
});
