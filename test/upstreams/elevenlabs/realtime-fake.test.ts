/**
 * The fake's realtime sockets are strict (fakes/elevenlabs-realtime.ts): driven message by message with a
 * raw `ws` client, they refuse what ElevenLabs refuses, in its shapes and close codes: the upgrade's
 * checks, the first message, the key, voice settings, the chunk schedule, the inactivity timeout, the
 * stream-input end, multi-stream contexts (flush, close_context, close_socket, the limit of 5, settings
 * that change), Scribe's query, chunks and commits, and the batch endpoint's form.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import { FAKE_CLOSE_REASON_CHARS } from "../../../fakes/elevenlabs-realtime.ts";
import { audioDurationSec } from "../../../src/upstreams/audio-convert.ts";
import { EL_KEY, RACHEL } from "./helpers.ts";
import { pcmTone, rawSocket, refusedStatus } from "./realtime-helpers.ts";
import type { RawSocket } from "./realtime-helpers.ts";

let fake: ElevenLabsFake;
const sockets: RawSocket[] = [];

before(async () => {
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
});

after(async () => {
  for (const s of sockets) s.ws.terminate();
  await fake.close();
});

beforeEach(() => {
  fake.reset();
  fake.setMarkers([]);
});

const KEY = { "xi-api-key": EL_KEY };
const isAudio = (m: Record<string, unknown>) => typeof m.audio === "string";
const isFinal = (m: Record<string, unknown>) => m.isFinal === true;

function ttsUrl(kind: "stream-input" | "multi-stream-input", query = "model_id=eleven_flash_v2_5&output_format=pcm_16000", voice = RACHEL): string {
  return `${fake.url}/v1/text-to-speech/${voice}/${kind}?${query}`;
}

async function open(url: string, headers: Record<string, string> = KEY): Promise<RawSocket> {
  const s = await rawSocket(url, headers);
  sockets.push(s);
  return s;
}

/** Asserts the socket got `{message, error, code: 1008}` and then a 1008 close whose reason is the message, cut. */
async function refusedWith(s: RawSocket, error: string, message?: RegExp): Promise<void> {
  const m = await s.message((x) => typeof x.error === "string");
  assert.equal(m.error, error);
  assert.equal(m.code, 1008);
  if (message !== undefined) assert.match(String(m.message), message);
  const { code, reason } = await s.closed;
  assert.equal(code, 1008);
  assert.equal(reason, String(m.message).slice(0, FAKE_CLOSE_REASON_CHARS));
}

describe("text-to-speech upgrade", () => {
  test("refused before the upgrade: eleven_v3, a format or inactivity_timeout outside the enum, a bad header key, an unknown path", async () => {
    assert.equal(await refusedStatus(ttsUrl("multi-stream-input", "model_id=eleven_v3"), KEY), 403);
    assert.equal(await refusedStatus(ttsUrl("stream-input", "output_format=wav_16000"), KEY), 403);
    assert.equal(await refusedStatus(ttsUrl("stream-input", "output_format=pcm_48000"), KEY), 403);
    assert.equal(await refusedStatus(ttsUrl("stream-input", "inactivity_timeout=181"), KEY), 403);
    assert.equal(await refusedStatus(ttsUrl("stream-input", "inactivity_timeout=2.5"), KEY), 403);
    assert.equal(await refusedStatus(ttsUrl("stream-input", "sync_alignment=maybe"), KEY), 403);
    assert.equal(await refusedStatus(ttsUrl("stream-input", "apply_text_normalization=always"), KEY), 403);
    assert.equal(await refusedStatus(ttsUrl("stream-input"), { "xi-api-key": "sk_wrong" }), 403);
    assert.equal(await refusedStatus(`${fake.url}/v1/text-to-speech/${RACHEL}/other-input`, KEY), 403);
    assert.equal(await refusedStatus(ttsUrl("stream-input", "output_format=opus_48000_64"), KEY), 400, "valid, but the fake renders no Opus");
    assert.equal(fake.sockets.length, 0);
    assert.ok(fake.requests.every((r) => r.headers["xi-api-key"] === "[redacted]"));
  });

  test("429 and 500 at the upgrade (markers for every socket)", async () => {
    fake.setMarkers(["429"]);
    assert.equal(await refusedStatus(ttsUrl("stream-input"), KEY), 429);
    fake.setMarkers(["500"]);
    assert.equal(await refusedStatus(ttsUrl("multi-stream-input"), KEY), 500);
  });
});

describe("stream-input", () => {
  test("' ' first, text generated at flush with alignment, {text: ''} ends: isFinal then close 1000", async () => {
    const s = await open(ttsUrl("stream-input", "model_id=eleven_multilingual_v2&output_format=pcm_16000&sync_alignment=true"));
    s.send({ text: " ", voice_settings: { stability: 0.5, similarity_boost: 0.8 } });
    s.send({ text: "Hello world. ", flush: true });
    await s.message(isAudio);
    s.send({ text: "" });
    const final = await s.message(isFinal);
    assert.deepEqual(final, { isFinal: true });
    assert.equal((await s.closed).code, 1000);
    const audio = s.messages.filter(isAudio);
    assert.ok(audio.every((m) => m.isFinal === false && m.contextId === undefined));
    const bytes = Buffer.concat(audio.map((m) => Buffer.from(String(m.audio), "base64")));
    assert.ok(Math.abs(audioDurationSec(bytes, "pcm_16000") - 13 * 0.06) < 0.01);
    const chars = audio.flatMap((m) => (m.alignment as { chars: string[] }).chars);
    assert.equal(chars.join(""), "Hello world. ");
  });

  test("without flush, text waits for the schedule's first length (120 by default)", async () => {
    const s = await open(ttsUrl("stream-input"));
    s.send({ text: " " });
    s.send({ text: `${"a".repeat(99)} ` });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(s.messages.length, 0, "100 characters: nothing yet");
    s.send({ text: `${"b".repeat(19)} ` });
    await s.message(isAudio);
  });

  test("chunk_length_schedule items must be 50..500", async () => {
    const s = await open(ttsUrl("stream-input"));
    s.send({ text: " ", generation_config: { chunk_length_schedule: [30, 100] } });
    await refusedWith(s, "invalid_input_message", /chunk_length_schedule/);
  });

  test("the key may come in the first message instead (xi_api_key); it is cut out of the records", async () => {
    const s = await open(ttsUrl("stream-input"), {});
    s.send({ text: " ", xi_api_key: EL_KEY });
    s.send({ text: "Hi. ", flush: true });
    await s.message(isAudio);
    assert.deepEqual(fake.sockets[0]!.sent[0], { text: " ", xi_api_key: "[redacted]" });
    const bad = await open(ttsUrl("stream-input"), {});
    bad.send({ text: " ", xi_api_key: "sk_wrong" });
    await refusedWith(bad, "invalid_api_key");
    const none = await open(ttsUrl("stream-input"), {});
    none.send({ text: " " });
    await refusedWith(none, "invalid_api_key");
    assert.ok(!JSON.stringify(fake.sockets).includes(EL_KEY));
  });

  test("the first message must be {text: ' '}; a message that is not JSON is refused", async () => {
    const s = await open(ttsUrl("stream-input"));
    s.send({ text: "Hello " });
    await refusedWith(s, "invalid_input_message", /^Could not parse input message, make sure it is a json and follows the schema outlined in protocol\.$/);
    const t = await open(ttsUrl("stream-input"));
    t.send("not json");
    await refusedWith(t, "invalid_input_message");
  });

  test("model, voice and voice settings are checked at the first message", async () => {
    const m = await open(ttsUrl("stream-input", "model_id=eleven_turbo_v2_5"));
    m.send({ text: " " });
    await refusedWith(m, "model_not_found", /^A model with model ID eleven_turbo_v2_5 does not exist/);
    const v = await open(ttsUrl("stream-input", undefined, "NoSuchVoice000000000"));
    v.send({ text: " " });
    await refusedWith(v, "voice_not_found", /^A voice with the voice_id NoSuchVoice000000000 was not found\.$/);
    const vs = await open(ttsUrl("stream-input"));
    vs.send({ text: " ", voice_settings: { stability: 2 } });
    await refusedWith(vs, "invalid_voice_settings", /^Invalid setting for stability received, expected to be greater or equal to 0\.0 and less or equal to 1\.0, received 2\.0\.$/);
    const speed = await open(ttsUrl("stream-input"));
    speed.send({ text: " ", voice_settings: { speed: 0.5 } });
    await refusedWith(speed, "invalid_voice_settings", /speed/);
  });

  test("inactivity_timeout: no message for that long closes 1008 input_timeout_exceeded, the reason cut to 120 characters", async () => {
    const s = await open(ttsUrl("stream-input", "output_format=pcm_16000&inactivity_timeout=1"));
    s.send({ text: " " });
    const started = Date.now();
    await refusedWith(s, "input_timeout_exceeded", /^Have not received a new text input within the timeout of 1 seconds\. Streaming input terminated\. Please make sure to either feed the input in the timely manner, or to send the end of input text \(empty string ""\) when done\.$/);
    assert.ok(Date.now() - started >= 900);
    assert.equal(fake.sockets[0]!.closeReason!.length, FAKE_CLOSE_REASON_CHARS);
  });
});

describe("multi-stream-input", () => {
  test("contexts: flush generates one context only; close_context ends it with isFinal; unflushed text is dropped", async () => {
    const s = await open(ttsUrl("multi-stream-input"));
    s.send({ text: " ", context_id: "a" });
    s.send({ text: " ", context_id: "b" });
    s.send({ text: "Spoken in a. ", context_id: "a", flush: true });
    s.send({ text: "Never spoken in b. ", context_id: "b" });
    s.send({ context_id: "b", close_context: true });
    s.send({ context_id: "a", close_context: true });
    await s.message(isFinal, 2);
    const audio = s.messages.filter(isAudio);
    assert.ok(audio.length > 0 && audio.every((m) => m.contextId === "a"));
    assert.deepEqual(s.messages.filter(isFinal), [{ isFinal: true, contextId: "b" }, { isFinal: true, contextId: "a" }]);
  });

  test("a 6th unfinished context: max_active_conversations, close 1008", async () => {
    const s = await open(ttsUrl("multi-stream-input"));
    for (const id of ["c1", "c2", "c3", "c4", "c5"]) s.send({ text: " ", context_id: id });
    s.send({ context_id: "c1", close_context: true });
    await s.message(isFinal);
    s.send({ text: " ", context_id: "c6" });
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(s.messages.filter((m) => typeof m.error === "string").length, 0, "c1 was closed: 5 open");
    s.send({ text: " ", context_id: "c7" });
    await refusedWith(s, "max_active_conversations", /^Maximum simultaneous contexts per WebSocket connection exceeded \(5\)\. Please close an existing context before opening a new one\.$/);
  });

  test("a context's later message with other voice_settings: close 1008 with ElevenLabs' reason, no JSON; the same settings again are fine", async () => {
    const s = await open(ttsUrl("multi-stream-input"));
    s.send({ text: " ", voice_settings: { stability: 0.5 }, context_id: "a" });
    s.send({ text: "Same settings. ", voice_settings: { stability: 0.5 }, context_id: "a", flush: true });
    await s.message(isAudio);
    s.send({ text: " ", voice_settings: { stability: 0.9 }, context_id: "b" });
    s.send({ text: "Changed. ", voice_settings: { stability: 0.2 }, context_id: "b" });
    const { code, reason } = await s.closed;
    assert.equal(code, 1008);
    assert.equal(reason, "voice_settings field must be provided in the first message and then either be not provided or not change.");
    assert.equal(s.messages.filter((m) => typeof m.error === "string").length, 0);
  });

  test("close_socket flushes every context, sends isFinal for each, closes 1000", async () => {
    const s = await open(ttsUrl("multi-stream-input"));
    s.send({ text: " ", context_id: "x" });
    s.send({ text: "Buffered, then flushed by close_socket. ", context_id: "x" });
    s.send({ close_socket: true });
    assert.equal((await s.closed).code, 1000);
    assert.ok(s.messages.some(isAudio));
    assert.deepEqual(s.messages.at(-1), { isFinal: true, contextId: "x" });
  });

  test("a keep-alive ({text: '', context_id}) is accepted and generates nothing", async () => {
    const s = await open(ttsUrl("multi-stream-input"));
    s.send({ text: " ", context_id: "k" });
    s.send({ text: "", context_id: "k" });
    s.send({ context_id: "k", close_context: true });
    assert.deepEqual(await s.message(isFinal), { isFinal: true, contextId: "k" });
    assert.equal(s.messages.filter(isAudio).length, 0);
  });
});

describe("Scribe realtime", () => {
  const stt = (query: string) => `${fake.url}/v1/speech-to-text/realtime?${query}`;
  const isType = (type: string) => (m: Record<string, unknown>) => m.message_type === type;

  test("a bad query: invalid_request, then close 1008 'invalid_request'", async () => {
    const cases: [string, RegExp][] = [
      ["audio_format=pcm_16000", /^model_id is required\.$/],
      ["model_id=scribe_v2", /^The model_id 'scribe_v2' is invalid\. Supported models: 'scribe_v2_realtime', 'scribe_v2_realtime_turbo', 'scribe_v2_realtime_lite'\.$/],
      ["model_id=scribe_v2_realtime&audio_format=mp3_44100_128", /audio_format/],
      ["model_id=scribe_v2_realtime&commit_strategy=auto", /commit_strategy/],
      ["model_id=scribe_v2_realtime&vad_threshold=0.95", /vad_threshold/],
      ["model_id=scribe_v2_realtime&min_speech_duration_ms=10", /min_speech_duration_ms/],
      ["model_id=scribe_v2_realtime&include_timestamps=maybe", /include_timestamps/],
    ];
    for (const [query, text] of cases) {
      const s = await open(stt(query));
      const m = await s.message(isType("invalid_request"));
      assert.match(String(m.error), text, query);
      assert.deepEqual(await s.closed, { code: 1008, reason: "invalid_request" });
    }
  });

  test("no key: auth_error, then close 1008", async () => {
    const s = await open(stt("model_id=scribe_v2_realtime"), {});
    assert.equal((await s.message(isType("auth_error"))).error, "Invalid API key");
    assert.equal((await s.closed).code, 1008);
  });

  test("refused chunks go on: another message type, bad base64, a wrong sample_rate, a chunk over 10 s; a too-small commit is throttled", async () => {
    const s = await open(stt("model_id=scribe_v2_realtime&audio_format=pcm_16000"));
    const started = await s.message(isType("session_started"));
    assert.equal((started.config as { sample_rate: number }).sample_rate, 16000);
    s.send({ message_type: "commit" });
    await s.message(isType("input_error"));
    s.send({ message_type: "input_audio_chunk", audio_base_64: "@@@", commit: false, sample_rate: 16000 });
    await s.message(isType("input_error"), 2);
    s.send({ message_type: "input_audio_chunk", audio_base_64: pcmTone(0.1).toString("base64"), commit: false, sample_rate: 8000 });
    assert.match(String((await s.message(isType("input_error"), 3)).error), /sample_rate/);
    s.send({ message_type: "input_audio_chunk", audio_base_64: pcmTone(10.5).toString("base64"), commit: false, sample_rate: 16000 });
    await s.message(isType("chunk_size_exceeded"));
    s.send({ message_type: "input_audio_chunk", audio_base_64: pcmTone(0.01).toString("base64"), commit: true, sample_rate: 16000 });
    assert.equal(
      (await s.message(isType("commit_throttled"))).error,
      "Commit request ignored: only 0.01s of uncommitted audio. You need at least 0.3s of uncommitted audio before committing.",
    );
    s.send({ message_type: "input_audio_chunk", audio_base_64: pcmTone(0.5).toString("base64"), commit: true, sample_rate: 16000 });
    assert.equal((await s.message(isType("committed_transcript"))).text, "hello");
    assert.equal(s.messages.some(isType("committed_transcript_with_timestamps")), false, "neither timestamps nor detection asked");
  });
});

describe("batch speech to text", () => {
  test("the form: model_id required (422), exactly one of file and cloud_storage_url (400)", async () => {
    const post = async (form: FormData) => {
      const res = await fetch(`${fake.url}/v1/speech-to-text`, { method: "POST", headers: KEY, body: form });
      return { status: res.status, body: (await res.json()) as unknown };
    };
    const noModel = new FormData();
    noModel.append("file", new Blob([new Uint8Array(100)]), "a.wav");
    assert.deepEqual(await post(noModel), { status: 422, body: { detail: [{ type: "missing", loc: ["body", "model_id"], msg: "Field required", input: null }] } });
    const noFile = new FormData();
    noFile.append("model_id", "scribe_v2");
    assert.equal((await post(noFile)).status, 400);
    const both = new FormData();
    both.append("model_id", "scribe_v2");
    both.append("cloud_storage_url", "https://example.com/a.mp3");
    both.append("file", new Blob([new Uint8Array(100)]), "a.wav");
    assert.equal((await post(both)).status, 400);
  });
});
