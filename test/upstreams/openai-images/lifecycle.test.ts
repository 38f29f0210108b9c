/**
 * The synchronous OpenAI generation wrapped as a job: the handle, `poll` returning the stored images
 * once, a handle whose result is not in this process's memory (another process, expired, evicted,
 * cancelled, closed), and the source driven by the job runner's durable path (durable.ts): success,
 * failover on a retryable failure, a moderation refusal ending the job `content_rejected`, and OpenAI's
 * 400 for the input ending it `provider_error` on the first source.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { runDurable } from "../../../src/jobs/durable.ts";
import type { DurableHooks, DurableJob, DurableOutcome, SourceSlot } from "../../../src/jobs/durable.ts";
import { startOpenAIImagesFake } from "../../../fakes/openai-images.ts";
import type { OpenAIImagesFake } from "../../../fakes/openai-images.ts";
import { createOpenAIImagesSource } from "../../../src/upstreams/openai-compatible/images-source.ts";
import type { OpenAIImagesSource, OpenAIImagesSourceConfig } from "../../../src/upstreams/openai-compatible/images-source.ts";
import type { ImageRequest, UpstreamHandle, UpstreamJobState } from "../../../src/upstreams/types.ts";
import { assertNoKey, imageRequest, OPENAI_KEY, upstreamFailure } from "./helpers.ts";

let fake: OpenAIImagesFake;
const sources: OpenAIImagesSource[] = [];

function newSource(extra: Partial<OpenAIImagesSourceConfig> = {}, fakeUrl = fake.url): OpenAIImagesSource {
  const s = createOpenAIImagesSource({ name: "openai-main", baseUrl: `${fakeUrl}/v1`, apiKey: OPENAI_KEY, timeoutMs: 30_000, ...extra });
  sources.push(s);
  return s;
}

before(async () => {
  fake = await startOpenAIImagesFake({ apiKey: OPENAI_KEY, latencyMs: 0 });
});

after(async () => {
  await Promise.all(sources.map((s) => s.close()));
  await fake.close();
});

beforeEach(() => fake.reset());

function assertGone(state: UpstreamJobState): void {
  assert.equal(state.state, "failed");
  assert.ok(state.state === "failed");
  assert.equal(state.retryable, false);
  assert.equal(state.contentRejected, false);
  assert.match(state.message, /not in this process's memory/);
  assertNoKey(state.message);
}

describe("submit, then poll", () => {
  test("the handle names the source; poll returns the images once, then frees them", async () => {
    const source = newSource();
    const handle = await source.submitImage(imageRequest({ model: "imgC-q1", n: 2, quality: "low", aspect: "16:9" }));
    assert.equal(handle.source, "openai-main");
    assert.match(handle.requestId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(handle.urls, {});
    assert.equal(fake.submits().length, 1, "the submit did the work");
    const state = await source.poll(handle);
    assert.ok(state.state === "succeeded", JSON.stringify(state));
    assert.deepEqual({ ...state, outputs: [] }, { state: "succeeded", outputs: [], durationSec: null, megapixels: null, upstreamCostUsd: null });
    assert.equal(state.outputs.length, 2);
    for (const output of state.outputs) {
      assert.ok(output.kind === "bytes");
      assert.deepEqual({ type: output.contentType, width: output.width, height: output.height }, { type: "image/png", width: 1536, height: 1024 });
    }
    assertGone(await source.poll(handle));
    assert.equal(fake.submits().length, 1, "polling never calls OpenAI");
  });

  test("a handle whose result is not in this process's memory: failed, not retryable", async () => {
    const handle = await newSource().submitImage(imageRequest());
    // Another source object of the same name stands for the runner of another process.
    assertGone(await newSource().poll(handle));
    assertGone(await newSource().poll({ source: "openai-main", requestId: "never-issued", urls: {} }));
  });

  test("a handle of another source is refused", async () => {
    const err = await upstreamFailure(newSource().poll({ source: "fal-main", requestId: "x", urls: {} }));
    assert.equal(err.retryable, false);
  });

  test("cancel drops the result (no upstream call); cancelling again is no error", async () => {
    const source = newSource();
    const handle = await source.submitImage(imageRequest());
    await source.cancel(handle);
    await source.cancel(handle);
    assertGone(await source.poll(handle));
    assert.equal(fake.requests.length, 1);
  });

  test("close drops every result", async () => {
    const source = newSource();
    const handle = await source.submitImage(imageRequest());
    await source.close();
    assertGone(await source.poll(handle));
  });

  test("results expire after resultTtlMs", async () => {
    const source = newSource({ resultTtlMs: 30 });
    const handle = await source.submitImage(imageRequest());
    await new Promise((resolve) => setTimeout(resolve, 60));
    assertGone(await source.poll(handle));
  });

  test("past maxStoredResults the oldest result goes first", async () => {
    const source = newSource({ maxStoredResults: 2 });
    const handles: UpstreamHandle[] = [];
    for (let i = 0; i < 3; i++) handles.push(await source.submitImage(imageRequest({ prompt: `image ${i}` })));
    assertGone(await source.poll(handles[0]));
    assert.equal((await source.poll(handles[1])).state, "succeeded");
    assert.equal((await source.poll(handles[2])).state, "succeeded");
  });
});

describe("through the runner's durable path (durable.ts)", () => {
  /** A slot as the registry gives it, without a concurrency limit or a circuit. */
  const slotOf = (source: OpenAIImagesSource): SourceSlot => ({
    name: source.name,
    source,
    tryAcquire: () => true,
    release: () => {},
    call: (fn) => fn(),
    downloadsDirectly: (url) => source.isDirectDownloadHost(url),
  });

  async function run(request: ImageRequest, slots: SourceSlot[]): Promise<{ outcome: DurableOutcome; recorded: UpstreamHandle[] }> {
    const recorded: UpstreamHandle[] = [];
    const hooks: DurableHooks = {
      recordHandle: async (handle) => {
        recorded.push(handle);
        return true;
      },
      moveToLayer: async () => true,
      heartbeat: async () => true,
    };
    const job: DurableJob = { id: "job_test", kind: "image", request, handle: null, layer: 0 };
    const current = { handle: null, slot: null };
    const outcome = await runDurable(job, slots, hooks, new AbortController().signal, current, { pollMs: 5, backoffMaxMs: 20 });
    return { outcome, recorded };
  }

  test("a generation succeeds with its images on the source that made them", async () => {
    const { outcome, recorded } = await run(imageRequest({ model: "imgC-v3", n: 2 }), [slotOf(newSource())]);
    assert.equal(outcome.kind, "succeeded");
    assert.ok(outcome.kind === "succeeded");
    assert.equal(outcome.source, "openai-main");
    assert.equal(outcome.result.outputs.length, 2);
    assert.equal(recorded.length, 1);
    assert.equal(fake.submits().length, 1, "n images in one request");
  });

  test("a moderation refusal at submit ends the job content_rejected, without trying the next source", async () => {
    const next = newSource({ name: "openai-next" });
    const { outcome, recorded } = await run(imageRequest({ model: "imgC-q1", prompt: "x [fake:moderation]" }), [slotOf(newSource()), slotOf(next)]);
    assert.equal(outcome.kind, "failed");
    assert.ok(outcome.kind === "failed");
    assert.equal(outcome.code, "content_rejected");
    assert.match(outcome.message, /refused the content/);
    assertNoKey(outcome.message);
    assert.equal(recorded.length, 0);
    assert.equal(fake.submits().length, 1, "no failover");
  });

  test("OpenAI's 400 for the input ends the job provider_error, without trying the next source (D27, D35)", async () => {
    const next = newSource({ name: "openai-next" });
    // A parameter OpenAI does not know, passed through (D3): the strict fake answers 400 unknown_parameter.
    const request = imageRequest({ model: "imgC-q1", parameters: { num_images: 2 } });
    const { outcome, recorded } = await run(request, [slotOf(newSource()), slotOf(next)]);
    assert.ok(outcome.kind === "failed", JSON.stringify(outcome));
    assert.equal(outcome.code, "provider_error");
    assert.match(outcome.message, /HTTP 400: Unknown parameter: 'num_images'/);
    assertNoKey(outcome.message);
    assert.equal(recorded.length, 0);
    assert.equal(fake.submits().length, 1, "no failover");
  });

  test("a retryable failure moves the job to the next source", async () => {
    const failing = await startOpenAIImagesFake({ apiKey: OPENAI_KEY, latencyMs: 0, markers: ["500"] });
    try {
      const first = newSource({ name: "openai-down" }, failing.url);
      const { outcome } = await run(imageRequest(), [slotOf(first), slotOf(newSource())]);
      assert.ok(outcome.kind === "succeeded", JSON.stringify(outcome));
      assert.equal(outcome.source, "openai-main");
      assert.equal(outcome.layer, 1);
      assert.equal(failing.submits().length, 1);
    } finally {
      await failing.close();
    }
  });

  test("a job resumed by another process finds nothing and ends provider_error", async () => {
    const handle = await newSource().submitImage(imageRequest());
    const recorded: UpstreamHandle[] = [];
    const hooks: DurableHooks = { recordHandle: async (h) => (recorded.push(h), true), moveToLayer: async () => true, heartbeat: async () => true };
    const outcome = await runDurable(
      { id: "job_resumed", kind: "image", request: imageRequest(), handle, layer: 0 },
      [slotOf(newSource())],
      hooks,
      new AbortController().signal,
      { handle: null, slot: null },
      { pollMs: 5, backoffMaxMs: 20 },
    );
    assert.ok(outcome.kind === "failed");
    assert.equal(outcome.code, "provider_error");
    assert.equal(fake.submits().length, 1, "never submitted again");
  });
});
