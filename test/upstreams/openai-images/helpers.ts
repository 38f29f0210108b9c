/**
 * Shared pieces of the OpenAI images adapter tests: a request builder, an assertion that a failure is an
 * {@link OpenAICompatibleError} without the key in its message, and the key every test uses.
 */
import assert from "node:assert/strict";
import { OpenAICompatibleError } from "../../../src/upstreams/openai-compatible/api.ts";
import type { ImageRequest } from "../../../src/upstreams/types.ts";
import { UpstreamError } from "../../../src/upstreams/types.ts";
import { imageRequest as anyImageRequest } from "../fal/helpers.ts";

/** The key every test source uses; no message may ever contain it. */
export const OPENAI_KEY = "sk-test-images-5f1c9a7e2b3d4c6e8f0a";

/** Every error message a test looked at, checked once more at the end of a file. */
export const seenMessages: string[] = [];

/** A validated image request as the runner hands it over (fal's tests build the same), imgC-v3 by default. */
export function imageRequest(extra: Partial<ImageRequest> = {}): ImageRequest {
  return anyImageRequest({ model: "imgC-v3", ...extra });
}

/** Awaits `promise`, asserts it rejects with an OpenAICompatibleError whose message lacks the key, returns it. */
export async function openAIFailure(promise: Promise<unknown>): Promise<OpenAICompatibleError> {
  const err = await upstreamFailure(promise);
  assert.ok(err instanceof OpenAICompatibleError, `expected an OpenAICompatibleError, got ${String(err)}`);
  return err;
}

/** Awaits `promise`, asserts it rejects with an UpstreamError whose message lacks the key, returns it. */
export async function upstreamFailure(promise: Promise<unknown>): Promise<UpstreamError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof UpstreamError, `expected an UpstreamError, got ${String(err)}`);
    assertNoKey(err.message);
    return err;
  }
  assert.fail("expected a rejection");
}

export function assertNoKey(text: string): void {
  seenMessages.push(text);
  assert.ok(!text.includes(OPENAI_KEY), `the key leaked: ${text}`);
  assert.ok(!text.includes(OPENAI_KEY.slice(-12)), `part of the key leaked: ${text}`);
}
