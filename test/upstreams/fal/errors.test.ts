/**
 * Failure mapping of the fal adapter: every class of failure on a submit mapped to a retryable or
 * non-retryable {@link FalError}, the caller's abort, the host check that runs before the key is sent
 * (D25), and no key in any message (docs/architecture.md invariant 8).
 */
import { startRecorder } from "../../helpers/recorder.ts";
import { callerAbortTest, connectionRefusedTest } from "../transport-failures.ts";
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createFalApi, FalError } from "../../../src/upstreams/fal/api.ts";
import { startFalFake } from "../../../fakes/fal.ts";
import type { FalFake } from "../../../fakes/fal.ts";
import { createFalSource } from "../../../src/upstreams/fal/source.ts";
import type { FalSource } from "../../../src/upstreams/fal/source.ts";
import { UpstreamError } from "../../../src/upstreams/types.ts";
import type { UpstreamHandle } from "../../../src/upstreams/types.ts";
import { assertNoKey, FAL_KEY, falFailure, imageRequest, pollUntil, seenMessages, videoRequest } from "./helpers.ts";

let fake: FalFake;
let source: FalSource;

before(async () => {
  fake = await startFalFake({ apiKey: FAL_KEY, queueMs: 10, runMs: 30 });
  source = createFalSource({ name: "fal-main", baseUrl: fake.url, apiKey: FAL_KEY, timeoutMs: 2000 });
});

after(async () => {
  await source.close();
  await fake.close();
  assert.ok(seenMessages.length >= 15, `only ${seenMessages.length} messages were checked`);
  for (const message of seenMessages) assert.ok(!message.includes(FAL_KEY));
});

beforeEach(() => fake.reset());

describe("submit failures", () => {
  const cases: { marker: string; status: number; retryable: boolean; message: RegExp; errorType: string | null }[] = [
    { marker: "429", status: 429, retryable: true, message: /HTTP 429: Too many requests/, errorType: null },
    { marker: "500", status: 500, retryable: true, message: /HTTP 500: Internal server error \(internal_error\)/, errorType: "internal_error" },
    {
      marker: "422",
      status: 422,
      retryable: false,
      message: /HTTP 422: prompt: String should have at most 2500 characters \(string_too_long\)$/,
      errorType: "string_too_long",
    },
  ];
  for (const c of cases) {
    test(`[fake:${c.marker}] -> HTTP ${c.status}, retryable ${c.retryable}`, async () => {
      const err = await falFailure(source.submitVideo(videoRequest({ prompt: `fox [fake:${c.marker}]` })));
      assert.ok(err instanceof UpstreamError);
      assert.equal(err.kind, "http");
      assert.equal(err.status, c.status);
      assert.equal(err.retryable, c.retryable);
      assert.equal(err.errorType, c.errorType);
      assert.equal(err.contentRejected, false);
      assert.match(err.message, c.message);
      assert.equal(fake.submits().length, 1);
    });
  }

  test("the marker may come as the x-fal-fake header as well (documented for the fake)", async () => {
    const res = await fetch(`${fake.url}/fal-ai/veo3.1`, {
      method: "POST",
      headers: { authorization: `Key ${FAL_KEY}`, "content-type": "application/json", "x-fal-fake": "429" },
      body: JSON.stringify({ prompt: "plain" }),
    });
    assert.equal(res.status, 429);
  });

  test("a wrong key: 401, not retryable", async () => {
    const wrong = createFalSource({ name: "fal-wrong", baseUrl: fake.url, apiKey: "fal-wrong-key-000000000000" });
    try {
      const err = await falFailure(wrong.submitVideo(videoRequest()));
      assert.equal(err.status, 401);
      assert.equal(err.retryable, false);
      assert.ok(!err.message.includes("fal-wrong-key-000000000000"));
    } finally {
      await wrong.close();
    }
  });

  test("a missing Authorization header gets 401 from the fake", async () => {
    const res = await fetch(`${fake.url}/fal-ai/veo3.1`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    assert.equal(res.status, 401);
  });

  test("an upstream that echoes the key: the message is redacted", async () => {
    const err = await falFailure(source.submitVideo(videoRequest({ prompt: "x [fake:echo-key]" })));
    assert.equal(err.status, 401);
    assert.match(err.message, /Invalid key: \[redacted\]/);
  });

  test("a 200 that is not fal's JSON: malformed, retryable", async () => {
    const err = await falFailure(source.submitVideo(videoRequest({ prompt: "x [fake:malformed]" })));
    assert.equal(err.kind, "malformed");
    assert.equal(err.retryable, true);
  });

  test("no answer within timeoutMs: timeout, retryable", async () => {
    const quick = createFalSource({ name: "fal-quick", baseUrl: fake.url, apiKey: FAL_KEY, timeoutMs: 200 });
    try {
      const err = await falFailure(quick.submitVideo(videoRequest({ prompt: "x [fake:hang]" })));
      assert.equal(err.kind, "timeout");
      assert.equal(err.retryable, true);
    } finally {
      await quick.close();
    }
  });

  connectionRefusedTest({
    create: (baseUrl) => createFalSource({ name: "fal-dead", baseUrl, apiKey: FAL_KEY, timeoutMs: 1000 }),
    failure: (dead) => falFailure(dead.submitVideo(videoRequest())),
  });

  callerAbortTest((signal) => source.submitVideo(videoRequest({ prompt: "x [fake:hang]" }), signal));
});

describe("host check before the key is sent (D25)", () => {
  test("a submit answer with follow-up URLs on a foreign host is refused, not retryable", async () => {
    const err = await falFailure(source.submitVideo(videoRequest({ prompt: "x [fake:foreign-urls]" })));
    assert.equal(err.kind, "refused");
    assert.equal(err.retryable, false);
    assert.match(err.message, /https:\/\/foreign\.example/);
  });

  test("a stored handle pointing at another host (another port counts) is refused before any request", async () => {
    const recorder = await startRecorder("authorization", { status: "IN_PROGRESS", logs: null });
    try {
      const handle = await source.submitVideo(videoRequest());
      const tampered: UpstreamHandle = {
        ...handle,
        urls: Object.fromEntries(Object.entries(handle.urls).map(([k, v]) => [k, v.replace(fake.url, recorder.url)])),
      };
      for (const call of [() => source.poll(tampered), () => source.cancel(tampered)]) {
        const err = await falFailure(call());
        assert.equal(err.kind, "refused");
        assert.equal(err.retryable, false);
      }
      assert.equal(recorder.hits.length, 0, "nothing reached the foreign host");
    } finally {
      await recorder.close();
    }
  });

  test("a scheme downgrade of the base host is refused too", async () => {
    const s = createFalSource({ name: "fal-https", baseUrl: "https://queue.fal.run", apiKey: FAL_KEY });
    try {
      const err = await falFailure(
        s.poll({ source: "fal-https", requestId: "r", urls: { status_url: "http://queue.fal.run/a/b/requests/r/status", response_url: "http://queue.fal.run/a/b/requests/r", cancel_url: "http://queue.fal.run/a/b/requests/r/cancel" } }),
      );
      assert.equal(err.kind, "refused");
    } finally {
      await s.close();
    }
  });

  test("URLs with credentials are refused", async () => {
    const err = await falFailure(
      source.poll({ source: "fal-main", requestId: "r", urls: { status_url: `${fake.url.replace("http://", "http://user:pw@")}/a/b/requests/r/status`, response_url: "x", cancel_url: "y" } }),
    );
    assert.equal(err.kind, "refused");
    assert.equal(fake.requests.length, 0);
  });

  test("a trusted host receives the follow-up call with the key", async () => {
    const recorder = await startRecorder("authorization", { status: "IN_PROGRESS", logs: null });
    const s = createFalSource({ name: "fal-main", baseUrl: fake.url, apiKey: FAL_KEY, trustedHosts: [recorder.host] });
    try {
      const handle = await s.submitVideo(videoRequest());
      const moved: UpstreamHandle = { ...handle, urls: { ...handle.urls, status_url: handle.urls.status_url.replace(fake.url, recorder.url) } };
      assert.deepEqual(await s.poll(moved), { state: "running", progress: null });
      assert.equal(recorder.hits.length, 1);
      assert.equal(recorder.hits[0].key, `Key ${FAL_KEY}`);
    } finally {
      await s.close();
      await recorder.close();
    }
  });

  test("fal's own queue host is allowed over https whatever the base URL; the key goes nowhere else", () => {
    const api = createFalApi({ name: "fal-x", baseUrl: "http://127.0.0.1:9001", apiKey: FAL_KEY, trustedHosts: ["10.0.0.5:8443", "proxy.internal"] });
    try {
      const ok = [
        "http://127.0.0.1:9001/fal-ai/veo3.1/requests/1/status",
        "https://queue.fal.run/fal-ai/veo3.1/requests/1/status",
        "https://10.0.0.5:8443/x",
        "http://proxy.internal/x",
        "https://proxy.internal/x",
      ];
      for (const url of ok) assert.equal(api.checkUrl(url, "status_url").href, new URL(url).href);
      const refused = [
        "http://127.0.0.1:9002/x",
        "https://127.0.0.1:9001/x",
        "http://queue.fal.run/x",
        "https://evil.fal.run/x",
        "https://queue.fal.run.evil.example/x",
        "https://10.0.0.5/x",
        "https://proxy.internal:8443/x",
        "ftp://queue.fal.run/x",
        "not a url",
      ];
      for (const url of refused) {
        assert.throws(
          () => api.checkUrl(url, "status_url"),
          (err: unknown) => err instanceof FalError && err.kind === "refused" && !err.retryable,
          url,
        );
      }
      assert.equal(api.isDirectDownloadHost("http://127.0.0.1:9001/files/a.png"), true);
      assert.equal(api.isDirectDownloadHost("https://10.0.0.5:8443/a.png"), true);
      assert.equal(api.isDirectDownloadHost("https://v3.fal.media/files/a.png"), false);
    } finally {
      void api.close();
    }
  });

  test("a bad configuration stops the construction", () => {
    assert.throws(() => createFalSource({ name: "x", apiKey: "" }), RangeError);
    assert.throws(() => createFalSource({ name: "x", apiKey: FAL_KEY, baseUrl: "ftp://queue.fal.run" }), RangeError);
    assert.throws(() => createFalSource({ name: "x", apiKey: FAL_KEY, timeoutMs: 0 }), RangeError);
    assert.throws(() => createFalSource({ name: "x", apiKey: FAL_KEY, trustedHosts: ["http://x.example/path"] }), RangeError);
    assert.throws(() => createFalSource({ name: "", apiKey: FAL_KEY }), RangeError);
  });
});

describe("no key in any message", () => {
  test("every failure state and error seen in this file lacks the key", async () => {
    const handle = await source.submitImage(imageRequest({ model: "imgB-1.1-ultra", prompt: `x [fake:moderation]` }));
    const state = await pollUntil(source, handle);
    assert.equal(state.state, "failed");
    if (state.state === "failed") assertNoKey(state.message);
  });
});
