/**
 * `runOnSources` (src/upstreams/sync-failover.ts, D27, D35) with test adapters: a source answering that the
 * upstream model does not exist moves the call to the family's next source without opening its circuit;
 * when none is left the error keeps `modelNotFound`, and `callUpstream` (billing/paid-call.ts) turns it into
 * a 502 naming the catalog model and the upstream id, never the key.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { callUpstream } from "../../src/billing/paid-call.ts";
import { AppError } from "../../src/errors.ts";
import type { UpstreamSource } from "../../src/upstreams/config.ts";
import { UpstreamRegistry } from "../../src/upstreams/registry.ts";
import { modelNotFoundMessage, runOnSources, type SyncSlot, triesNextSource } from "../../src/upstreams/sync-failover.ts";
import { UpstreamError } from "../../src/upstreams/types.ts";

const KEY = "sk-failover-SECRET-77";

function source(name: string, maxConcurrency: number | null = null): UpstreamSource {
  return {
    name,
    protocol: "openai",
    baseUrl: "https://api.openai.example/v1",
    apiKey: KEY,
    families: ["transcribe"],
    models: {},
    timeoutMs: null,
    maxConcurrency,
    trustedHosts: [],
    origin: "UPSTREAMS",
  };
}

/** A test adapter: what it answers, and how often it was called. */
type Adapter = { calls: number; run: () => Promise<string> };
const serves = (answer: string): Adapter => {
  const a: Adapter = { calls: 0, run: async () => (a.calls++, answer) };
  return a;
};
const fails = (err: () => Error): Adapter => {
  const a: Adapter = {
    calls: 0,
    run: async () => {
      a.calls++;
      throw err();
    },
  };
  return a;
};
const notFound = (id: string) => () => new UpstreamError(`404 model_not_found: The model '${id}' does not exist (key ${KEY})`, false, { modelNotFound: true, upstreamModel: id });

/** A registry of sources `a`, `b`, `c` (one place each when `capped`) and the slots of `adapters` on them in order. */
function setup(adapters: Adapter[], opts: { capped?: boolean } = {}) {
  const names = ["a", "b", "c"].slice(0, adapters.length);
  const registry = new UpstreamRegistry(names.map((n) => source(n, opts.capped ? 1 : null)), { failureThreshold: 2 });
  const slots: SyncSlot<Adapter>[] = adapters.map((adapter, i) => ({ name: names[i]!, state: registry.get(names[i]!)!, adapter }));
  return { registry, slots, run: () => runOnSources(registry, slots, (ad) => ad.run()) };
}

describe("runOnSources: a source without the upstream model (D35)", () => {
  test("the next source serves it, as fallback layer 1; the first source's circuit stays closed", async () => {
    const first = fails(notFound("whisper-2"));
    const second = serves("hello");
    const { registry, run } = setup([first, second]);
    for (let i = 0; i < 5; i++) {
      const served = await run();
      assert.deepEqual(served, { value: "hello", source: "b", fallbackLayer: 1 });
    }
    assert.equal(first.calls, 5);
    assert.equal(registry.get("a")?.circuit, "closed", "never opens the circuit (threshold 2 here)");
    assert.equal(registry.get("a")?.lastError?.code, "model_not_found");
    assert.equal(registry.snapshot()[0]?.failures, 5);
    assert.equal(registry.snapshot()[1]?.successes, 5);
  });

  test("none left: the last such error is rethrown, still modelNotFound; every source was tried once", async () => {
    const adapters = [fails(notFound("whisper-2")), fails(notFound("whisper-3"))];
    const { run } = setup(adapters);
    const err = await run().catch((e: unknown) => e);
    assert.ok(err instanceof UpstreamError && err.modelNotFound);
    assert.equal(err.upstreamModel, "whisper-3");
    assert.deepEqual(adapters.map((a) => a.calls), [1, 1]);
  });

  test("a source that failed otherwise says more: its error is rethrown", async () => {
    const { run } = setup([fails(() => new UpstreamError("503 overloaded", true)), fails(notFound("whisper-2"))]);
    const err = await run().catch((e: unknown) => e);
    assert.ok(err instanceof UpstreamError && err.retryable && !err.modelNotFound);
    assert.equal(err.message, "503 overloaded");
  });

  test("the other sources at their max_concurrency: 429 (they may have the model), not a 502", async () => {
    const { registry, slots } = setup([fails(notFound("whisper-2")), serves("late")], { capped: true });
    assert.ok(registry.get("b")!.gate.tryAcquire());
    try {
      const err = await runOnSources(registry, slots, (ad) => ad.run()).catch((e: unknown) => e);
      assert.ok(err instanceof AppError);
      assert.equal(err.status, 429);
      assert.equal(err.code, "rate_limited");
    } finally {
      registry.get("b")!.gate.release();
    }
  });

  test("an input refusal still ends the call at once: the next source is not tried", async () => {
    const second = serves("never");
    const { run } = setup([fails(() => new UpstreamError("400 bad file", false)), second]);
    await assert.rejects(run(), /400 bad file/);
    assert.equal(second.calls, 0);
  });

  test("triesNextSource: retryable or modelNotFound UpstreamErrors only", () => {
    assert.equal(triesNextSource(new UpstreamError("x", true)), true);
    assert.equal(triesNextSource(new UpstreamError("x", false, { modelNotFound: true, upstreamModel: "m" })), true);
    assert.equal(triesNextSource(new UpstreamError("x", false)), false);
    assert.equal(triesNextSource(new UpstreamError("x", true, { contentRejected: true })), false);
    assert.equal(triesNextSource(new Error("bug")), false);
  });
});

describe("the caller's 502 when no source has the model (D35)", () => {
  test("callUpstream names the catalog model and the upstream id, never the key or the upstream's own text", async () => {
    const { run } = setup([fails(notFound("whisper-2")), fails(notFound("whisper-2"))]);
    const err = await callUpstream("host1-transcribe-1", run).catch((e: unknown) => e);
    assert.ok(err instanceof AppError);
    assert.equal(err.status, 502);
    assert.equal(err.code, "provider_error");
    assert.equal(
      err.message,
      "No upstream source serves host1-transcribe-1: the source answered that its upstream model whisper-2 does not exist. Nothing was charged.",
    );
    assert.ok(!err.message.includes(KEY));
    assert.ok(!JSON.stringify(err.toBody()).includes(KEY));
  });

  test("other failures keep the generic 502", async () => {
    const err = await callUpstream("alpha-v3", () => Promise.reject(new UpstreamError(`500 from ${KEY}`, true))).catch((e: unknown) => e);
    assert.ok(err instanceof AppError);
    assert.equal(err.status, 502);
    assert.doesNotMatch(err.message, /alpha-v3|SECRET/);
  });

  test("modelNotFoundMessage: without an upstream id, and a long one cut", () => {
    const bare = new UpstreamError("404", false, { modelNotFound: true });
    assert.equal(modelNotFoundMessage("imgC-v3", bare), "No upstream source serves imgC-v3: the source answered that its upstream model does not exist.");
    const long = new UpstreamError("404", false, { modelNotFound: true, upstreamModel: "m".repeat(500) });
    assert.ok(modelNotFoundMessage("imgC-v3", long).length < 250);
  });
});
