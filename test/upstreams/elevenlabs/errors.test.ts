/**
 * Failure mapping of the ElevenLabs source against the fake and real loopback servers: every
 * misbehaviour marker mapped to a retryable or non-retryable {@link ElevenLabsError} (and
 * `voiceUnavailable`), timeouts, connection errors, the caller's abort, the key staying on the base
 * URL's host (D25: redirects are not followed), bad configurations, and no key in any message.
 */
import { startRecorder } from "../../helpers/recorder.ts";
import { callerAbortTest, connectionRefusedTest } from "../transport-failures.ts";
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { startElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import { createElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import type { ElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import { encodeAudio } from "../../../src/upstreams/simulator/encode.ts";
import { UpstreamError } from "../../../src/upstreams/types.ts";
import { EL_KEY, elFailure, musicRequest, RACHEL, seenMessages, sfxRequest, speechRequest } from "./helpers.ts";

let fake: ElevenLabsFake;
let source: ElevenLabsSource;

before(async () => {
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
  source = createElevenLabsSource({ name: "el-main", baseUrl: fake.url, apiKey: EL_KEY, timeoutMs: 5000 });
});

after(async () => {
  await source.close();
  await fake.close();
  assert.ok(seenMessages.length >= 20, `only ${seenMessages.length} messages were checked`);
  for (const message of seenMessages) assert.ok(!message.includes(EL_KEY));
});

beforeEach(() => {
  fake.reset();
  fake.setMarkers([]);
});

describe("markers on speech", () => {
  const cases: { marker: string; status: number; retryable: boolean; voiceUnavailable: boolean; message: RegExp }[] = [
    { marker: "500", status: 500, retryable: true, voiceUnavailable: false, message: /HTTP 500: Internal Server Error$/ },
    { marker: "429", status: 429, retryable: true, voiceUnavailable: false, message: /HTTP 429: We are sorry, the system is experiencing heavy traffic.* \(system_busy\)$/ },
    { marker: "quota", status: 401, retryable: true, voiceUnavailable: false, message: /HTTP 401: This request exceeds your quota of 10000\..* \(quota_exceeded\)$/ },
    { marker: "voice_gone", status: 400, retryable: false, voiceUnavailable: true, message: /HTTP 400: A voice with the voice_id 21m00Tcm4TlvDq8ikWAM was not found\. \(voice_not_found\)$/ },
    { marker: "422", status: 422, retryable: false, voiceUnavailable: false, message: /HTTP 422: text: String should have at most 5000 characters \(string_too_long\)$/ },
  ];
  for (const c of cases) {
    test(`[fake:${c.marker}] -> HTTP ${c.status}, retryable ${c.retryable}, voiceUnavailable ${c.voiceUnavailable}`, async () => {
      const err = await elFailure(source.speech(speechRequest({ text: `Hello [fake:${c.marker}]` })));
      assert.ok(err instanceof UpstreamError);
      assert.equal(err.kind, "http");
      assert.equal(err.status, c.status);
      assert.equal(err.retryable, c.retryable);
      assert.equal(err.voiceUnavailable, c.voiceUnavailable);
      assert.equal(err.contentRejected, false);
      assert.match(err.message, /^el-main: text-to-speech: /);
      assert.match(err.message, c.message);
      assert.equal(fake.requests.length, 1, "one request, no retry inside the adapter");
    });
  }

  test("an unknown voice: 400 voice_not_found -> voiceUnavailable (the gateway answers 410)", async () => {
    const err = await elFailure(source.speech(speechRequest({ voiceId: "AAAAAAAAAAAAAAAAAAAA" })));
    assert.equal(err.status, 400);
    assert.equal(err.errorStatus, "voice_not_found");
    assert.equal(err.voiceUnavailable, true);
    assert.equal(err.retryable, false);
  });

  test("a 200 with an HTML page instead of audio: malformed, retryable", async () => {
    const err = await elFailure(source.speech(speechRequest({ text: "x [fake:malformed]" })));
    assert.equal(err.kind, "malformed");
    assert.equal(err.retryable, true);
    assert.match(err.message, /text\/html instead of audio/);
  });
});

describe("markers on music, sfx and listings", () => {
  test("music: 429 and 500 retryable, quota retryable, 422 not; voice_gone is never voiceUnavailable outside speech", async () => {
    const expect = { "429": true, "500": true, quota: true, "422": false, voice_gone: false } as const;
    for (const [marker, retryable] of Object.entries(expect)) {
      const err = await elFailure(source.music(musicRequest({ prompt: `jazz [fake:${marker}]` })));
      assert.equal(err.retryable, retryable, marker);
      assert.equal(err.voiceUnavailable, false, marker);
      assert.match(err.message, /^el-main: music: HTTP /);
    }
  });

  test("sfx: the markers of the prompt apply; malformed is retryable", async () => {
    const busy = await elFailure(source.sfx(sfxRequest({ prompt: "thunder [fake:429]" })));
    assert.equal(busy.status, 429);
    assert.equal(busy.retryable, true);
    const html = await elFailure(source.sfx(sfxRequest({ prompt: "thunder [fake:malformed]" })));
    assert.equal(html.kind, "malformed");
  });

  test("markers for every request (setMarkers, the markers option), voice listing included", async () => {
    fake.setMarkers(["quota"]);
    const err = await elFailure(source.listVoices());
    assert.equal(err.status, 401);
    assert.equal(err.retryable, true);
    fake.setMarkers([]);
    assert.equal((await source.speech(speechRequest({ text: "ok" }))).kind, "bytes");

    const failing = await startElevenLabsFake({ markers: ["500"] });
    const s = createElevenLabsSource({ name: "el-down", baseUrl: failing.url, apiKey: EL_KEY });
    try {
      assert.equal((await elFailure(s.sfx(sfxRequest()))).status, 500);
    } finally {
      await s.close();
      await failing.close();
    }
  });
});

describe("keys", () => {
  test("a wrong key: 401 invalid_api_key, not retryable, the wrong key not in the message", async () => {
    const wrong = createElevenLabsSource({ name: "el-wrong", baseUrl: fake.url, apiKey: "sk_wrong-0000000000000000" });
    try {
      const err = await elFailure(wrong.speech(speechRequest()));
      assert.equal(err.status, 401);
      assert.equal(err.errorStatus, "invalid_api_key");
      assert.equal(err.retryable, false);
      assert.ok(!err.message.includes("sk_wrong-0000000000000000"));
    } finally {
      await wrong.close();
    }
    const res = await fetch(`${fake.url}/v2/voices`);
    assert.equal(res.status, 401, "no key at all");
  });

  test("an upstream that echoes the key: the message is redacted", async () => {
    const err = await elFailure(source.speech(speechRequest({ text: "x [fake:echo-key]" })));
    assert.equal(err.status, 401);
    assert.match(err.message, /Invalid API key: \[redacted\] \(invalid_api_key\)$/);
  });
});

describe("transport failures", () => {
  test("no answer within timeoutMs: timeout, retryable (speech, music and listing alike)", async () => {
    const quick = createElevenLabsSource({ name: "el-quick", baseUrl: fake.url, apiKey: EL_KEY, timeoutMs: 200 });
    try {
      for (const call of [() => quick.speech(speechRequest({ text: "x [fake:hang]" })), () => quick.music(musicRequest({ prompt: "x [fake:hang]" }))]) {
        const err = await elFailure(call());
        assert.equal(err.kind, "timeout");
        assert.equal(err.retryable, true);
      }
      fake.setMarkers(["slow"]);
      const err = await elFailure(quick.listVoices());
      assert.equal(err.kind, "timeout");
    } finally {
      await quick.close();
    }
  });

  test("a slow answer within the timeout is served", async () => {
    const result = await source.sfx(sfxRequest({ prompt: "slow wind [fake:slow]", format: "pcm_16000", durationSec: 1 }));
    assert.equal(result.durationSec, 1);
  });

  test("latencyMs delays every answer, the answer is unchanged", async () => {
    const lagging = await startElevenLabsFake({ latencyMs: 100 });
    const s = createElevenLabsSource({ name: "el-lag", baseUrl: lagging.url, apiKey: EL_KEY });
    try {
      const started = Date.now();
      const result = await s.speech(speechRequest({ format: "pcm_16000", text: "lag" }));
      assert.ok(Date.now() - started >= 95);
      assert.equal(result.kind === "bytes" && result.durationSec, 0.3);
    } finally {
      await s.close();
      await lagging.close();
    }
  });

  connectionRefusedTest({
    create: (baseUrl) => createElevenLabsSource({ name: "el-dead", baseUrl, apiKey: EL_KEY, timeoutMs: 1000 }),
    failure: (dead) => elFailure(dead.speech(speechRequest())),
  });

  callerAbortTest((signal) => source.speech(speechRequest({ text: "x [fake:hang]" }), signal));

  test("an answer of the right status that is not audio: JSON, empty, an MP3 without a frame", async () => {
    const bodies: { type: string; body: string | Buffer }[] = [
      { type: "application/json", body: JSON.stringify({ audio_base64: "AAAA" }) },
      { type: "audio/mpeg", body: "" },
      { type: "audio/mpeg", body: Buffer.from("not an mp3 at all, just text in disguise") },
    ];
    for (const { type, body } of bodies) {
      const server = http.createServer((_req, res) => {
        res.writeHead(200, { "content-type": type });
        res.end(body);
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
      const s = createElevenLabsSource({ name: "el-odd", baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: EL_KEY });
      try {
        const err = await elFailure(s.speech(speechRequest()));
        assert.equal(err.kind, "malformed", type);
        assert.equal(err.retryable, true);
      } finally {
        await s.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }
  });
});

describe("the key stays on the base URL's host (D25)", () => {
  test("a redirect to another host is not followed: the other host gets nothing, the call fails, not retryable", async () => {
    const recorder = await startRecorder("xi-api-key", { voices: [], has_more: false });
    const redirector = http.createServer((req, res) => {
      res.writeHead(307, { location: `${recorder.url}${req.url ?? "/"}` });
      res.end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", () => resolve()));
    const s = createElevenLabsSource({ name: "el-redirect", baseUrl: `http://127.0.0.1:${(redirector.address() as AddressInfo).port}`, apiKey: EL_KEY });
    try {
      const speech = await elFailure(s.speech(speechRequest()));
      assert.equal(speech.status, 307);
      assert.equal(speech.retryable, false);
      const listing = await elFailure(s.listVoices());
      assert.equal(listing.status, 307);
      const music = await elFailure(s.music(musicRequest()));
      assert.equal(music.status, 307);
      assert.equal(recorder.hits.length, 0, "nothing reached the other host");
    } finally {
      await s.close();
      redirector.closeAllConnections();
      await new Promise<void>((resolve) => redirector.close(() => resolve()));
      await recorder.close();
    }
  });

  test("every request of every call goes to the base URL's host with the key header", async () => {
    const recorder = await startRecorder("xi-api-key", { voices: [], has_more: false });
    const s = createElevenLabsSource({ name: "el-rec", baseUrl: recorder.url, apiKey: EL_KEY });
    try {
      await s.listVoices();
      assert.deepEqual(recorder.hits.map((h) => h.path), ["/v2/voices?page_size=100", "/v1/shared-voices?page_size=100&page=0"]);
      assert.ok(recorder.hits.every((h) => h.key === EL_KEY));
    } finally {
      await s.close();
      await recorder.close();
    }
  });
});

describe("configuration", () => {
  test("a bad configuration stops the construction", () => {
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: "" }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: "   " }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: EL_KEY, baseUrl: "not a url" }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: EL_KEY, baseUrl: "ftp://api.elevenlabs.io" }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: EL_KEY, baseUrl: "https://user:pw@api.elevenlabs.io" }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: EL_KEY, baseUrl: "https://api.elevenlabs.io/?q=1" }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: EL_KEY, timeoutMs: 0 }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: EL_KEY, timeoutMs: -5 }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: EL_KEY, timeoutMs: Number.NaN }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: EL_KEY, connectTimeoutMs: -1 }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: EL_KEY, trustedHosts: ["https://x.example/path"] }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "x", apiKey: EL_KEY, models: { "imgB-2-pro": "flux" } }), RangeError);
    assert.throws(() => createElevenLabsSource({ name: "", apiKey: EL_KEY }), RangeError);
  });

  test("the default base URL is ElevenLabs' API; a given dispatcher is used for every call and not closed", async () => {
    const { MockAgent } = await import("undici");
    const agent = new MockAgent();
    agent.disableNetConnect();
    const pool = agent.get("https://api.elevenlabs.io");
    const seen: { path: string; key: unknown }[] = [];
    const tone = encodeAudio(new Float32Array(16000).fill(0.25), 16000, "pcm_16000");
    pool
      .intercept({ path: (p) => p.startsWith("/v1/"), method: "POST" })
      .reply(200, (opts) => {
        seen.push({ path: opts.path, key: (opts.headers as Record<string, string>)["xi-api-key"] });
        return Buffer.from(tone);
      }, { headers: { "content-type": "audio/pcm" } })
      .times(2);
    const s = createElevenLabsSource({ name: "el-default", apiKey: EL_KEY, dispatcher: agent });
    try {
      assert.equal(s.name, "el-default");
      assert.equal((await s.speech(speechRequest({ format: "pcm_16000" }))).kind, "bytes");
      const sfx = await s.sfx(sfxRequest({ format: "pcm_16000" }));
      assert.equal(sfx.durationSec, 1);
      assert.deepEqual(seen.map((x) => x.path), [`/v1/text-to-speech/${RACHEL}?output_format=pcm_16000`, "/v1/sound-generation?output_format=pcm_16000"]);
      assert.ok(seen.every((x) => x.key === EL_KEY));
    } finally {
      await s.close();
    }
    // The source did not close the dispatcher it was given: a new interceptor still answers.
    pool.intercept({ path: "/probe", method: "GET" }).reply(200, "ok");
    const res = await agent.request({ origin: "https://api.elevenlabs.io", path: "/probe", method: "GET" });
    assert.equal(await res.body.text(), "ok");
    await agent.close();
  });
});

describe("no key in any message", () => {
  test("every error seen in this file lacks the key", async () => {
    for (const marker of ["500", "429", "quota", "voice_gone", "422", "malformed", "echo-key"]) {
      await elFailure(source.speech(speechRequest({ voiceId: RACHEL, text: `${EL_KEY} [fake:${marker}]` })));
    }
  });
});
