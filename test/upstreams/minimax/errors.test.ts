/**
 * Failure mapping of the MiniMax adapter: every `base_resp` code class (retryable, content, voice gone,
 * refused), HTTP failures, malformed answers, timeouts and network errors on the fake and on loopback
 * servers; the caller's abort; the host check before the key is sent (D25); bad configuration; and no
 * key in any message (docs/architecture.md invariant 8).
 */
import { startRecorder } from "../../helpers/recorder.ts";
import { connectionRefusedTest } from "../transport-failures.ts";
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createMiniMaxApi } from "../../../src/upstreams/minimax/api.ts";
import { startMiniMaxFake } from "../../../fakes/minimax.ts";
import type { MiniMaxFake } from "../../../fakes/minimax.ts";
import { createMiniMaxSource } from "../../../src/upstreams/minimax/source.ts";
import type { MiniMaxSource } from "../../../src/upstreams/minimax/source.ts";
import { createMiniMaxVideoSource } from "../../../src/upstreams/minimax/video-source.ts";
import { UpstreamError } from "../../../src/upstreams/types.ts";
import { MM_KEY, mmFailure, musicRequest, seenMessages, speechRequest, videoRequest } from "./helpers.ts";

let fake: MiniMaxFake;
let source: MiniMaxSource;

before(async () => {
  fake = await startMiniMaxFake({ apiKey: MM_KEY });
  source = createMiniMaxSource({ name: "mm-main", baseUrl: fake.url, apiKey: MM_KEY, timeoutMs: 3000 });
});

after(async () => {
  await source.close();
  await fake.close();
  assert.ok(seenMessages.length >= 20, `only ${seenMessages.length} messages were checked`);
  for (const message of seenMessages) assert.ok(!message.includes(MM_KEY));
});

beforeEach(() => fake.reset());

describe("base_resp codes (HTTP 200) and HTTP failures on every call", () => {
  const cases: { marker: string; retryable: boolean; code: number | null; status: number; contentRejected?: boolean; message: RegExp }[] = [
    { marker: "1002", retryable: true, code: 1002, status: 200, message: /MiniMax error 1002: rate limit exceeded\(RPM\)$/ },
    { marker: "1026", retryable: false, code: 1026, status: 200, contentRejected: true, message: /MiniMax error 1026: input new_sensitive$/ },
    { marker: "2013", retryable: false, code: 2013, status: 200, message: /MiniMax error 2013: invalid params, marker$/ },
    { marker: "500", retryable: true, code: 1000, status: 500, message: /HTTP 500: unknown error \(1000\)$/ },
    { marker: "429", retryable: true, code: 1002, status: 429, message: /HTTP 429: rate limit exceeded\(RPM\) \(1002\)$/ },
  ];
  const calls: [string, (m: string) => Promise<unknown>][] = [
    ["speech", (m) => source.speech(speechRequest({ text: `hello [fake:${m}]` }))],
    ["streamed speech", (m) => source.speech(speechRequest({ text: `hello [fake:${m}]`, stream: true }))],
    ["music", (m) => source.music(musicRequest({ prompt: `pop [fake:${m}]` }))],
    ["design", (m) => source.designVoice({ description: `deep [fake:${m}]`, name: null, previewText: null, gender: null, ageGroup: null, simulate: null })],
  ];
  for (const c of cases) {
    for (const [label, call] of calls) {
      test(`[fake:${c.marker}] on ${label}: retryable ${c.retryable}`, async () => {
        const err = await mmFailure(call(c.marker));
        assert.ok(err instanceof UpstreamError);
        assert.equal(err.retryable, c.retryable);
        assert.equal(err.code, c.code);
        assert.equal(err.status, c.status);
        assert.equal(err.contentRejected, c.contentRejected ?? false);
        assert.equal(err.voiceUnavailable, false);
        assert.match(err.message, c.message);
        assert.match(err.message, /^mm-main: /);
      });
    }
  }

  test("markers for every request: listing and clone fail too", async () => {
    fake.setMarkers(["1002"]);
    const list = await mmFailure(source.listVoices());
    assert.equal(list.code, 1002);
    const clone = await mmFailure(source.cloneVoice({ audio: new Uint8Array(10), format: "mp3", durationSec: 10, name: null, simulate: null }));
    assert.equal(clone.code, 1002);
    assert.equal(fake.submits().length, 2, "the clone stopped at the upload");
    fake.reset();
    assert.ok((await source.listVoices()).length > 0, "reset() restores the markers option");
  });

  test("an unknown voice on speech: 2042, voiceUnavailable, not retryable", async () => {
    const err = await mmFailure(source.speech(speechRequest({ voiceId: "Nobody_Knows_This_Voice" })));
    assert.equal(err.code, 2042);
    assert.equal(err.voiceUnavailable, true);
    assert.equal(err.retryable, false);
  });

  test("the code table, code by code (20132 is voiceUnavailable on speech only)", () => {
    const api = createMiniMaxApi({ name: "mm-t", apiKey: MM_KEY });
    try {
      for (const code of [1000, 1001, 1002, 1013, 1024, 1033, 1039, 1041]) assert.equal(api.baseRespError(code, "x", { what: "t" }).retryable, true, String(code));
      for (const code of [1004, 2049, 1008, 2013, 2037, 2039, 1028, 2042, 20132, 9999]) {
        const err = api.baseRespError(code, "x", { what: "t" });
        assert.equal(err.retryable, false, String(code));
        assert.equal(err.voiceUnavailable, false, String(code));
      }
      for (const code of [1026, 1027]) assert.equal(api.baseRespError(code, "x", { what: "t" }).contentRejected, true);
      for (const code of [2042, 20132]) assert.equal(api.baseRespError(code, "x", { what: "t2a_v2", speech: true }).voiceUnavailable, true);
      assert.equal(api.httpError(503, undefined, "", { what: "t" }).retryable, true);
      assert.equal(api.httpError(408, undefined, "", { what: "t" }).retryable, true);
      assert.equal(api.httpError(404, undefined, "", { what: "t" }).retryable, false);
    } finally {
      void api.close();
    }
  });

  test("a 200 that is an HTML page or bad hex: malformed, retryable", async () => {
    for (const req of [speechRequest({ text: "x [fake:malformed]" }), speechRequest({ text: "x [fake:bad-hex]" })]) {
      const err = await mmFailure(source.speech(req));
      assert.equal(err.kind, "malformed");
      assert.equal(err.retryable, true);
    }
  });
});

describe("the key", () => {
  test("a wrong key: 200 with base_resp 1004, not retryable, the key not in the message", async () => {
    const wrong = createMiniMaxSource({ name: "mm-wrong", baseUrl: fake.url, apiKey: "mm-wrong-key-0000000000000" });
    try {
      const err = await mmFailure(wrong.speech(speechRequest()));
      assert.equal(err.code, 1004);
      assert.equal(err.status, 200);
      assert.equal(err.retryable, false);
      assert.ok(!err.message.includes("mm-wrong-key-0000000000000"));
    } finally {
      await wrong.close();
    }
  });

  test("an upstream that echoes the key: the message is redacted", async () => {
    const err = await mmFailure(source.speech(speechRequest({ text: "x [fake:echo-key]" })));
    assert.equal(err.code, 1004);
    assert.match(err.message, /secret key: \[redacted\]/);
  });

  test("the fake records the auth scheme only", async () => {
    await source.listVoices();
    assert.equal(fake.requests[0].headers.authorization, "Bearer [redacted]");
    assert.ok(!JSON.stringify(fake.requests).includes(MM_KEY));
  });
});

describe("transport", () => {
  test("no answer within timeoutMs: timeout, retryable (speech, streamed speech, music)", async () => {
    const quick = createMiniMaxSource({ name: "mm-quick", baseUrl: fake.url, apiKey: MM_KEY, timeoutMs: 200 });
    try {
      for (const p of [
        quick.speech(speechRequest({ text: "x [fake:hang]" })),
        quick.speech(speechRequest({ text: "x [fake:hang]", stream: true })),
        quick.music(musicRequest({ prompt: "x [fake:hang]" })),
      ]) {
        const err = await mmFailure(p);
        assert.equal(err.kind, "timeout");
        assert.equal(err.retryable, true);
      }
    } finally {
      await quick.close();
    }
  });

  connectionRefusedTest({
    create: (baseUrl) => createMiniMaxSource({ name: "mm-dead", baseUrl, apiKey: MM_KEY, timeoutMs: 1000 }),
    failure: (dead) => mmFailure(dead.listVoices()),
  });

  test("the caller's abort is rethrown as it is (whole and streamed)", async () => {
    for (const stream of [false, true]) {
      const controller = new AbortController();
      const reason = new Error("caller went away");
      const pending = source.speech(speechRequest({ text: "x [fake:hang]", stream }), controller.signal);
      setTimeout(() => controller.abort(reason), 30);
      await assert.rejects(pending, (err) => err === reason);
    }
  });
});

describe("host check and configuration (D25)", () => {
  test("the key goes to the base host; a trusted host is a direct download host, MiniMax's CDN is not", async () => {
    const recorder = await startRecorder("authorization", { base_resp: { status_code: 0, status_msg: "success" }, system_voice: [] });
    const s = createMiniMaxSource({ name: "mm-rec", baseUrl: recorder.url, apiKey: MM_KEY });
    const v = createMiniMaxVideoSource({ name: "mm-v", baseUrl: fake.url, apiKey: MM_KEY, trustedHosts: ["cdn.internal.example:8443"] });
    try {
      assert.deepEqual(await s.listVoices(), []);
      assert.equal(recorder.hits[0].key, `Bearer ${MM_KEY}`);
      assert.equal(recorder.hits[0].path, "/v1/get_voice");
      assert.equal(v.isDirectDownloadHost(`${fake.url}/download/1/output.mp4`), true);
      assert.equal(v.isDirectDownloadHost("https://cdn.internal.example:8443/x.mp4"), true);
      assert.equal(v.isDirectDownloadHost("https://public-cdn-video-data-algeng.oss-cn-wulanchabu.aliyuncs.com/x.mp4"), false);
      assert.equal(v.isDirectDownloadHost(fake.url.replace("127.0.0.1", "localhost")), false, "another port or name is another host");
      assert.equal(createMiniMaxVideoSource({ name: "d", apiKey: MM_KEY }).isDirectDownloadHost("https://api.minimax.io/v1/x"), true);
    } finally {
      await s.close();
      await v.close();
      await recorder.close();
    }
  });

  test("a base path is kept (an operator's proxy under a prefix)", async () => {
    const recorder = await startRecorder("authorization", { base_resp: { status_code: 0, status_msg: "success" }, system_voice: [] });
    const s = createMiniMaxSource({ name: "mm-prefix", baseUrl: `${recorder.url}/minimax/`, apiKey: MM_KEY });
    try {
      await s.listVoices();
      assert.equal(recorder.hits[0].path, "/minimax/v1/get_voice");
    } finally {
      await s.close();
      await recorder.close();
    }
  });

  test("a bad configuration stops the construction of either factory", () => {
    for (const create of [createMiniMaxSource, createMiniMaxVideoSource]) {
      assert.throws(() => create({ name: "x", apiKey: "" }), RangeError);
      assert.throws(() => create({ name: "x", apiKey: MM_KEY, baseUrl: "ftp://api.minimax.io" }), RangeError);
      assert.throws(() => create({ name: "x", apiKey: MM_KEY, baseUrl: "https://user:pw@api.minimax.io" }), RangeError);
      assert.throws(() => create({ name: "x", apiKey: MM_KEY, baseUrl: "https://api.minimax.io/?GroupId=1" }), RangeError);
      assert.throws(() => create({ name: "x", apiKey: MM_KEY, timeoutMs: 0 }), RangeError);
      assert.throws(() => create({ name: "x", apiKey: MM_KEY, trustedHosts: ["https://x.example/path"] }), RangeError);
      assert.throws(() => create({ name: "", apiKey: MM_KEY }), RangeError);
      assert.throws(() => create({ name: "x", apiKey: MM_KEY, models: { "alpha-v3": "speech-02-hd" } }), RangeError);
      assert.throws(() => create({ name: "x", apiKey: MM_KEY, models: { "beta-music": "music 2.5/../x" } }), RangeError);
      // One entry may serve beta and vidC: both factories take every key of both.
      assert.doesNotThrow(() => void create({ name: "x", apiKey: MM_KEY, models: { "beta-music": "music-2.6", "vidC-02-768p": "MiniMax-Hailuo-2.3" } }).close());
    }
  });

  test("no key in video failures either", async () => {
    const v = createMiniMaxVideoSource({ name: "mm-v", baseUrl: fake.url, apiKey: MM_KEY });
    try {
      const err = await mmFailure(v.submitVideo(videoRequest({ prompt: "x [fake:echo-key]" })));
      assert.match(err.message, /\[redacted\]/);
    } finally {
      await v.close();
    }
  });
});
