/**
 * Shared pieces of the fal adapter tests: request builders, a poll loop, and an assertion that a
 * failure is a {@link FalError} without the key in its message.
 */
import assert from "node:assert/strict";
import { FalError } from "../../../src/upstreams/fal/api.ts";
import type { FalSource } from "../../../src/upstreams/fal/source.ts";
import type { ImageRequest, UpstreamHandle, UpstreamJobState, VideoRequest } from "../../../src/upstreams/types.ts";

/** The key every test source uses; no message may ever contain it. */
export const FAL_KEY = "fal-test-key-6c1f2e0a:9b7d4e5f3a2c";

/** Every error message a test looked at, checked once more at the end of a file. */
export const seenMessages: string[] = [];

export function videoRequest(extra: Partial<VideoRequest> = {}): VideoRequest {
  return { model: "vidA-2.5-pro", prompt: "a red fox running", durationSec: 5, imageUrl: null, parameters: {}, simulate: null, ...extra };
}

export function imageRequest(extra: Partial<ImageRequest> = {}): ImageRequest {
  return {
    model: "imgA-v4",
    prompt: "a lighthouse at dusk",
    n: 1,
    aspect: "1:1",
    width: 1024,
    height: 1024,
    quality: null,
    output: "png",
    imageUrls: [],
    parameters: {},
    simulate: null,
    ...extra,
  };
}

/** Awaits `promise`, asserts it rejects with a FalError whose message lacks the key, returns the error. */
export async function falFailure(promise: Promise<unknown>): Promise<FalError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof FalError, `expected a FalError, got ${String(err)}`);
    assertNoKey(err.message);
    return err;
  }
  assert.fail("expected a rejection");
}

export function assertNoKey(text: string): void {
  seenMessages.push(text);
  assert.ok(!text.includes(FAL_KEY), `the key leaked: ${text}`);
  assert.ok(!text.includes(FAL_KEY.slice(0, 12)), `part of the key leaked: ${text}`);
}

/** Polls until the state is terminal (or `until` says stop), at most `timeoutMs`. */
export async function pollUntil(
  source: FalSource,
  handle: UpstreamHandle,
  until: (s: UpstreamJobState) => boolean = (s) => s.state === "succeeded" || s.state === "failed",
  timeoutMs = 5000,
): Promise<UpstreamJobState> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await source.poll(handle);
    if (state.state === "failed") assertNoKey(state.message);
    if (until(state)) return state;
    if (Date.now() > deadline) assert.fail(`no terminal state within ${timeoutMs} ms, last ${JSON.stringify(state)}`);
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}
