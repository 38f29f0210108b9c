/**
 * OpenAI's own Node client (the `openai` package, a development dependency) pointed at the loopback fake:
 * when the vendor's client accepts the fake's answers and maps its errors to its own error classes, the
 * fake speaks OpenAI's images protocol (upstreams.md, "Testing without the internet").
 */
import { after, before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import OpenAI, { AuthenticationError, BadRequestError, RateLimitError } from "openai";
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

test("dall-e-3, hd, b64_json: one PNG of the size asked, with a revised prompt", async () => {
  const answer = await client.images.generate({ model: "dall-e-3", prompt: "a lighthouse at dusk", n: 1, size: "1792x1024", quality: "hd", response_format: "b64_json" });
  assert.equal(typeof answer.created, "number");
  assert.equal(answer.data?.length, 1);
  assert.deepEqual(png(answer.data?.[0].b64_json), { width: 1792, height: 1024 });
  assert.equal(typeof answer.data?.[0].revised_prompt, "string");
  assert.equal(answer.usage, undefined);
  const [r] = fake.submits();
  assert.equal(r.path, "/v1/images/generations");
  assert.equal(r.headers.authorization, "Bearer [redacted]");
  assert.deepEqual(r.body, { model: "dall-e-3", prompt: "a lighthouse at dusk", n: 1, size: "1792x1024", quality: "hd", response_format: "b64_json" });
});

test("dall-e-3's default answer is a URL the client can fetch", async () => {
  const answer = await client.images.generate({ model: "dall-e-3", prompt: "a lighthouse", size: "1024x1792" });
  const url = answer.data?.[0].url;
  assert.equal(typeof url, "string");
  const bytes = new Uint8Array(await (await fetch(url as string)).arrayBuffer());
  assert.deepEqual(pngDimensions(bytes), { width: 1024, height: 1792 });
});

test("gpt-image-1: n images in one answer, with the quality, size and token usage", async () => {
  const answer = await client.images.generate({ model: "gpt-image-1", prompt: "a lighthouse", n: 2, quality: "low", size: "1024x1536", output_format: "png" });
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
});

test("the refusals reach the client as its BadRequestError with OpenAI's code", async () => {
  for (const [model, code] of [
    ["dall-e-3", "content_policy_violation"],
    ["gpt-image-1", "moderation_blocked"],
  ] as const) {
    await assert.rejects(client.images.generate({ model, prompt: "x [fake:moderation]" }), (err: unknown) => {
      assert.ok(err instanceof BadRequestError);
      assert.equal(err.status, 400);
      assert.equal(err.code, code);
      return true;
    });
  }
  await assert.rejects(client.images.generate({ model: "dall-e-3", prompt: "x", n: 2 }), (err: unknown) => err instanceof BadRequestError && err.param === "n");
  await assert.rejects(
    client.images.generate({ model: "gpt-image-1", prompt: "x", response_format: "b64_json" }),
    (err: unknown) => err instanceof BadRequestError && err.code === "unknown_parameter",
  );
});

test("a rate limit is the client's RateLimitError with retry-after; a wrong key its AuthenticationError", async () => {
  await assert.rejects(client.images.generate({ model: "gpt-image-1", prompt: "x [fake:429]" }), (err: unknown) => {
    assert.ok(err instanceof RateLimitError);
    assert.equal(err.headers?.get("retry-after"), "1");
    assert.equal(err.code, "rate_limit_exceeded");
    return true;
  });
  const wrong = new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: "sk-not-the-key-000000000000", maxRetries: 0 });
  await assert.rejects(wrong.images.generate({ model: "gpt-image-1", prompt: "x" }), (err: unknown) => {
    assert.ok(err instanceof AuthenticationError);
    assert.equal(err.code, "invalid_api_key");
    assert.ok(!err.message.includes("sk-not-the-key-000000000000"), "the fake masks a wrong key as OpenAI does");
    return true;
  });
});
