/**
 * The life of a BFL job against the loopback fake: the handle (polling URL, cost and megapixels),
 * every result status mapped to {@link UpstreamJobState}, the delivered PNG fetched without the key,
 * n > 1 fan-out, cancel as a no-op, and resume from a stored handle without a second submit (D28).
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startBflFake } from "../../../fakes/bfl.ts";
import type { BflFake } from "../../../fakes/bfl.ts";
import { createBflSource } from "../../../src/upstreams/bfl/source.ts";
import type { BflSource } from "../../../src/upstreams/bfl/source.ts";
import type { UpstreamHandle, UpstreamJobState } from "../../../src/upstreams/types.ts";
import { BFL_KEY, bflFailure, bflImage, pollUntil } from "./helpers.ts";

let fake: BflFake;
let source: BflSource;

before(async () => {
  fake = await startBflFake({ apiKey: BFL_KEY, pendingMs: 90, slowMs: 60_000 });
  source = createBflSource({ name: "bfl-main", baseUrl: fake.url, apiKey: BFL_KEY, timeoutMs: 3000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

type Succeeded = Extract<UpstreamJobState, { state: "succeeded" }>;
type Failed = Extract<UpstreamJobState, { state: "failed" }>;

async function succeeded(handle: UpstreamHandle, s: BflSource = source): Promise<Succeeded> {
  const state = await pollUntil(s, handle);
  assert.equal(state.state, "succeeded", JSON.stringify(state));
  return state as Succeeded;
}

async function failed(handle: UpstreamHandle): Promise<Failed> {
  const state = await pollUntil(source, handle);
  assert.equal(state.state, "failed", JSON.stringify(state));
  return state as Failed;
}

/** Downloads an output URL (no key: a signed delivery URL) and reads the PNG's size from its IHDR. */
async function downloadPng(url: string): Promise<{ width: number; height: number; headers: Headers }> {
  const res = await fetch(url);
  assert.equal(res.status, 200);
  const bytes = new Uint8Array(await res.arrayBuffer());
  assert.deepEqual([...bytes.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10]);
  const view = new DataView(bytes.buffer, bytes.byteOffset);
  return { width: view.getUint32(16), height: view.getUint32(20), headers: res.headers };
}

describe("a job from submit to delivery", () => {
  test("the handle: task id, the polling URL as BFL gave it, cost (credits -> USD) and megapixels", async () => {
    const handle = await source.submitImage(bflImage({ width: 1024, height: 768 }));
    assert.equal(handle.source, "bfl-main");
    assert.match(handle.requestId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(handle.urls, { polling_url: `${fake.url}/v1/get_result?id=${handle.requestId}` });
    // The fake prices FLUX.2 [pro] at 3 credits for the first MP: 1024 x 768 is 0.75 MP of 2^20 pixels.
    assert.deepEqual(handle.facts, { upstream_cost_usd: 0.03, megapixels: 0.75 });
  });

  test("queued (no progress yet), then running with BFL's progress, then succeeded", async () => {
    const slow = await startBflFake({ apiKey: BFL_KEY, pendingMs: 600 });
    const s = createBflSource({ name: "bfl-main", baseUrl: slow.url, apiKey: BFL_KEY });
    try {
      const handle = await s.submitImage(bflImage());
      assert.deepEqual(await s.poll(handle), { state: "queued", position: null });
      const running = await pollUntil(s, handle, (st) => st.state !== "queued");
      assert.equal(running.state, "running");
      const progress = running.state === "running" ? running.progress : null;
      assert.ok(progress !== null && progress > 0 && progress < 1, `progress ${progress}`);
      await succeeded(handle, s);
      const polls = slow.requests.filter((r) => r.method === "GET");
      assert.ok(polls.length >= 3);
      for (const r of polls) {
        assert.equal(r.path, `/v1/get_result?id=${handle.requestId}`);
        assert.equal(r.headers["x-key"], "[redacted]");
      }
    } finally {
      await s.close();
      await slow.close();
    }
  });

  test("Ready: one url output per image, a real PNG at the requested size, fetched without the key", async () => {
    const handle = await source.submitImage(bflImage({ width: 1280, height: 720 }));
    const state = await succeeded(handle);
    assert.equal(state.outputs.length, 1);
    const [out] = state.outputs;
    assert.equal(out.kind, "url");
    const url = out.kind === "url" ? out.url : "";
    assert.match(url, /\/delivery\/[0-9a-f-]{36}\/sample\.png\?se=/);
    const png = await downloadPng(url);
    assert.deepEqual([png.width, png.height], [1280, 720]);
    assert.equal(png.headers.get("content-type"), "image/png");
    const delivery = fake.requests.find((r) => r.path.startsWith("/delivery/"));
    assert.ok(delivery);
    assert.equal(delivery.headers["x-key"], undefined, "the delivery URL never gets the key");
    assert.equal(state.durationSec, null);
    assert.equal(state.megapixels, Math.round(((1280 * 720) / 2 ** 20) * 100) / 100);
    assert.equal(state.upstreamCostUsd, 0.03);
  });

  test("Kontext renders the request's aspect ratio at about one megapixel", async () => {
    const handle = await source.submitImage(bflImage({ model: "imgB-edit-pro", aspect: "16:9", imageUrls: ["https://images.example.com/a.png"] }));
    const state = await succeeded(handle);
    const png = await downloadPng(state.outputs[0].kind === "url" ? state.outputs[0].url : "");
    assert.ok(Math.abs(png.width / png.height - 16 / 9) < 0.02);
    assert.equal(state.upstreamCostUsd, 0.04);
  });

  test("n = 2 (Ultra): two tasks, both images in order, cost and megapixels summed over the parts", async () => {
    const handle = await source.submitImage(bflImage({ model: "imgB-1.1-ultra", n: 2, aspect: "1:1" }));
    assert.equal(fake.submits().length, 2);
    const state = await succeeded(handle);
    assert.equal(state.outputs.length, 2);
    const [a, b] = state.outputs.map((o) => (o.kind === "url" ? o.url : ""));
    assert.notEqual(a, b);
    const ids = handle.requestId.split(",");
    assert.ok(a.includes(ids[0]) && b.includes(ids[1]), "outputs follow the order of the parts");
    assert.equal(state.upstreamCostUsd, 0.12);
    // The fake renders Ultra's 1:1 at 2000 x 2000: 3.81 MP of 2^20 pixels per image, 6 credits each.
    assert.equal(state.megapixels, 3.81 * 2);
  });
});

describe("failures", () => {
  test("Content Moderated: failed, content rejected, not retryable, with BFL's reason", async () => {
    const state = await failed(await source.submitImage(bflImage({ prompt: "something forbidden [fake:moderation]" })));
    assert.equal(state.contentRejected, true);
    assert.equal(state.retryable, false);
    assert.match(state.message, /Content Moderated\): Sexual Content$/);
    assert.ok(!state.message.includes("something forbidden"));
  });

  test("Request Moderated (the input was refused): the same", async () => {
    const state = await failed(await source.submitImage(bflImage({ prompt: "x [fake:request-moderated]" })));
    assert.equal(state.contentRejected, true);
    assert.equal(state.retryable, false);
    assert.match(state.message, /Request Moderated/);
  });

  test("Error: failed, retryable (BFL's infrastructure: the next source may serve the job)", async () => {
    const state = await failed(await source.submitImage(bflImage({ prompt: "x [fake:error]" })));
    assert.equal(state.retryable, true);
    assert.equal(state.contentRejected, false);
    assert.match(state.message, /\(Error\): .*worker lost/);
  });

  test("Task not found: failed, not retryable (submitting again could pay twice)", async () => {
    const handle = await source.submitImage(bflImage());
    const unknown: UpstreamHandle = { ...handle, urls: { polling_url: `${fake.url}/v1/get_result?id=no-such-task` } };
    const state = await failed(unknown);
    assert.equal(state.retryable, false);
    assert.equal(state.contentRejected, false);
    assert.match(state.message, /Task not found/);
  });

  test("a polling call answering 500 throws a retryable error: poll again, never resubmit", async () => {
    const handle = await source.submitImage(bflImage({ prompt: "x [fake:poll-500]" }));
    const err = await bflFailure(source.poll(handle));
    assert.equal(err.retryable, true);
    assert.equal(err.status, 500);
    assert.equal(fake.submits().length, 1);
  });

  test("one moderated part fails a fanned-out job", async () => {
    const state = await failed(await source.submitImage(bflImage({ model: "imgB-1.1-ultra", n: 2, prompt: "x [fake:moderation]" })));
    assert.equal(state.contentRejected, true);
  });

  test("a part refused at submit stops the job: the error is thrown, no further task is submitted", async () => {
    const err = await bflFailure(source.submitImage(bflImage({ model: "imgB-1.1-ultra", n: 3, prompt: "three [fake:429-after-first]" })));
    assert.equal(err.retryable, true);
    assert.equal(err.status, 429);
    assert.equal(fake.submits().length, 2, "the second submit failed; no third was tried");
    // BFL has no cancel call: nothing else is sent for the part already accepted.
    assert.equal(fake.requests.length, 2);
  });
});

describe("cancel", () => {
  test("cancel makes no request (BFL has none) and resolves; the task runs on at BFL", async () => {
    const handle = await source.submitImage(bflImage({ prompt: "long one [fake:slow]" }));
    fake.reset();
    await source.cancel(handle);
    assert.equal(fake.requests.length, 0);
    const state = await source.poll(handle);
    assert.ok(state.state === "queued" || state.state === "running");
  });
});

describe("resume (D28)", () => {
  test("a stored handle is polled by a fresh source to the end without a second submit", async () => {
    const handle = await source.submitImage(bflImage({ width: 1536, height: 1024 }));
    const stored = JSON.parse(JSON.stringify(handle)) as UpstreamHandle;
    await source.close();
    // Another runner, another process: a new source built from the same configuration.
    source = createBflSource({ name: "bfl-main", baseUrl: fake.url, apiKey: BFL_KEY, timeoutMs: 3000 });
    const state = await succeeded(stored);
    assert.equal(state.outputs.length, 1);
    assert.equal(state.upstreamCostUsd, handle.facts?.upstream_cost_usd);
    assert.equal(state.megapixels, handle.facts?.megapixels);
    assert.equal(fake.submits().length, 1, "exactly one submit");
  });

  test("a stored handle without facts still succeeds, with null cost and megapixels", async () => {
    const handle = await source.submitImage(bflImage());
    const state = await succeeded({ source: handle.source, requestId: handle.requestId, urls: handle.urls });
    assert.equal(state.upstreamCostUsd, null);
    assert.equal(state.megapixels, null);
  });

  test("a handle of another source, or without its polling URL, is refused without a request", async () => {
    const handle = await source.submitImage(bflImage());
    fake.reset();
    const other = await bflFailure(source.poll({ ...handle, source: "bfl-other" }));
    assert.equal(other.kind, "handle");
    assert.equal(other.retryable, false);
    const bare = await bflFailure(source.poll({ source: "bfl-main", requestId: "x", urls: {} }));
    assert.equal(bare.kind, "handle");
    assert.equal(fake.requests.length, 0);
  });
});
