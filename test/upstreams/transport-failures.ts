/**
 * The transport failures every keyed protocol adapter shares (fal, bfl, elevenlabs, minimax), as tests
 * each adapter's error suite registers: a refused connection is a retryable `network` error, and the
 * caller's own abort is rethrown as it is, never as an upstream failure.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { closedPort } from "../helpers/recorder.ts";

/**
 * Registers "connection refused: network error, retryable": `create` builds a source on a closed port,
 * `failure` awaits its call and returns the protocol's error (asserting its class and that no key leaked).
 */
export function connectionRefusedTest<S extends { close(): Promise<void> }>(opts: {
  create: (baseUrl: string) => S;
  failure: (source: S) => Promise<{ kind: string; retryable: boolean }>;
}): void {
  test("connection refused: network error, retryable", async () => {
    const port = await closedPort();
    const dead = opts.create(`http://127.0.0.1:${port}`);
    try {
      const err = await opts.failure(dead);
      assert.equal(err.kind, "network");
      assert.equal(err.retryable, true);
    } finally {
      await dead.close();
    }
  });
}

/** Registers "the caller's abort is rethrown as it is": `call` starts a call that hangs until aborted. */
export function callerAbortTest(call: (signal: AbortSignal) => Promise<unknown>): void {
  test("the caller's abort is rethrown as it is, not as an upstream failure", async () => {
    const controller = new AbortController();
    const reason = new Error("caller went away");
    const pending = call(controller.signal);
    setTimeout(() => controller.abort(reason), 50);
    await assert.rejects(pending, (err) => err === reason);
  });
}
