/**
 * The fake's realtime sockets proven faithful by the vendors' own clients (upstreams.md, "Testing without
 * the internet"): LiveKit's ElevenLabs TTS plugin (`@livekit/agents-plugin-elevenlabs`, which speaks the
 * multi-stream-input socket in production) and ElevenLabs' SDK `ScribeRealtime`
 * (`client.speechToText.realtime.connect`), both development dependencies, pointed at the fake.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { initializeLogger } from "@livekit/agents";
import { TTS } from "@livekit/agents-plugin-elevenlabs";
import { AudioFormat, CommitStrategy, ElevenLabsClient, RealtimeEvents } from "@elevenlabs/elevenlabs-js";
import { startElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import { FAKE_SECONDS_PER_CHAR } from "../../../fakes/elevenlabs-realtime.ts";
import { EL_KEY, RACHEL } from "./helpers.ts";
import { pcmSilence, pcmTone } from "./realtime-helpers.ts";

let fake: ElevenLabsFake;

before(async () => {
  initializeLogger({ pretty: false, level: "warn" });
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
});

after(async () => {
  await fake.close();
});

beforeEach(() => {
  fake.reset();
  fake.setMarkers([]);
});

describe("LiveKit's ElevenLabs TTS plugin against the multi-stream-input fake", () => {
  /** Streams `texts` through one `tts.stream()`; returns the audio's samples, frames and the final flags. */
  async function speak(tts: TTS, texts: string[]): Promise<{ samples: number; frames: number; finals: number }> {
    const stream = tts.stream();
    for (const t of texts) stream.pushText(t);
    stream.flush();
    stream.endInput();
    let samples = 0;
    let frames = 0;
    let finals = 0;
    for await (const ev of stream) {
      if (typeof ev === "symbol") break;
      frames++;
      samples += ev.frame.samplesPerChannel;
      assert.equal(ev.frame.sampleRate, 22050);
      if (ev.final) {
        finals++;
        break;
      }
    }
    return { samples, frames, finals };
  }

  test("pushText, flush, endInput: the whole text's audio, one final frame; the plugin's messages as it writes them", async () => {
    const tts = new TTS({ apiKey: EL_KEY, baseURL: `${fake.url}/v1`, voiceId: RACHEL, model: "eleven_flash_v2_5", encoding: "pcm_22050", voiceSettings: { stability: 0.5, similarity_boost: 0.75 } });
    const text = "Hello from LiveKit. This is the second sentence. ";
    const out = await speak(tts, [text]);
    await tts.close();
    assert.equal(out.finals, 1);
    assert.ok(Math.abs(out.samples / 22050 - text.length * FAKE_SECONDS_PER_CHAR) < 0.02, `${out.samples / 22050} s`);
    const [socket] = fake.sockets;
    assert.equal(socket!.kind, "multi-stream-input");
    assert.match(socket!.path, new RegExp(`^/v1/text-to-speech/${RACHEL}/multi-stream-input\\?model_id=eleven_flash_v2_5&output_format=pcm_22050&.*inactivity_timeout=180.*&sync_alignment=true&auto_mode=true$`));
    const sent = socket!.sent as Record<string, unknown>[];
    const ctx = sent[0]!.context_id;
    assert.deepEqual(sent[0], { text: " ", voice_settings: { stability: 0.5, similarity_boost: 0.75 }, context_id: ctx });
    assert.deepEqual(sent.at(-1), { context_id: ctx, close_context: true });
    assert.ok(sent.some((m) => m.flush === true && typeof m.text === "string" && m.text.length > 1));
    assert.deepEqual(socket!.received.at(-1), { isFinal: true, contextId: ctx });
    assert.ok(!JSON.stringify(fake.sockets).includes(EL_KEY));
  });

  test("two streams on one connection: two contexts, both whole", async () => {
    const tts = new TTS({ apiKey: EL_KEY, baseURL: `${fake.url}/v1`, voiceId: RACHEL, model: "eleven_multilingual_v2", encoding: "pcm_22050" });
    const a = await speak(tts, ["First utterance here. "]);
    const b = await speak(tts, ["And the second one. "]);
    await tts.close();
    assert.equal(a.finals + b.finals, 2);
    assert.equal(fake.sockets.length, 1, "the plugin keeps its connection");
    const contexts = new Set((fake.sockets[0]!.sent as { context_id?: string }[]).map((m) => m.context_id).filter((c) => c !== undefined));
    assert.equal(contexts.size, 2);
  });

  test("the plugin's default model (eleven_turbo_v2_5, dropped by ElevenLabs) is refused at the first message", async () => {
    const tts = new TTS({ apiKey: EL_KEY, baseURL: `${fake.url}/v1`, voiceId: RACHEL, encoding: "pcm_22050" });
    const stream = tts.stream({ connOptions: { maxRetry: 0, retryIntervalMs: 10, timeoutMs: 2000 } });
    stream.pushText("Hello. ");
    stream.endInput();
    const errors: unknown[] = [];
    tts.on("error", (e: unknown) => errors.push(e));
    for await (const ev of stream) if (typeof ev === "symbol") break;
    await tts.close();
    assert.deepEqual(fake.sockets[0]!.received[0], {
      message: "A model with model ID eleven_turbo_v2_5 does not exist or is not available to you.",
      error: "model_not_found",
      code: 1008,
    });
    assert.equal(fake.sockets[0]!.closeCode, 1008);
  });
});

describe("ElevenLabs' ScribeRealtime against the Scribe fake", () => {
  test("connect, send, commit: session_started, partial, committed and committed with timestamps, as the SDK reads them", async () => {
    const client = new ElevenLabsClient({ apiKey: EL_KEY, baseUrl: fake.url });
    const connection = await client.speechToText.realtime.connect({
      modelId: "scribe_v2_realtime",
      audioFormat: AudioFormat.PCM_16000,
      sampleRate: 16000,
      commitStrategy: CommitStrategy.MANUAL,
      includeTimestamps: true,
      languageCode: "en",
    });
    const seen: string[] = [];
    let words: unknown = null;
    await new Promise<void>((resolve) =>
      connection.on(RealtimeEvents.SESSION_STARTED, (data) => {
        seen.push(`session ${data.config.model_id} ${data.config.audio_format} ${data.config.sample_rate}`);
        resolve();
      }),
    );
    connection.on(RealtimeEvents.PARTIAL_TRANSCRIPT, (d) => seen.push(`partial ${d.text}`));
    connection.on(RealtimeEvents.COMMITTED_TRANSCRIPT, (d) => seen.push(`committed ${d.text}`));
    const done = new Promise<void>((resolve) =>
      connection.on(RealtimeEvents.COMMITTED_TRANSCRIPT_WITH_TIMESTAMPS, (d) => {
        seen.push(`timestamps ${d.text} ${d.language_code}`);
        words = d.words;
        resolve();
      }),
    );
    connection.send({ audioBase64: Buffer.concat([pcmTone(0.8), pcmSilence(0.2)]).toString("base64") });
    connection.commit();
    await done;
    const closed = new Promise<void>((resolve) => connection.on(RealtimeEvents.CLOSE, () => resolve()));
    connection.close();
    await closed;
    assert.deepEqual(seen, ["session scribe_v2_realtime pcm_16000 16000", "partial hello world", "committed hello world", "timestamps hello world en"]);
    assert.deepEqual(
      (words as { text: string; type: string }[]).map((w) => `${w.type}:${w.text}`),
      ["word:hello", "spacing: ", "word:world"],
    );
    const [socket] = fake.sockets;
    assert.equal(socket!.path, "/v1/speech-to-text/realtime?model_id=scribe_v2_realtime&commit_strategy=manual&audio_format=pcm_16000&language_code=en&include_timestamps=true");
    assert.deepEqual(socket!.sent[1], { message_type: "input_audio_chunk", audio_base_64: "", commit: true, sample_rate: 16000 });
    assert.equal(socket!.headers["xi-api-key"], "[redacted]");
  });

  test("a model_id ElevenLabs does not have: the SDK's invalid_request event, then the close (1008 invalid_request)", async () => {
    const client = new ElevenLabsClient({ apiKey: EL_KEY, baseUrl: fake.url });
    const connection = await client.speechToText.realtime.connect({ modelId: "scribe_realtime_v2", audioFormat: AudioFormat.PCM_16000, sampleRate: 16000 });
    const errors: unknown[] = [];
    connection.on(RealtimeEvents.ERROR, (e) => errors.push(e));
    const invalid = new Promise<unknown>((resolve) => connection.on(RealtimeEvents.INVALID_REQUEST, (e) => resolve(e)));
    const closed = new Promise<void>((resolve) => connection.on(RealtimeEvents.CLOSE, () => resolve()));
    assert.deepEqual(await invalid, {
      message_type: "invalid_request",
      error: "The model_id 'scribe_realtime_v2' is invalid. Supported models: 'scribe_v2_realtime', 'scribe_v2_realtime_turbo', 'scribe_v2_realtime_lite'.",
    });
    await closed;
    assert.equal(errors.length, 1);
    assert.equal(fake.sockets[0]!.closeCode, 1008);
    assert.equal(fake.sockets[0]!.closeReason, "invalid_request");
  });

  test("VAD: the SDK's VAD settings are accepted and silence commits", async () => {
    const client = new ElevenLabsClient({ apiKey: EL_KEY, baseUrl: fake.url });
    const connection = await client.speechToText.realtime.connect({
      modelId: "scribe_v2_realtime",
      audioFormat: AudioFormat.PCM_16000,
      sampleRate: 16000,
      commitStrategy: CommitStrategy.VAD,
      vadSilenceThresholdSecs: 0.3,
      vadThreshold: 0.4,
      minSpeechDurationMs: 100,
      minSilenceDurationMs: 100,
    });
    await new Promise<void>((resolve) => connection.on(RealtimeEvents.SESSION_STARTED, () => resolve()));
    const committed = new Promise<string>((resolve) => connection.on(RealtimeEvents.COMMITTED_TRANSCRIPT, (d) => resolve(d.text)));
    connection.send({ audioBase64: Buffer.concat([pcmTone(0.4), pcmSilence(0.5)]).toString("base64") });
    assert.equal(await committed, "hello");
    const closed = new Promise<void>((resolve) => connection.on(RealtimeEvents.CLOSE, () => resolve()));
    connection.close();
    await closed;
  });
});
