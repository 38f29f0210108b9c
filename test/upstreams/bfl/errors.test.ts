/**
 * Failure mapping of the BFL adapter against the fake and real loopback servers: every class of failure
 * on a submit mapped to a retryable or non-retryable {@link BflError}, the caller's abort, the host check
 * that runs before the key is sent (D25), and no key in any message (docs/architecture.md invariant 8).
 */
import { startRecorder } from "../../helpers/recorder.ts";
import { callerAbortTest, connectionRefusedTest } from "../transport-failures.ts";
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startBflFake } from "../../../fakes/bfl.ts";
import type { BflFake } from "../../../fakes/bfl.ts";
import { createBflSource } from "../../../src/upstreams/bfl/source.ts";
import type { BflSource } from "../../../src/upstreams/bfl/source.ts";
import { UpstreamError } from "../../../src/upstreams/types.ts";
import type { UpstreamHandle } from "../../../src/upstreams/types.ts";
import { BFL_KEY, bflFailure, bflImage, pollUntil, seenMessages } from "./helpers.ts";

let fake: BflFake;
let source: BflSource;

before(async () => {
  fake = await startBflFake({ apiKey: BFL_KEY, pendingMs: 30 });
  source = createBflSource({ name: "bfl-main", baseUrl: fake.url, apiKey: BFL_KEY, timeoutMs: 2000 });
});

after(async () => {
  await source.close();
  await fake.close();
  assert.ok(seenMessages.length >= 15, `only ${seenMessages.length} messages were checked`);
  for (const message of seenMessages) assert.ok(!message.includes(BFL_KEY));
});

beforeEach(() => fake.reset());

describe("submit failures", () => {
  const cases: { marker: string; status: number; retryable: boolean; message: RegExp }[] = [
    { marker: "429", status: 429, retryable: true, message: /HTTP 429: Too many concurrent requests$/ },
    { marker: "500", status: 500, retryable: true, message: /HTTP 500: Internal Server Error$/ },
    { marker: "402", status: 402, retryable: false, message: /HTTP 402: Insufficient credits/ },
    { marker: "422", status: 422, retryable: false, message: /HTTP 422: width: Input should be greater than or equal to 64 \(greater_than_equal\)$/ },
  ];
  for (const c of cases) {
    test(`[fake:${c.marker}] -> HTTP ${c.status}, retryable ${c.retryable}`, async () => {
      const err = await bflFailure(source.submitImage(bflImage({ prompt: `lighthouse [fake:${c.marker}]` })));
      assert.ok(err instanceof UpstreamError);
      assert.equal(err.kind, "http");
      assert.equal(err.status, c.status);
      assert.equal(err.retryable, c.retryable);
      assert.equal(err.contentRejected, false);
      assert.match(err.message, c.message);
      assert.equal(fake.submits().length, 1);
    });
  }

  test("markers may come for every submit from the option", async () => {
    const failing = await startBflFake({ markers: ["500"] });
    const s = createBflSource({ name: "bfl-down", baseUrl: failing.url, apiKey: BFL_KEY });
    try {
      const err = await bflFailure(s.submitImage(bflImage()));
      assert.equal(err.status, 500);
    } finally {
      await s.close();
      await failing.close();
    }
  });

  test("a wrong key: 401, not retryable; no key at all: 403 from the fake", async () => {
    const wrong = createBflSource({ name: "bfl-wrong", baseUrl: fake.url, apiKey: "bfl-wrong-key-00000000000" });
    try {
      const err = await bflFailure(wrong.submitImage(bflImage()));
      assert.equal(err.status, 401);
      assert.equal(err.retryable, false);
      assert.ok(!err.message.includes("bfl-wrong-key-00000000000"));
    } finally {
      await wrong.close();
    }
    const res = await fetch(`${fake.url}/v1/flux-2-pro`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    assert.equal(res.status, 403);
  });

  test("an upstream that echoes the key: the message is redacted", async () => {
    const err = await bflFailure(source.submitImage(bflImage({ prompt: "x [fake:echo-key]" })));
    assert.equal(err.status, 401);
    assert.match(err.message, /Invalid API key: \[redacted\]/);
  });

  test("a 200 that is not BFL's JSON: malformed, retryable", async () => {
    const err = await bflFailure(source.submitImage(bflImage({ prompt: "x [fake:malformed]" })));
    assert.equal(err.kind, "malformed");
    assert.equal(err.retryable, true);
  });

  test("no answer within timeoutMs: timeout, retryable", async () => {
    const quick = createBflSource({ name: "bfl-quick", baseUrl: fake.url, apiKey: BFL_KEY, timeoutMs: 200 });
    try {
      const err = await bflFailure(quick.submitImage(bflImage({ prompt: "x [fake:hang]" })));
      assert.equal(err.kind, "timeout");
      assert.equal(err.retryable, true);
    } finally {
      await quick.close();
    }
  });

  connectionRefusedTest({
    create: (baseUrl) => createBflSource({ name: "bfl-dead", baseUrl, apiKey: BFL_KEY, timeoutMs: 1000 }),
    failure: (dead) => bflFailure(dead.submitImage(bflImage())),
  });

  callerAbortTest((signal) => source.submitImage(bflImage({ prompt: "x [fake:hang]" }), signal));
});

describe("host check before the key is sent (D25)", () => {
  test("a submit answer whose polling_url is on a foreign host is refused, not retryable", async () => {
    const err = await bflFailure(source.submitImage(bflImage({ prompt: "x [fake:foreign-polling]" })));
    assert.equal(err.kind, "refused");
    assert.equal(err.retryable, false);
    assert.match(err.message, /https:\/\/foreign\.example \(polling_url\)/);
    assert.ok(!err.message.includes("get_result"), "the URL's path and query are not copied");
  });

  test("a stored handle pointing at another host (another port counts) is refused before any request", async () => {
    const recorder = await startRecorder("x-key", { id: "t", status: "Pending", result: null, progress: 0.5 });
    try {
      const handle = await source.submitImage(bflImage({ model: "imgB-1.1-ultra", n: 2 }));
      // Only the second part is moved: the first must not be polled either.
      const tampered: UpstreamHandle = { ...handle, urls: { ...handle.urls, "polling_url.1": handle.urls["polling_url.1"].replace(fake.url, recorder.url) } };
      fake.reset();
      const err = await bflFailure(source.poll(tampered));
      assert.equal(err.kind, "refused");
      assert.equal(err.retryable, false);
      assert.equal(recorder.hits.length, 0, "nothing reached the foreign host");
      assert.equal(fake.requests.length, 0, "no part was polled");
    } finally {
      await recorder.close();
    }
  });

  test("a BFL regional host is allowed only over https: a downgraded polling URL is refused", async () => {
    const s = createBflSource({ name: "bfl-https", apiKey: BFL_KEY });
    try {
      const err = await bflFailure(s.poll({ source: "bfl-https", requestId: "r", urls: { polling_url: "http://api.eu2.bfl.ai/v1/get_result?id=r" } }));
      assert.equal(err.kind, "refused");
    } finally {
      await s.close();
    }
  });

  test("a trusted host receives the polling call with the key", async () => {
    const recorder = await startRecorder("x-key", { id: "t", status: "Pending", result: null, progress: 0.5 });
    const s = createBflSource({ name: "bfl-main", baseUrl: fake.url, apiKey: BFL_KEY, trustedHosts: [recorder.host] });
    try {
      const handle = await s.submitImage(bflImage());
      const moved: UpstreamHandle = { ...handle, urls: { polling_url: handle.urls.polling_url.replace(fake.url, recorder.url) } };
      assert.deepEqual(await s.poll(moved), { state: "running", progress: 0.5 });
      assert.equal(recorder.hits.length, 1);
      assert.equal(recorder.hits[0].key, BFL_KEY);
      assert.match(recorder.hits[0].path, /^\/v1\/get_result\?id=/);
    } finally {
      await s.close();
      await recorder.close();
    }
  });

  test("a bad configuration stops the construction", () => {
    assert.throws(() => createBflSource({ name: "x", apiKey: "" }), RangeError);
    assert.throws(() => createBflSource({ name: "x", apiKey: BFL_KEY, baseUrl: "ftp://api.bfl.ai" }), RangeError);
    assert.throws(() => createBflSource({ name: "x", apiKey: BFL_KEY, baseUrl: "https://api.bfl.ai/?region=eu" }), RangeError);
    assert.throws(() => createBflSource({ name: "x", apiKey: BFL_KEY, timeoutMs: 0 }), RangeError);
    assert.throws(() => createBflSource({ name: "x", apiKey: BFL_KEY, trustedHosts: ["https://x.example/path"] }), RangeError);
    assert.throws(() => createBflSource({ name: "", apiKey: BFL_KEY }), RangeError);
  });
});

describe("no key in any message", () => {
  test("every failure state and error seen in this file lacks the key", async () => {
    for (const marker of ["moderation", "error", "request-moderated"]) {
      const state = await pollUntil(source, await source.submitImage(bflImage({ prompt: `x [fake:${marker}]` })));
      assert.equal(state.state, "failed");
    }
    const poll500 = await source.submitImage(bflImage({ prompt: "x [fake:poll-500]" }));
    await bflFailure(source.poll(poll500));
  });
});
