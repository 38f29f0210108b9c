/**
 * Shared pieces of the BFL adapter tests: a request builder, a poll loop, and an assertion that a
 * failure is a {@link BflError} without the key in its message.
 */
import assert from "node:assert/strict";
import { BflError } from "../../../src/upstreams/bfl/api.ts";
import type { ImageRequest, UpstreamHandle, UpstreamJobState, VisualJobSource } from "../../../src/upstreams/types.ts";
import { imageRequest } from "../fal/helpers.ts";

/** The key every test source uses: distinctive, so a leak anywhere is found. No message may contain it. */
export const BFL_KEY = "bfl-test-key-5e2a9c71:d04b8f36e1a7";

/** Every error message a test looked at, checked once more at the end of a file. */
export const seenMessages: string[] = [];

/** An image request for BFL (default imgB-2-pro, 1024 x 1024, no references). */
export function bflImage(extra: Partial<ImageRequest> = {}): ImageRequest {
  return imageRequest({ model: "imgB-2-pro", ...extra });
}

export function assertNoKey(text: string): void {
  seenMessages.push(text);
  assert.ok(!text.includes(BFL_KEY), `the key leaked: ${text}`);
  assert.ok(!text.includes(BFL_KEY.slice(0, 12)), `part of the key leaked: ${text}`);
}

/** Awaits `promise`, asserts it rejects with a BflError whose message lacks the key, returns the error. */
export async function bflFailure(promise: Promise<unknown>): Promise<BflError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof BflError, `expected a BflError, got ${String(err)}`);
    assertNoKey(err.message);
    return err;
  }
  assert.fail("expected a rejection");
}

/**
 * Polls until the state is terminal (or `until` says stop). No deadline: the fake ends every task that
 * is not `[fake:stuck]`, and the tests assert outcomes, never durations.
 */
export async function pollUntil(
  source: VisualJobSource,
  handle: UpstreamHandle,
  until: (s: UpstreamJobState) => boolean = (s) => s.state === "succeeded" || s.state === "failed",
): Promise<UpstreamJobState> {
  for (;;) {
    const state = await source.poll(handle);
    if (state.state === "failed") assertNoKey(state.message);
    if (until(state)) return state;
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
}
