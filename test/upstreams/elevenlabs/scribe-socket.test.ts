/**
 * The ElevenLabs realtime transcription adapter (D43, src/upstreams/elevenlabs/scribe-socket.ts) against
 * the fake's Scribe socket: the URL and messages it sends, the events it reports (one `committed` per
 * segment, with words and language only when asked), VAD commits, errors that go on and errors that end
 * the stream, opening failures mapped to {@link UpstreamError}s, and no key in any event.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import { createElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import type { ElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import { ElevenLabsSocketError } from "../../../src/upstreams/elevenlabs/socket.ts";
import type { TranscriptionEvent, TranscriptionStream } from "../../../src/upstreams/realtime.ts";
import { closedPort } from "../../helpers/recorder.ts";
import { EL_KEY, elFailure } from "./helpers.ts";
import { eventLog, pcmSilence, pcmTone, transcriptionRequest } from "./realtime-helpers.ts";

let fake: ElevenLabsFake;
let source: ElevenLabsSource;
const streams: TranscriptionStream[] = [];

before(async () => {
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
  source = createElevenLabsSource({ name: "el-stt", baseUrl: fake.url, apiKey: EL_KEY, timeoutMs: 3000 });
});

after(async () => {
  for (const s of streams) await s.close();
  await source.close();
  await fake.close();
});

beforeEach(() => {
  fake.reset();
  fake.setMarkers([]);
});

async function open(extra: Parameters<typeof transcriptionRequest>[0] = {}) {
  const log = eventLog();
  const stream = await source.openTranscriptionStream(transcriptionRequest(extra), log.on);
  streams.push(stream);
  return { stream, log };
}

/** Every event's text without the key (D25: no key in anything the caller sees). */
function assertNoKeyIn(events: readonly TranscriptionEvent[]): void {
  const text = JSON.stringify(events, (_k, v: unknown) => (v instanceof Error ? v.message : v));
  assert.ok(!text.includes(EL_KEY));
}

describe("a session", () => {
  test("manual commits: the URL, the messages sent, a partial then ONE committed (no words, no language) per segment", async () => {
    const { stream, log } = await open();
    const socket = fake.sockets[0]!;
    assert.equal(socket.kind, "speech-to-text");
    assert.equal(socket.path, "/v1/speech-to-text/realtime?model_id=scribe_v2_realtime&audio_format=pcm_16000&commit_strategy=manual&include_timestamps=false&include_language_detection=false");
    assert.equal(socket.headers["xi-api-key"], "[redacted]");
    stream.send(pcmTone(0.9), false);
    stream.send(new Uint8Array(0), true);
    const committed = await log.until("committed");
    assert.deepEqual(committed, { type: "committed", text: "hello world", words: null, languageCode: null });
    assert.deepEqual(log.events[0], { type: "partial", text: "hello world" });
    stream.send(pcmTone(0.4), true);
    assert.deepEqual(await log.until("committed", 2), { type: "committed", text: "this", words: null, languageCode: null });
    assert.equal(log.events.filter((e) => e.type === "committed").length, 2);
    const sent = socket.sent as Record<string, unknown>[];
    assert.deepEqual(Object.keys(sent[0]!), ["message_type", "audio_base_64", "commit", "sample_rate"]);
    assert.deepEqual({ ...sent[0], audio_base_64: (sent[0]!.audio_base_64 as string).length }, { message_type: "input_audio_chunk", audio_base_64: Buffer.from(pcmTone(0.9)).toString("base64").length, commit: false, sample_rate: 16000 });
    assert.deepEqual(sent[1], { message_type: "input_audio_chunk", audio_base_64: "", commit: true, sample_rate: 16000 });
    await stream.close();
    assert.deepEqual(log.events.at(-1), { type: "closed", error: null });
  });

  test("timestamps asked: the committed event is the one with words (seconds from the stream's start), exactly once", async () => {
    const { stream, log } = await open({ includeTimestamps: true });
    assert.match(fake.sockets[0]!.path, /include_timestamps=true&include_language_detection=false/);
    stream.send(pcmSilence(0.5), false);
    stream.send(pcmTone(0.8), true);
    const c = await log.until("committed");
    assert.equal(c.type === "committed" && c.text, "hello world");
    assert.ok(c.type === "committed" && c.words !== null);
    if (c.type !== "committed" || c.words === null) return;
    assert.equal(c.languageCode, null, "detection was not asked");
    assert.deepEqual(c.words.map((w) => w.type), ["word", "spacing", "word"]);
    assert.ok(Math.abs(c.words[0]!.start - 0.5) < 0.02, `starts after the silence: ${c.words[0]!.start}`);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(log.events.filter((e) => e.type === "committed").length, 1, "committed_transcript and its _with_timestamps make one event");
  });

  test("language detection asked: the language comes with the committed event, words only if timestamps were asked", async () => {
    const { stream, log } = await open({ includeLanguageDetection: true, languageCode: "de" });
    assert.match(fake.sockets[0]!.path, /include_language_detection=true&language_code=de$/);
    stream.send(pcmTone(0.4), true);
    assert.deepEqual(await log.until("committed"), { type: "committed", text: "hello", words: null, languageCode: "de" });
    const both = await open({ includeLanguageDetection: true, includeTimestamps: true });
    both.stream.send(pcmTone(0.4), true);
    const c = await both.log.until("committed");
    assert.ok(c.type === "committed" && c.languageCode === "en" && c.words !== null && c.words.length === 1);
  });

  test("vad: the query carries the settings; silence after speech commits by itself", async () => {
    const { stream, log } = await open({ commitStrategy: "vad", vad: { silenceThresholdSecs: 0.5, threshold: 0.3, minSpeechDurationMs: 100, minSilenceDurationMs: 120 } });
    assert.match(fake.sockets[0]!.path, /commit_strategy=vad&include_timestamps=false&include_language_detection=false&vad_silence_threshold_secs=0\.5&vad_threshold=0\.3&min_speech_duration_ms=100&min_silence_duration_ms=120$/);
    stream.send(pcmTone(0.8), false);
    stream.send(pcmSilence(0.3), false);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(log.events.filter((e) => e.type === "committed").length, 0, "not yet: 0.3 s of silence");
    stream.send(pcmSilence(0.3), false);
    assert.deepEqual(await log.until("committed"), { type: "committed", text: "hello world", words: null, languageCode: null });
  });

  test("ulaw_8000 and pcm_48000: sample_rate follows the format", async () => {
    for (const [format, rate] of [["ulaw_8000", 8000], ["pcm_48000", 48000]] as const) {
      fake.reset();
      const { stream, log } = await open({ audioFormat: format });
      const audio = format === "ulaw_8000" ? Buffer.alloc(4000, 0x10) : pcmTone(0.5, 48000);
      stream.send(audio, true);
      await log.until("committed");
      assert.equal((fake.sockets[0]!.sent[0] as { sample_rate: number }).sample_rate, rate);
      await stream.close();
    }
  });
});

describe("errors inside a session", () => {
  test("a commit with too little audio: an error event (commit_throttled), the session goes on", async () => {
    const { stream, log } = await open();
    stream.send(new Uint8Array(0), true);
    const e = await log.until("error");
    assert.deepEqual(e, {
      type: "error",
      kind: "commit_throttled",
      message: "Commit request ignored: only 0.00s of uncommitted audio. You need at least 0.3s of uncommitted audio before committing.",
    });
    stream.send(pcmTone(0.4), true);
    await log.until("committed");
    await stream.close();
    assert.deepEqual(log.events.at(-1), { type: "closed", error: null }, "the earlier error does not fail the close");
  });

  test("an odd number of PCM bytes: input_error, the session goes on", async () => {
    const { stream, log } = await open();
    stream.send(new Uint8Array(3), false);
    const e = await log.until("error");
    assert.equal(e.type === "error" ? e.kind : null, "input_error");
    stream.send(pcmTone(0.4), true);
    await log.until("committed");
  });

  test("[stt-transcriber-error]: an error event, then closed with a retryable UpstreamError from it", async () => {
    fake.setMarkers(["stt-transcriber-error"]);
    const { stream, log } = await open();
    stream.send(pcmTone(0.2), false);
    const closed = await log.until("closed");
    assert.equal(log.events[0]!.type, "error");
    assert.ok(closed.type === "closed" && closed.error instanceof ElevenLabsSocketError);
    if (closed.type !== "closed" || !(closed.error instanceof ElevenLabsSocketError)) return;
    assert.equal(closed.error.retryable, true);
    assert.equal(closed.error.errorStatus, "transcriber_error");
    assert.equal(closed.error.closeCode, 1011);
    await new Promise((r) => setTimeout(r, 30));
    stream.send(pcmTone(0.2), false);
    assert.equal(log.events.at(-1)!.type, "closed", "nothing after closed");
  });

  test("[stt-drop]: closed with a retryable network error (1006)", async () => {
    fake.setMarkers(["stt-drop"]);
    const { stream, log } = await open();
    stream.send(pcmTone(0.2), false);
    const closed = await log.until("closed");
    assert.ok(closed.type === "closed" && closed.error instanceof ElevenLabsSocketError && closed.error.kind === "network" && closed.error.retryable);
  });

  test("[stt-quota]: quota_exceeded then closed, retryable (another account may have quota)", async () => {
    fake.setMarkers(["stt-quota"]);
    const { stream, log } = await open();
    stream.send(pcmTone(0.2), false);
    const closed = await log.until("closed");
    assert.ok(closed.type === "closed" && closed.error instanceof ElevenLabsSocketError && closed.error.errorStatus === "quota_exceeded" && closed.error.retryable);
    assertNoKeyIn(log.events);
  });
});

describe("opening", () => {
  test("a bad VAD setting: the server's invalid_request before session_started, not retryable", async () => {
    const err = await elFailure(source.openTranscriptionStream(transcriptionRequest({ commitStrategy: "vad", vad: { silenceThresholdSecs: 5, threshold: 0.4, minSpeechDurationMs: 100, minSilenceDurationMs: 100 } }), () => {}));
    assert.ok(err instanceof ElevenLabsSocketError);
    assert.equal(err.errorStatus, "invalid_request");
    assert.equal(err.retryable, false);
    assert.match(err.message, /vad_silence_threshold_secs must be a number between 0\.3 and 3\. \(invalid_request\)$/);
  });

  test("a key ElevenLabs refuses: auth_error, not retryable", async () => {
    const src = createElevenLabsSource({ name: "el-stt", baseUrl: fake.url, apiKey: "sk_wrong_key_0000" });
    const err = await elFailure(src.openTranscriptionStream(transcriptionRequest(), () => {}));
    assert.equal(err.errorStatus, "auth_error");
    assert.equal(err.retryable, false);
    await src.close();
  });

  test("[stt-rate-limited]: rate_limited instead of session_started, retryable", async () => {
    fake.setMarkers(["stt-rate-limited"]);
    const err = await elFailure(source.openTranscriptionStream(transcriptionRequest(), () => {}));
    assert.equal(err.errorStatus, "rate_limited");
    assert.equal(err.retryable, true);
  });

  test("429 at the upgrade: retryable; refused connection: network, retryable", async () => {
    fake.setMarkers(["429"]);
    const err = await elFailure(source.openTranscriptionStream(transcriptionRequest(), () => {}));
    assert.equal(err.status, 429);
    assert.equal(err.retryable, true);
    const port = await closedPort();
    const dead = createElevenLabsSource({ name: "el-stt", baseUrl: `http://127.0.0.1:${port}`, apiKey: EL_KEY });
    const err2 = await elFailure(dead.openTranscriptionStream(transcriptionRequest(), () => {}));
    assert.equal(err2.kind, "network");
    assert.equal(err2.retryable, true);
    await dead.close();
  });

  test("no upgrade in time: timeout, retryable", async () => {
    fake.setMarkers(["hang"]);
    const src = createElevenLabsSource({ name: "el-stt", baseUrl: fake.url, apiKey: EL_KEY, connectTimeoutMs: 150 });
    const err = await elFailure(src.openTranscriptionStream(transcriptionRequest(), () => {}));
    assert.equal(err.kind, "timeout");
    assert.equal(err.retryable, true);
    await src.close();
  });

  test("a model ElevenLabs does not transcribe: unsupported, nothing sent", async () => {
    const err = await elFailure(source.openTranscriptionStream(transcriptionRequest({ model: "host2-audio-understand-1" }), () => {}));
    assert.equal(err.kind, "unsupported");
    assert.equal(fake.requests.length, 0);
  });

  test("the caller's abort while opening is rethrown as it is", async () => {
    fake.setMarkers(["hang"]);
    const controller = new AbortController();
    const reason = new Error("client left");
    setTimeout(() => controller.abort(reason), 50);
    await assert.rejects(source.openTranscriptionStream(transcriptionRequest(), () => {}, controller.signal), (err) => err === reason);
  });
});
