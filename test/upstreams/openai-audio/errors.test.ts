/**
 * How the OpenAI audio source fails: every misbehaviour marker of the fake mapped to a retryable or
 * non-retryable `OpenAICompatibleError` (api.ts failure table), network errors, timeouts, the caller's
 * abort, the host check (D25: the key goes to the base URL's host only), the configuration checks, and
 * the key never in any message or recorded request.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { closedPort, startRecorder } from "../../helpers/recorder.ts";
import { startOpenAIAudioFake } from "../../../fakes/openai-audio.ts";
import type { OpenAIAudioFake } from "../../../fakes/openai-audio.ts";
import { createOpenAIAudioSource, DEFAULT_AUDIO_TIMEOUT_MS, DEFAULT_OPENAI_AUDIO_BASE_URL } from "../../../src/upstreams/openai-compatible/audio.ts";
import type { OpenAIAudioSource } from "../../../src/upstreams/openai-compatible/audio.ts";
import type { AudioTextRequest } from "../../../src/upstreams/types.ts";
import { mp3, OPENAI_KEY, openAIFailure, seenMessages, transcribeRequest, understandRequest, wav } from "./helpers.ts";

let fake: OpenAIAudioFake;
let source: OpenAIAudioSource;

before(async () => {
  fake = await startOpenAIAudioFake({ apiKey: OPENAI_KEY, latencyMs: 0, slowMs: 60_000 });
  source = createOpenAIAudioSource({ name: "openai-audio", baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY, timeoutMs: 1500 });
});

after(async () => {
  // Belt and braces: every message any test looked at, and every recorded request, lacks the key.
  for (const message of seenMessages) assert.ok(!message.includes(OPENAI_KEY));
  await source.close();
  await fake.close();
});

beforeEach(() => fake.reset());

type Capability = "transcribe" | "understand";
const CAPABILITIES: readonly Capability[] = ["transcribe", "understand"];

/** One call of `capability` on `s` (the question carries no marker: markers come from `setMarkers`). */
function call(s: OpenAIAudioSource, capability: Capability, signal?: AbortSignal): Promise<{ text: string }> {
  return capability === "transcribe" ? s.transcribe(transcribeRequest(wav(0.5)), signal) : s.understand(understandRequest(mp3(0.5), "What is it?"), signal);
}

describe("markers, for every request", () => {
  const table: { marker: string; status: number | null; kind: string; retryable: boolean; code?: string; type?: string }[] = [
    { marker: "500", status: 500, kind: "http", retryable: true, type: "server_error" },
    { marker: "429", status: 429, kind: "http", retryable: true, code: "rate_limit_exceeded", type: "requests" },
    { marker: "400", status: 400, kind: "http", retryable: false, code: "invalid_value", type: "invalid_request_error" },
    { marker: "malformed", status: null, kind: "malformed", retryable: true },
    { marker: "echo-key", status: 401, kind: "http", retryable: false, code: "invalid_api_key", type: "invalid_request_error" },
  ];
  for (const capability of CAPABILITIES) {
    for (const row of table) {
      test(`${capability}, ${row.marker}: ${row.kind} ${row.status ?? ""}, retryable ${row.retryable}`, async () => {
        fake.setMarkers([row.marker]);
        const err = await openAIFailure(call(source, capability));
        assert.equal(err.kind, row.kind);
        assert.equal(err.status, row.status);
        assert.equal(err.retryable, row.retryable);
        assert.equal(err.unsupported, false);
        assert.equal(err.contentRejected, false);
        if (row.code !== undefined) assert.equal(err.code, row.code);
        if (row.type !== undefined) assert.equal(err.type, row.type);
        assert.equal(fake.requests.length, 1, "one request, no retry inside the adapter");
      });
    }

    test(`${capability}, hang: a retryable timeout after timeoutMs`, async () => {
      fake.setMarkers(["hang"]);
      const err = await openAIFailure(call(source, capability));
      assert.equal(err.kind, "timeout");
      assert.equal(err.retryable, true);
      assert.match(err.message, /no complete answer within 1500 ms/);
    });

    test(`${capability}, slow: the caller's abort wins and is rethrown as it is`, async () => {
      fake.setMarkers(["slow"]);
      const controller = new AbortController();
      const reason = new Error("the client disconnected");
      const pending = call(source, capability, controller.signal);
      // Abort once the fake holds the request (not after a fixed delay: on a busy machine the request may
      // not have arrived yet), so the abort cuts a call in flight.
      while (fake.requests.length === 0) await new Promise((r) => setTimeout(r, 5));
      controller.abort(reason);
      await assert.rejects(pending, (err) => err === reason);
      assert.equal(fake.requests.length, 1);
    });
  }

  test("echo-key: the key the fake echoed is redacted from the message", async () => {
    fake.setMarkers(["echo-key"]);
    const err = await openAIFailure(source.transcribe(transcribeRequest(wav(0.2))));
    assert.match(err.message, /HTTP 401: Incorrect API key provided: \[redacted\]/);
  });

  test("a marker in the question applies to that request only", async () => {
    const err = await openAIFailure(source.understand(understandRequest(wav(0.2), "Louder? [fake:429]")));
    assert.equal(err.status, 429);
    assert.equal(err.retryable, true);
    assert.deepEqual(await source.understand(understandRequest(wav(0.2), "Louder?")), {
      text: `Fake answer to "Louder?" about ${wav(0.2).byteLength} bytes of wav audio.`,
    });
  });

  test("the fake's 429 carries retry-after, as OpenAI's does", async () => {
    fake.setMarkers(["429"]);
    const res = await fetch(`${fake.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${OPENAI_KEY}`, "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get("retry-after"), "1");
    const body = (await res.json()) as { error: { message: string; type: string; param: unknown; code: string } };
    assert.deepEqual(Object.keys(body.error).sort(), ["code", "message", "param", "type"]);
  });
});

describe("refusals of the upstream itself", () => {
  test("a wrong key: 401 invalid_api_key, not retryable, the key masked and never whole", async () => {
    const s = createOpenAIAudioSource({ name: "openai-audio", baseUrl: `${fake.url}/v1`, apiKey: `${OPENAI_KEY}-wrong` });
    try {
      for (const capability of CAPABILITIES) {
        const err = await openAIFailure(call(s, capability));
        assert.equal(err.status, 401);
        assert.equal(err.code, "invalid_api_key");
        assert.equal(err.retryable, false);
      }
    } finally {
      await s.close();
    }
  });

  test("404 for an unknown path (a base URL without /v1): not retryable", async () => {
    const s = createOpenAIAudioSource({ name: "openai-audio", baseUrl: fake.url, apiKey: OPENAI_KEY });
    try {
      const err = await openAIFailure(s.transcribe(transcribeRequest(wav(0.2))));
      assert.equal(err.status, 404);
      assert.equal(err.retryable, false);
      assert.match(err.message, /Invalid URL \(POST \/audio\/transcriptions\)/);
    } finally {
      await s.close();
    }
  });

  test("a file whose name does not match its bytes is refused by the fake as OpenAI would (400)", async () => {
    // Not something the adapter sends: proves the fake checks what the adapter's naming is for.
    const form = new FormData();
    form.append("file", new Blob([mp3(0.2)], { type: "audio/wav" }), "audio.wav");
    form.append("model", "whisper-1");
    const res = await fetch(`${fake.url}/v1/audio/transcriptions`, { method: "POST", headers: { authorization: `Bearer ${OPENAI_KEY}` }, body: form });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: { param: string } }).error.param, "file");
  });
});

describe("transport failures", () => {
  test("nothing listening: a retryable network error", async () => {
    const port = await closedPort();
    const dead = createOpenAIAudioSource({ name: "openai-dead", baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: OPENAI_KEY, timeoutMs: 1000 });
    try {
      for (const capability of CAPABILITIES) {
        const err = await openAIFailure(call(dead, capability));
        assert.equal(err.kind, "network");
        assert.equal(err.retryable, true);
        assert.equal(err.status, null);
      }
    } finally {
      await dead.close();
    }
  });
});

describe("where the key goes (D25)", () => {
  test("to the base URL's host, path prefix kept, in the Bearer header only", async () => {
    const recorder = await startRecorder("authorization", { text: "recorded" });
    const s = createOpenAIAudioSource({ name: "openai-proxy", baseUrl: `${recorder.url}/proxy/v1`, apiKey: OPENAI_KEY });
    try {
      assert.deepEqual(await s.transcribe(transcribeRequest(wav(0.2))), { text: "recorded" });
      assert.deepEqual(recorder.hits, [{ path: "/proxy/v1/audio/transcriptions", key: `Bearer ${OPENAI_KEY}` }]);
    } finally {
      await s.close();
      await recorder.close();
    }
  });

  test("no request reaches another host, trusted or not: the endpoints are under the base URL", async () => {
    const other = await startRecorder("authorization", { text: "wrong host" });
    const s = createOpenAIAudioSource({ name: "openai-audio", baseUrl: `${fake.url}/v1`, apiKey: OPENAI_KEY, trustedHosts: [other.host] });
    try {
      await s.transcribe(transcribeRequest(wav(0.2)));
      await s.understand(understandRequest(wav(0.2), "?"));
      assert.equal(other.hits.length, 0);
      assert.deepEqual(fake.requests.map((r) => r.path), ["/v1/audio/transcriptions", "/v1/chat/completions"]);
    } finally {
      await s.close();
      await other.close();
    }
  });

  test("a base URL that could carry the key or credentials elsewhere stops the start", () => {
    for (const baseUrl of ["https://user:pass@api.openai.com/v1", "https://api.openai.com/v1?key=1", "ftp://api.openai.com/v1", "not a url"]) {
      assert.throws(() => createOpenAIAudioSource({ name: "x", baseUrl, apiKey: OPENAI_KEY }), RangeError, baseUrl);
    }
    assert.throws(() => createOpenAIAudioSource({ name: "x", apiKey: OPENAI_KEY, trustedHosts: ["https://x/"] }), RangeError);
    assert.throws(() => createOpenAIAudioSource({ name: "x", apiKey: " " }), RangeError);
    assert.throws(() => createOpenAIAudioSource({ name: "", apiKey: OPENAI_KEY }), RangeError);
    assert.throws(() => createOpenAIAudioSource({ name: "x", apiKey: OPENAI_KEY, timeoutMs: 0 }), RangeError);
  });

  test("defaults: OpenAI's base URL and name; close() is idempotent", async () => {
    const s = createOpenAIAudioSource({ name: "openai", apiKey: OPENAI_KEY });
    assert.equal(s.name, "openai");
    assert.equal(DEFAULT_OPENAI_AUDIO_BASE_URL, "https://api.openai.com/v1");
    assert.equal(DEFAULT_AUDIO_TIMEOUT_MS, 120_000);
    await Promise.all([s.close(), s.close()]);
  });
});

describe("the key is never recorded", () => {
  test("the fake records the auth scheme only, and no body holds the key", async () => {
    const requests: AudioTextRequest[] = [transcribeRequest(wav(0.2)), understandRequest(wav(0.2), "?")];
    await source.transcribe(requests[0]);
    await source.understand(requests[1]);
    assert.equal(fake.requests.length, 2);
    for (const r of fake.requests) {
      assert.equal(r.headers.authorization, "Bearer [redacted]");
      assert.ok(!JSON.stringify(r).includes(OPENAI_KEY));
    }
  });
});
