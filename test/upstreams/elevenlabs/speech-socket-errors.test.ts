/**
 * Failures of the ElevenLabs realtime speech adapter (D42) mapped to {@link UpstreamError}s: the fake's
 * socket markers and refusals, connect failures and timeouts, upgrades answered with HTTP, the key kept
 * on the base URL's host (an upgrade redirected elsewhere is a failure), the caller's abort, and no key
 * in any message.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { startElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import { createElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import type { ElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import { ElevenLabsSocketError } from "../../../src/upstreams/elevenlabs/socket.ts";
import type { SpeechStream } from "../../../src/upstreams/realtime.ts";
import { UpstreamError } from "../../../src/upstreams/types.ts";
import { closedPort } from "../../helpers/recorder.ts";
import { EL_KEY, elFailure, seenMessages } from "./helpers.ts";
import { piecesOf, speechStreamRequest } from "./realtime-helpers.ts";

let fake: ElevenLabsFake;
let source: ElevenLabsSource;
const opened: SpeechStream[] = [];

before(async () => {
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
  source = createElevenLabsSource({ name: "el-rt", baseUrl: fake.url, apiKey: EL_KEY, timeoutMs: 2000 });
});

after(async () => {
  for (const s of opened) await s.close();
  await source.close();
  await fake.close();
  for (const message of seenMessages) assert.ok(!message.includes(EL_KEY));
});

beforeEach(() => {
  fake.reset();
  fake.setMarkers([]);
  fake.setRetired([]);
});

async function open(src: ElevenLabsSource = source, extra: Parameters<typeof speechStreamRequest>[0] = {}): Promise<SpeechStream> {
  const s = await src.openSpeechStream(speechStreamRequest(extra));
  opened.push(s);
  return s;
}

/** A chunk's failure, with the pieces yielded before it. */
async function chunkFailure(stream: SpeechStream, text: string): Promise<{ err: ElevenLabsSocketError; pieces: number }> {
  let pieces = 0;
  const err = await elFailure(
    (async () => {
      for await (const _p of stream.synthesize(text)) pieces++;
    })(),
  );
  assert.ok(err instanceof ElevenLabsSocketError, `expected an ElevenLabsSocketError, got ${err.name}`);
  return { err, pieces };
}

describe("the fake's chunk markers", () => {
  const cases = [
    { marker: "ws-fail", pieces: 0, retryable: true, kind: "http", closeCode: 1008, errorStatus: "something_went_wrong", message: /We are sorry, something went wrong/ },
    { marker: "ws-fail-after-audio", pieces: 1, retryable: true, kind: "http", closeCode: 1008, errorStatus: "something_went_wrong", message: /something went wrong/ },
    { marker: "ws-drop", pieces: 0, retryable: true, kind: "network", closeCode: 1006, errorStatus: null, message: /socket lost \(1006\)/ },
    { marker: "ws-1011", pieces: 0, retryable: true, kind: "http", closeCode: 1011, errorStatus: null, message: /closed by ElevenLabs \(1011: Internal server error\)/ },
  ] as const;
  for (const c of cases) {
    test(`[fake:${c.marker}] -> ${c.kind}, retryable, ${c.pieces} piece(s) before the failure`, async () => {
      const stream = await open();
      const { err, pieces } = await chunkFailure(stream, `Some words to speak here [fake:${c.marker}] `);
      assert.equal(pieces, c.pieces);
      assert.equal(err.retryable, c.retryable);
      assert.equal(err.kind, c.kind);
      assert.equal(err.closeCode, c.closeCode);
      assert.equal(err.errorStatus, c.errorStatus);
      assert.equal(err.voiceUnavailable || err.modelNotFound, false);
      assert.match(err.message, /^el-rt: text-to-speech socket/);
      assert.match(err.message, c.message);
    });
  }

  test("[fake:ws-hang]: no message within the idle timeout (timeoutMs) -> timeout, retryable", async () => {
    const src = createElevenLabsSource({ name: "el-rt", baseUrl: fake.url, apiKey: EL_KEY, timeoutMs: 300 });
    const stream = await open(src);
    const { err, pieces } = await chunkFailure(stream, "Never spoken [fake:ws-hang] ");
    assert.equal(pieces, 0);
    assert.equal(err.kind, "timeout");
    assert.equal(err.retryable, true);
    await src.close();
  });

  test("[fake:echo-key]: ElevenLabs echoing the key: redacted, not retryable", async () => {
    const stream = await open();
    const { err } = await chunkFailure(stream, "Echo [fake:echo-key] ");
    assert.match(err.message, /Invalid API key: \[redacted\] \(invalid_api_key\)/);
    assert.equal(err.retryable, false);
  });
});

describe("refusals at the first message", () => {
  test("an unknown model (a dropped id sent by an override): modelNotFound naming it, not retryable", async () => {
    const src = createElevenLabsSource({ name: "el-rt", baseUrl: fake.url, apiKey: EL_KEY, models: { "alpha-flash-v2-5": "eleven_turbo_v2_5" } });
    const stream = await open(src);
    const { err } = await chunkFailure(stream, "Hello. ");
    assert.equal(err.modelNotFound, true);
    assert.equal(err.upstreamModel, "eleven_turbo_v2_5");
    assert.equal(err.retryable, false);
    assert.equal(err.errorStatus, "model_not_found");
    assert.match(err.message, /ElevenLabs has no model "eleven_turbo_v2_5"/);
    await src.close();
  });

  test("a retired model: modelNotFound", async () => {
    fake.setRetired(["eleven_flash_v2_5"]);
    const { err } = await chunkFailure(await open(), "Hello. ");
    assert.equal(err.modelNotFound, true);
    assert.equal(err.upstreamModel, "eleven_flash_v2_5");
  });

  test("a voice ElevenLabs does not have: voiceUnavailable, not retryable", async () => {
    const { err } = await chunkFailure(await open(source, { voiceId: "NoSuchVoice000000000" }), "Hello. ");
    assert.equal(err.voiceUnavailable, true);
    assert.equal(err.retryable, false);
    assert.match(err.message, /A voice with the voice_id NoSuchVoice000000000 was not found\. \(voice_not_found\)/);
  });

  test("voice settings out of range: invalid_voice_settings, not retryable", async () => {
    const { err } = await chunkFailure(await open(source, { voiceSettings: { speed: 1.5 } }), "Hello. ");
    assert.equal(err.errorStatus, "invalid_voice_settings");
    assert.equal(err.retryable, false);
    assert.equal(err.voiceUnavailable || err.modelNotFound, false);
  });

  test("quota exhausted at ElevenLabs (another account may have credits): retryable", async () => {
    fake.setMarkers(["quota"]);
    const { err } = await chunkFailure(await open(), "Hello. ");
    assert.equal(err.errorStatus, "quota_exceeded");
    assert.equal(err.retryable, true);
  });
});

describe("connecting", () => {
  test("connection refused: network, retryable", async () => {
    const port = await closedPort();
    const src = createElevenLabsSource({ name: "el-rt", baseUrl: `http://127.0.0.1:${port}`, apiKey: EL_KEY });
    const err = await elFailure(src.openSpeechStream(speechStreamRequest()));
    assert.equal(err.kind, "network");
    assert.equal(err.retryable, true);
    await src.close();
  });

  test("an upgrade never answered: timeout after connectTimeoutMs, retryable", async () => {
    fake.setMarkers(["hang"]);
    const src = createElevenLabsSource({ name: "el-rt", baseUrl: fake.url, apiKey: EL_KEY, connectTimeoutMs: 200 });
    const started = Date.now();
    const err = await elFailure(src.openSpeechStream(speechStreamRequest()));
    assert.equal(err.kind, "timeout");
    assert.equal(err.retryable, true);
    assert.ok(Date.now() - started < 2000);
    assert.match(err.message, /not connected within 200 ms/);
    await src.close();
  });

  const statuses = [
    { marker: "429", status: 429, retryable: true, message: /HTTP 429: We are sorry, the system is experiencing heavy traffic.* \(system_busy\)$/ },
    { marker: "500", status: 500, retryable: true, message: /HTTP 500: Internal Server Error$/ },
  ];
  for (const c of statuses) {
    test(`the upgrade answered ${c.status}: retryable`, async () => {
      fake.setMarkers([c.marker]);
      const err = await elFailure(source.openSpeechStream(speechStreamRequest()));
      assert.equal(err.kind, "http");
      assert.equal(err.status, c.status);
      assert.equal(err.retryable, c.retryable);
      assert.match(err.message, /^el-rt: text-to-speech socket upgrade: /);
      assert.match(err.message, c.message);
    });
  }

  test("a key ElevenLabs refuses: the upgrade answered 403, not retryable", async () => {
    const src = createElevenLabsSource({ name: "el-rt", baseUrl: fake.url, apiKey: "sk_wrong_key_0000" });
    const err = await elFailure(src.openSpeechStream(speechStreamRequest()));
    assert.equal(err.status, 403);
    assert.equal(err.retryable, false);
    await src.close();
  });

  test("eleven_v3 has no socket: unsupported before connecting (nothing reaches ElevenLabs)", async () => {
    const err = await elFailure(source.openSpeechStream(speechStreamRequest({ model: "alpha-v3" })));
    assert.equal(err.kind, "unsupported");
    assert.equal(err.unsupported, true);
    assert.equal(err.retryable, false);
    const other = await elFailure(source.openSpeechStream(speechStreamRequest({ model: "alpha-music" })));
    assert.equal(other.kind, "unsupported");
    assert.equal(fake.requests.length, 0);
  });

  test("the caller's abort while connecting is rethrown as it is", async () => {
    fake.setMarkers(["hang"]);
    const controller = new AbortController();
    const reason = new Error("caller went away");
    setTimeout(() => controller.abort(reason), 50);
    await assert.rejects(source.openSpeechStream(speechStreamRequest(), controller.signal), (err) => err === reason);
  });

  test("the caller's abort during a chunk is rethrown as it is", async () => {
    const stream = await open();
    const controller = new AbortController();
    const reason = new Error("session closed");
    setTimeout(() => controller.abort(reason), 50);
    await assert.rejects(piecesOf(stream, "Wait forever [fake:ws-hang] ", controller.signal), (err) => err === reason);
  });

  test("close() during a chunk ends it with an error; a closed stream refuses chunks", async () => {
    const stream = await open();
    const pending = piecesOf(stream, "Never answered [fake:ws-hang] ");
    await new Promise((r) => setTimeout(r, 50));
    await stream.close();
    await assert.rejects(pending, (err) => err instanceof UpstreamError && /was closed/.test(err.message));
    await assert.rejects(piecesOf(stream, "Hello. "), /is closed/);
  });
});

describe("the key stays on the base URL's host (D25)", () => {
  /** A server that answers every upgrade with `status` and `headers`, counting them. */
  async function upgradeAnswerer(status: number, headers: Record<string, string>, body = ""): Promise<{ url: string; hits: string[]; close: () => Promise<void> }> {
    const hits: string[] = [];
    const server = http.createServer((_req, res) => res.end());
    server.on("upgrade", (req, socket: Socket) => {
      hits.push(typeof req.headers["xi-api-key"] === "string" ? "key" : "no key");
      const head = [`HTTP/1.1 ${status} X`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), `content-length: ${Buffer.byteLength(body)}`, "connection: close", "", ""].join("\r\n");
      socket.end(head + body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      hits,
      close: async () => {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }

  test("an upgrade redirected to another host is a failure; the other host never sees a request", async () => {
    const redirect = await upgradeAnswerer(302, { location: `${fake.url.replace("http", "ws")}/v1/text-to-speech/x/multi-stream-input` });
    const src = createElevenLabsSource({ name: "el-rt", baseUrl: redirect.url, apiKey: EL_KEY });
    const err = await elFailure(src.openSpeechStream(speechStreamRequest()));
    assert.equal(err.status, 302);
    assert.equal(err.retryable, false);
    assert.deepEqual(redirect.hits, ["key"]);
    assert.equal(fake.requests.length, 0, "the fake (another host) got nothing");
    await src.close();
    await redirect.close();
  });

  test("an upgrade answered 400 model_not_found or voice_not_found in ElevenLabs' HTTP shape maps as HTTP calls do", async () => {
    const model = await upgradeAnswerer(400, { "content-type": "application/json" }, JSON.stringify({ detail: { status: "model_not_found", message: "A model with model ID x does not exist." } }));
    const src = createElevenLabsSource({ name: "el-rt", baseUrl: model.url, apiKey: EL_KEY });
    const err = await elFailure(src.openSpeechStream(speechStreamRequest()));
    assert.equal(err.modelNotFound, true);
    assert.equal(err.upstreamModel, "eleven_flash_v2_5");
    await src.close();
    await model.close();
    const voice = await upgradeAnswerer(404, { "content-type": "application/json" }, JSON.stringify({ detail: { status: "voice_not_found", message: "gone" } }));
    const src2 = createElevenLabsSource({ name: "el-rt", baseUrl: voice.url, apiKey: EL_KEY });
    const err2 = await elFailure(src2.openSpeechStream(speechStreamRequest()));
    assert.equal(err2.voiceUnavailable, true);
    assert.equal(err2.retryable, false);
    await src2.close();
    await voice.close();
  });

  test("a server sending a message that is not JSON: malformed, retryable", async () => {
    const server = http.createServer();
    const { WebSocketServer } = await import("ws");
    const wss = new WebSocketServer({ server });
    wss.on("connection", (ws) => ws.on("message", () => ws.send("<html>not json</html>")));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
    const src = createElevenLabsSource({ name: "el-rt", baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: EL_KEY });
    const stream = await src.openSpeechStream(speechStreamRequest());
    const { err } = await chunkFailure(stream, "Hello. ");
    assert.equal(err.kind, "malformed");
    assert.equal(err.retryable, true);
    await stream.close();
    await src.close();
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((resolve) => wss.close(() => server.close(() => resolve())));
  });
});
