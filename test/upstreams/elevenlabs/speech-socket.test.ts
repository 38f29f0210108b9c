/**
 * The ElevenLabs realtime speech adapter (D42, src/upstreams/elevenlabs/speech-socket.ts) against the
 * loopback fake's multi-stream-input socket: the messages it sends per chunk (one context each), the
 * pieces it yields (one valid stream of every format, alignments relative to the chunk), chunk ends, the
 * socket's reuse and replacement, and the key's place.
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startElevenLabsFake, FAKE_SHARED_VOICES } from "../../../fakes/elevenlabs.ts";
import type { ElevenLabsFake } from "../../../fakes/elevenlabs.ts";
import { FAKE_SECONDS_PER_CHAR } from "../../../fakes/elevenlabs-realtime.ts";
import { audioDurationSec } from "../../../src/upstreams/audio-convert.ts";
import { mp3FramesFrom } from "../../../src/upstreams/mp3-frames.ts";
import { createElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import type { ElevenLabsSource } from "../../../src/upstreams/elevenlabs/source.ts";
import { realtimeVoiceSettings } from "../../../src/upstreams/elevenlabs/speech-socket.ts";
import type { AudioFormat } from "../../../src/upstreams/types.ts";
import { EL_KEY, RACHEL } from "./helpers.ts";
import { audioOf, piecesOf, speechStreamRequest } from "./realtime-helpers.ts";

let fake: ElevenLabsFake;
let source: ElevenLabsSource;

before(async () => {
  fake = await startElevenLabsFake({ apiKey: EL_KEY });
  source = createElevenLabsSource({ name: "el-rt", baseUrl: fake.url, apiKey: EL_KEY, timeoutMs: 5000 });
});

after(async () => {
  await source.close();
  await fake.close();
});

beforeEach(() => {
  fake.reset();
  fake.setMarkers([]);
});

/** True when `b` is a chain of whole MPEG frames from its first byte to its last. */
function wholeMp3(b: Uint8Array): boolean {
  let end = 0;
  for (const f of mp3FramesFrom(b, 0)) {
    if (f.offset !== end) return false;
    end = f.offset + f.length;
    if (end >= b.length) break;
  }
  return end === b.length;
}

describe("chunks", () => {
  test("one context per chunk: ' ' with the voice settings, the text flushed, close_context; the socket is reused", async () => {
    const stream = await source.openSpeechStream(speechStreamRequest({ voiceSettings: { stability: 0.4, similarity_boost: 0.8, speed: 1.1, use_speaker_boost: true } }));
    const a = await piecesOf(stream, "Hello there. ");
    const b = await piecesOf(stream, "A second chunk. ");
    await stream.close();
    assert.ok(a.length > 0 && b.length > 0);
    assert.equal(fake.sockets.length, 1, "one socket for both chunks");
    const [socket] = fake.sockets;
    assert.equal(socket.kind, "multi-stream-input");
    assert.equal(socket.path, `/v1/text-to-speech/${RACHEL}/multi-stream-input?model_id=eleven_flash_v2_5&output_format=pcm_16000&sync_alignment=true&inactivity_timeout=180`);
    assert.equal(socket.headers["xi-api-key"], "[redacted]");
    const settings = { stability: 0.4, similarity_boost: 0.8, speed: 1.1, use_speaker_boost: true };
    assert.deepEqual(socket.sent, [
      { text: " ", voice_settings: settings, context_id: "ctx-1" },
      { text: "Hello there. ", context_id: "ctx-1", flush: true },
      { context_id: "ctx-1", close_context: true },
      { text: " ", voice_settings: settings, context_id: "ctx-2" },
      { text: "A second chunk. ", context_id: "ctx-2", flush: true },
      { context_id: "ctx-2", close_context: true },
      { close_socket: true },
    ]);
    // Each chunk ended at its own isFinal.
    const finals = socket.received.filter((m) => (m as { isFinal?: boolean }).isFinal === true);
    assert.deepEqual(finals, [
      { isFinal: true, contextId: "ctx-1" },
      { isFinal: true, contextId: "ctx-2" },
    ]);
  });

  test("without voice settings the context opens with ' ' alone; a chunk of spaces sends nothing and yields nothing", async () => {
    const stream = await source.openSpeechStream(speechStreamRequest());
    assert.deepEqual(await piecesOf(stream, "   "), []);
    await piecesOf(stream, "Hi. ");
    await stream.close();
    assert.deepEqual(fake.sockets[0].sent.slice(0, 2), [{ text: " ", context_id: "ctx-1" }, { text: "Hi. ", context_id: "ctx-1", flush: true }]);
    assert.equal(realtimeVoiceSettings({}), null);
  });

  const formats: AudioFormat[] = ["mp3_44100_128", "mp3_44100_192", "mp3_22050_32", "pcm_16000", "pcm_22050", "pcm_24000", "pcm_44100", "ulaw_8000"];
  for (const format of formats) {
    test(`${format}: the pieces of several chunks form one valid stream of the format, as long as the text`, async () => {
      const stream = await source.openSpeechStream(speechStreamRequest({ format }));
      const chunks = ["The first chunk of speech. ", "And then, a second one. ", "Third."];
      const all = [];
      for (const c of chunks) all.push(...(await piecesOf(stream, c)));
      await stream.close();
      const bytes = audioOf(all);
      const expected = chunks.join("").length * FAKE_SECONDS_PER_CHAR;
      const seconds = audioDurationSec(bytes, format);
      if (format.startsWith("mp3_")) {
        assert.ok(wholeMp3(bytes), "whole MPEG frames from the first byte to the last");
        // Each chunk is its own encoder run: up to a few frames of padding per chunk.
        assert.ok(seconds >= expected - 0.001 && seconds <= expected + chunks.length * 0.2, `${seconds} s for ${expected} s of text`);
      } else {
        assert.equal(bytes.length % (format.startsWith("pcm_") ? 2 : 1), 0, "whole samples");
        assert.ok(Math.abs(seconds - expected) < 0.01, `${seconds} s for ${expected} s of text`);
      }
    });
  }

  test("alignments: every character of the chunk once, times from the chunk's start, inside its audio", async () => {
    const stream = await source.openSpeechStream(speechStreamRequest({ format: "pcm_24000" }));
    await piecesOf(stream, "Warm up. ");
    const text = "Alignment must follow the audio of this chunk. ";
    const pieces = await piecesOf(stream, text);
    await stream.close();
    assert.ok(pieces.length > 1, "several pieces");
    const chars = pieces.flatMap((p) => p.alignment!.chars);
    assert.equal(chars.join(""), text);
    const starts = pieces.flatMap((p) => p.alignment!.charStartTimesMs);
    const durations = pieces.flatMap((p) => p.alignment!.charDurationsMs);
    assert.equal(starts[0], 0, "relative to the chunk, not to the socket");
    for (let i = 1; i < starts.length; i++) assert.ok(starts[i]! >= starts[i - 1]!, "monotonic");
    const totalMs = audioDurationSec(audioOf(pieces), "pcm_24000") * 1000;
    assert.ok(Math.abs(starts.at(-1)! + durations.at(-1)! - totalMs) <= 2, `${starts.at(-1)! + durations.at(-1)!} ms vs ${totalMs} ms of audio`);
    // Each character starts within the piece that carries it.
    let offset = 0;
    for (const p of pieces) {
      const len = audioDurationSec(p.audio, "pcm_24000") * 1000;
      for (const t of p.alignment!.charStartTimesMs) assert.ok(t >= offset - 1 && t <= offset + len + 1, `${t} in [${offset}, ${offset + len}]`);
      offset += len;
    }
    assert.deepEqual(pieces[0]!.normalizedAlignment?.chars, pieces[0]!.alignment?.chars);
  });

  test("a chunk abandoned after its first piece: the next chunk is whole, the abandoned context's audio skipped", async () => {
    const stream = await source.openSpeechStream(speechStreamRequest());
    for await (const _piece of stream.synthesize("This long chunk will be abandoned early by the caller. ")) break;
    const text = "Then this one. ";
    const pieces = await piecesOf(stream, text);
    await stream.close();
    assert.equal(pieces.flatMap((p) => p.alignment!.chars).join(""), text);
    assert.ok(Math.abs(audioDurationSec(audioOf(pieces), "pcm_16000") - text.length * FAKE_SECONDS_PER_CHAR) < 0.01);
  });

  test("four unfinished contexts: the next chunk opens a new socket instead of passing ElevenLabs' limit of 5", async () => {
    const stream = await source.openSpeechStream(speechStreamRequest());
    // `ws-hang` contexts never finish at the fake.
    for (let i = 0; i < 4; i++) {
      const it = stream.synthesize(`Stuck ${i} [fake:ws-hang] `)[Symbol.asyncIterator]();
      const first = it.next();
      await new Promise((r) => setTimeout(r, 30));
      void it.return?.(undefined);
      void first.catch(() => {});
    }
    const pieces = await piecesOf(stream, "Fresh socket. ");
    await stream.close();
    assert.ok(pieces.length > 0);
    assert.equal(fake.sockets.length, 2, "a second socket");
    assert.equal(fake.sockets[0].received.some((m) => (m as { error?: string }).error === "max_active_conversations"), false);
  });

  test("after a failed chunk the next one connects again", async () => {
    const stream = await source.openSpeechStream(speechStreamRequest());
    await assert.rejects(piecesOf(stream, "Boom [fake:ws-1011] "), { name: "ElevenLabsSocketError", retryable: true });
    const pieces = await piecesOf(stream, "Back again. ");
    await stream.close();
    assert.ok(pieces.length > 0);
    assert.equal(fake.sockets.length, 2);
  });

  test("the voice id is escaped in the path; the key goes in the upgrade's header only", async () => {
    const stream = await source.openSpeechStream(speechStreamRequest({ voiceId: "voice/with space" }));
    await stream.close();
    const upgrade = fake.requests.find((r) => r.method === "GET" && r.path.includes("multi-stream-input"));
    assert.ok(upgrade !== undefined);
    assert.ok(upgrade.path.startsWith("/v1/text-to-speech/voice%2Fwith%20space/multi-stream-input?"));
    assert.equal(upgrade.headers["xi-api-key"], "[redacted]");
    assert.ok(!JSON.stringify(fake.sockets).includes(EL_KEY));
    assert.ok(FAKE_SHARED_VOICES > 0);
  });
});
