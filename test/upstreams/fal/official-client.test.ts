/**
 * fal's own JavaScript client (`@fal-ai/client`, a development dependency) pointed at the loopback fake:
 * when the vendor's client accepts the fake's answers, the fake speaks fal's protocol (upstreams.md,
 * "Testing without the internet"). The client builds `https://queue.fal.run/...` URLs itself; a custom
 * `fetch` (its documented `fetch` option) sends them to the fake instead, unchanged otherwise.
 */
import { after, before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { ApiError, createFalClient, ValidationError } from "@fal-ai/client";
import type { FalClient } from "@fal-ai/client";
import { startFalFake } from "../../../fakes/fal.ts";
import type { FalFake } from "../../../fakes/fal.ts";
import { FAL_KEY } from "./helpers.ts";

let fake: FalFake;
let fal: FalClient;

before(async () => {
  fake = await startFalFake({ apiKey: FAL_KEY, queueMs: 20, runMs: 60, slowMs: 60_000 });
  fal = createFalClient({
    credentials: FAL_KEY,
    // No retries: each call is exactly one request, so the recorded requests can be asserted.
    retry: { maxRetries: 0 },
    fetch: (input, init) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      assert.ok(url.startsWith("https://queue.fal.run/"), url);
      return fetch(url.replace("https://queue.fal.run", fake.url), init);
    },
  });
});

after(async () => {
  await fake.close();
});

beforeEach(() => fake.reset());

async function untilCompleted(endpointId: string, requestId: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const status = await fal.queue.status(endpointId, { requestId, logs: true });
    if (status.status === "COMPLETED") return;
    assert.ok(status.status === "IN_QUEUE" || status.status === "IN_PROGRESS");
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
  assert.fail("never COMPLETED");
}

test("queue.submit, status and result of an image endpoint with a sub-path", async () => {
  const endpoint = "fal-ai/flux-pro/v1.1-ultra";
  const submitted = await fal.queue.submit(endpoint, { input: { prompt: "a lake at dawn", num_images: 2, aspect_ratio: "16:9" } });
  assert.equal(submitted.status, "IN_QUEUE");
  assert.equal(typeof submitted.request_id, "string");
  assert.equal(submitted.queue_position, 0);
  assert.equal(submitted.status_url, `${fake.url}/fal-ai/flux-pro/requests/${submitted.request_id}/status`);

  await untilCompleted(endpoint, submitted.request_id);
  const result = await fal.queue.result(endpoint, { requestId: submitted.request_id });
  assert.equal(result.requestId, submitted.request_id, "x-fal-request-id header");
  const data = result.data as { images: { url: string; width: number; height: number; content_type: string }[] };
  assert.equal(data.images.length, 2);
  for (const image of data.images) {
    assert.equal(image.content_type, "image/png");
    const res = await fetch(image.url);
    assert.equal(res.headers.get("content-type"), "image/png");
    assert.ok((await res.arrayBuffer()).byteLength > 100);
  }

  // What the client sent: the endpoint with its sub-path for the submit, the app id without it after.
  const paths = fake.requests.filter((r) => !r.path.startsWith("/files/")).map((r) => `${r.method} ${r.path.replace(submitted.request_id, "ID")}`);
  assert.equal(paths[0], "POST /fal-ai/flux-pro/v1.1-ultra");
  assert.ok(paths.includes("GET /fal-ai/flux-pro/requests/ID/status?logs=1"));
  assert.equal(paths.at(-1), "GET /fal-ai/flux-pro/requests/ID");
  for (const r of fake.requests.filter((x) => !x.path.startsWith("/files/"))) assert.equal(r.headers.authorization, "Key [redacted]");
});

test("a video endpoint's result is {video: File}", async () => {
  const endpoint = "fal-ai/kling-video/v2.5-turbo/pro/text-to-video";
  const submitted = await fal.queue.submit(endpoint, { input: { prompt: "waves", duration: "5" } });
  await untilCompleted(endpoint, submitted.request_id);
  const result = await fal.queue.result(endpoint, { requestId: submitted.request_id });
  const data = result.data as { video: { url: string; content_type: string; file_size: number } };
  assert.equal(data.video.content_type, "video/mp4");
  const bytes = new Uint8Array(await (await fetch(data.video.url)).arrayBuffer());
  assert.equal(bytes.byteLength, data.video.file_size);
});

test("queue.cancel, then the status is COMPLETED with fal's cancellation error", async () => {
  const endpoint = "fal-ai/veo3.1";
  const submitted = await fal.queue.submit(endpoint, { input: { prompt: "long [fake:slow]" } });
  await fal.queue.cancel(endpoint, { requestId: submitted.request_id });
  const status = await fal.queue.status(endpoint, { requestId: submitted.request_id });
  assert.equal(status.status, "COMPLETED");
  assert.equal((status as unknown as { error_type: string }).error_type, "client_cancelled");
  assert.ok(fake.requests.some((r) => r.method === "PUT" && r.path === `/fal-ai/veo3.1/requests/${submitted.request_id}/cancel`));
});

test("a 422 is the client's ValidationError with fal's field errors", async () => {
  await assert.rejects(fal.queue.submit("fal-ai/veo3.1", { input: { prompt: "x [fake:422]" } }), (err: unknown) => {
    assert.ok(err instanceof ValidationError);
    assert.equal(err.status, 422);
    assert.deepEqual(
      err.getFieldErrors("prompt").map((e) => e.type),
      ["string_too_long"],
    );
    return true;
  });
});

test("a content-policy refusal reaches the client as a 422 from the result", async () => {
  const endpoint = "fal-ai/flux-pro/v1.1-ultra";
  const submitted = await fal.queue.submit(endpoint, { input: { prompt: "x [fake:moderation]" } });
  await untilCompleted(endpoint, submitted.request_id);
  await assert.rejects(fal.queue.result(endpoint, { requestId: submitted.request_id }), (err: unknown) => {
    assert.ok(err instanceof ValidationError);
    assert.equal(err.fieldErrors[0].type, "content_policy_violation");
    return true;
  });
});

test("a wrong key is the client's ApiError 401", async () => {
  const wrong = createFalClient({
    credentials: "not-the-key",
    retry: { maxRetries: 0 },
    fetch: (input, init) => fetch(String(input).replace("https://queue.fal.run", fake.url), init),
  });
  await assert.rejects(wrong.queue.submit("fal-ai/veo3.1", { input: { prompt: "x" } }), (err: unknown) => {
    assert.ok(err instanceof ApiError);
    assert.equal(err.status, 401);
    return true;
  });
});

test("an invalid input: the queue accepts it, and the client's result is a ValidationError naming fal's field", async () => {
  const endpoint = "fal-ai/veo3.1/fast";
  const submitted = await fal.queue.submit(endpoint, { input: { prompt: "waves", duration: "5" } as never });
  await untilCompleted(endpoint, submitted.request_id);
  await assert.rejects(fal.queue.result(endpoint, { requestId: submitted.request_id }), (err: unknown) => {
    assert.ok(err instanceof ValidationError);
    assert.equal(err.status, 422);
    assert.deepEqual(
      err.getFieldErrors("duration").map((e) => e.type),
      ["literal_error"],
    );
    return true;
  });
});

test("an input refused at the submit (input-errors-submit) is the client's ValidationError too", async () => {
  const strict = await startFalFake({ apiKey: FAL_KEY, inputErrors: "submit" });
  const client = createFalClient({
    credentials: FAL_KEY,
    retry: { maxRetries: 0 },
    fetch: (input, init) => fetch(String(input).replace("https://queue.fal.run", strict.url), init),
  });
  try {
    await assert.rejects(client.queue.submit("fal-ai/flux-2-pro", { input: { promt: "x" } as never }), (err: unknown) => {
      assert.ok(err instanceof ValidationError);
      assert.deepEqual(
        err.getFieldErrors("prompt").map((e) => e.type),
        ["missing"],
      );
      return true;
    });
  } finally {
    await strict.close();
  }
});

test("an endpoint fal does not serve (fal-ai/veo3, or one retired) is the client's ApiError 404", async () => {
  const retiring = await startFalFake({ apiKey: FAL_KEY, retired: ["fal-ai/flux-pro/v1.1-ultra"] });
  const client = createFalClient({
    credentials: FAL_KEY,
    retry: { maxRetries: 0 },
    fetch: (input, init) => fetch(String(input).replace("https://queue.fal.run", retiring.url), init),
  });
  try {
    for (const endpoint of ["fal-ai/veo3", "fal-ai/flux-pro/v1.1-ultra"]) {
      await assert.rejects(client.queue.submit(endpoint, { input: { prompt: "x" } }), (err: unknown) => {
        assert.ok(err instanceof ApiError, endpoint);
        assert.ok(!(err instanceof ValidationError));
        assert.equal(err.status, 404);
        return true;
      });
    }
  } finally {
    await retiring.close();
  }
});
