/**
 * Speech on the MiniMax fake: every gateway format decodes to exactly that format with the right length
 * (192 kbps MP3 and mu-law transcoded from PCM, D26), the exact request MiniMax gets, and streaming (several
 * chunks, one valid clip, never the aggregated final clip twice, failures before and inside the stream).
 */
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startMiniMaxFake } from "../../../fakes/minimax.ts";
import type { MiniMaxFake } from "../../../fakes/minimax.ts";
import { createMiniMaxSource } from "../../../src/upstreams/minimax/source.ts";
import type { MiniMaxSource } from "../../../src/upstreams/minimax/source.ts";
import { AUDIO_FORMATS, contentTypeOf } from "../../../src/upstreams/types.ts";
import type { AudioFormat } from "../../../src/upstreams/types.ts";
import { bytesOf, chunksOf, concat, fakeSpeechSec, measuredSec, MM_KEY, mmFailure, mp3Headers, seenMessages, speechRequest } from "./helpers.ts";

let fake: MiniMaxFake;
let source: MiniMaxSource;

before(async () => {
  fake = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 5, chunkGapMs: 5 });
  source = createMiniMaxSource({ name: "mm-main", baseUrl: fake.url, apiKey: MM_KEY, timeoutMs: 5000 });
});

after(async () => {
  await source.close();
  await fake.close();
  for (const message of seenMessages) assert.ok(!message.includes(MM_KEY));
});

beforeEach(() => fake.reset());

/** What MiniMax is asked for each gateway format (MiniMax lacks 192 kbps MP3 and mu-law: PCM, D26). */
const ASKED: Record<AudioFormat, Record<string, unknown>> = {
  mp3_44100_128: { format: "mp3", sample_rate: 44100, bitrate: 128000, channel: 1 },
  mp3_44100_192: { format: "pcm", sample_rate: 44100, channel: 1 },
  mp3_22050_32: { format: "mp3", sample_rate: 22050, bitrate: 32000, channel: 1 },
  pcm_16000: { format: "pcm", sample_rate: 16000, channel: 1 },
  pcm_22050: { format: "pcm", sample_rate: 22050, channel: 1 },
  pcm_24000: { format: "pcm", sample_rate: 24000, channel: 1 },
  pcm_44100: { format: "pcm", sample_rate: 44100, channel: 1 },
  ulaw_8000: { format: "pcm", sample_rate: 8000, channel: 1 },
};

/** Asserts `body` is audio of `format` lasting about `seconds` (MP3: whole frames of the right kind). */
function assertAudio(body: Uint8Array, format: AudioFormat, seconds: number): void {
  const [codec, rate, kbps] = format.split("_");
  if (codec === "pcm") {
    assert.equal(body.length % 2, 0, "whole 16-bit samples");
    assert.equal(body.length, Math.round(seconds * Number(rate)) * 2);
  } else if (codec === "ulaw") {
    assert.equal(body.length, Math.round(seconds * 8000), "one mu-law byte per sample at 8 kHz");
  } else {
    const frames = mp3Headers(body);
    assert.ok(frames.length > 5, "MP3 frames");
    for (const f of frames) {
      assert.equal(f.sampleRate, Number(rate));
      assert.equal(f.kbps, Number(kbps));
    }
    // An encoder adds up to about two frames of padding at each end.
    assert.ok(Math.abs(measuredSec(body, format) - seconds) < 0.12, `${measuredSec(body, format)} s vs ${seconds} s`);
  }
}

describe("whole answers in every gateway format", () => {
  for (const format of AUDIO_FORMATS) {
    test(`${format}: MiniMax is asked ${JSON.stringify(ASKED[format])}; the answer is exactly ${format}`, async () => {
      const req = speechRequest({ format, text: `Format ${format} check, one two three.` });
      const result = await source.speech(req);
      assert.equal(result.kind, "bytes");
      assert.equal(result.contentType, contentTypeOf(format));
      const body = bytesOf(result);
      const seconds = fakeSpeechSec(req.text);
      assertAudio(body, format, seconds);
      if (result.kind === "bytes") assert.equal(result.durationSec, Math.round(seconds * 1000) / 1000, "extra_info.audio_length");

      const [call] = fake.submits();
      assert.equal(call.path, "/v1/t2a_v2");
      assert.equal(call.headers.authorization, "Bearer [redacted]");
      assert.deepEqual(call.body, {
        model: "speech-2.8-hd",
        text: req.text,
        stream: false,
        voice_setting: { voice_id: "English_Graceful_Lady", speed: 1, vol: 1, pitch: 0 },
        audio_setting: ASKED[format],
        output_format: "hex",
      });
    });
  }

  test("192 kbps MP3: every frame header says MPEG-1 Layer III, 44.1 kHz, bit rate index 11 (192 kbps)", async () => {
    const body = bytesOf(await source.speech(speechRequest({ format: "mp3_44100_192" })));
    const frames = mp3Headers(body);
    assert.ok(frames.length > 10);
    assert.ok(frames.every((f) => f.version === "1" && f.bitrateIndex === 11 && f.sampleRate === 44100));
  });

  test("mu-law: one byte per 8 kHz sample, and a tone (not silence: 0xff is mu-law zero)", async () => {
    const req = speechRequest({ format: "ulaw_8000", text: "Mu-law" });
    const body = bytesOf(await source.speech(req));
    assert.equal(body.length, Math.round(fakeSpeechSec(req.text) * 8000));
    assert.ok(new Set(body).size > 10);
  });

  test("turbo maps to speech-2.8-turbo (D35); a models override wins; voiceSettings are not sent", async () => {
    await source.speech(speechRequest({ model: "beta-speech-turbo" }));
    const over = createMiniMaxSource({ name: "mm-over", baseUrl: fake.url, apiKey: MM_KEY, models: { "beta-speech-hd": "speech-2.5-hd-preview" } });
    try {
      await over.speech(speechRequest());
    } finally {
      await over.close();
    }
    const [turbo, hd] = fake.submits().map((r) => r.body as Record<string, unknown>);
    assert.equal(turbo.model, "speech-2.8-turbo");
    assert.equal(hd.model, "speech-2.5-hd-preview");
    assert.ok(!JSON.stringify(turbo).includes("stability"));
  });

  test("a model that is not beta speech is unsupported and sends nothing", async () => {
    for (const model of ["beta-music", "alpha-v3"]) {
      const err = await mmFailure(source.speech(speechRequest({ model })));
      assert.equal(err.unsupported, true);
      assert.equal(err.retryable, false);
    }
    assert.equal(fake.requests.length, 0);
  });
});

describe("streaming", () => {
  for (const format of ["pcm_24000", "mp3_44100_128", "mp3_44100_192", "ulaw_8000", "mp3_22050_32"] as const) {
    test(`${format}: several chunks whose concatenation is one clip of the right length`, async () => {
      const req = speechRequest({ format, stream: true, text: "Streaming speech arrives in pieces, one after another." });
      const result = await source.speech(req);
      assert.equal(result.kind, "stream");
      assert.equal(result.contentType, contentTypeOf(format));
      const chunks = await chunksOf(result);
      assert.ok(chunks.length >= 3, `only ${chunks.length} chunks`);
      const body = concat(chunks);
      assertAudio(body, format, fakeSpeechSec(req.text));
      if (format.startsWith("pcm")) assert.ok(chunks.every((c) => c.length % 2 === 0), "PCM chunks end on whole samples although MiniMax's do not");

      const sent = fake.submits()[0].body as Record<string, unknown>;
      assert.equal(sent.stream, true);
      assert.deepEqual(sent.stream_options, { exclude_aggregated_audio: true });
      assert.deepEqual(sent.audio_setting, ASKED[format]);
    });
  }

  test("the streamed PCM equals the whole answer byte for byte (odd hex and SSE splits handled)", async () => {
    const text = "Identical bytes either way.";
    const whole = bytesOf(await source.speech(speechRequest({ format: "pcm_16000", text })));
    const streamed = concat(await chunksOf(await source.speech(speechRequest({ format: "pcm_16000", text, stream: true }))));
    assert.deepEqual(streamed, whole);
  });

  test("[fake:aggregate]: the final event repeats the whole clip; it is not appended twice", async () => {
    const text = "Aggregated final clip [fake:aggregate]";
    const whole = bytesOf(await source.speech(speechRequest({ format: "pcm_22050", text })));
    const streamed = concat(await chunksOf(await source.speech(speechRequest({ format: "pcm_22050", text, stream: true }))));
    assert.equal(streamed.length, whole.length);
    assert.deepEqual(streamed, whole);
  });

  test("speech() resolves when the answer starts, before the audio: chunks come as events arrive", async () => {
    const slow = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 150, chunkGapMs: 100 });
    const s = createMiniMaxSource({ name: "mm-slow", baseUrl: slow.url, apiKey: MM_KEY });
    try {
      const started = Date.now();
      const result = await s.speech(speechRequest({ format: "pcm_24000", stream: true }));
      const resolvedAt = Date.now() - started;
      const times: number[] = [];
      if (result.kind === "stream") for await (const c of result.chunks) if (c.length > 0) times.push(Date.now() - started);
      assert.ok(times.length >= 3);
      // Lower bounds only: the first chunk waited for the fake's first event, later ones for theirs.
      assert.ok(times[0] - resolvedAt >= 100, `resolved at ${resolvedAt} ms, first chunk at ${times[0]} ms`);
      assert.ok(times[times.length - 1] - times[0] >= 300, "chunks were spread out, not buffered");
    } finally {
      await s.close();
      await slow.close();
    }
  });

  test("a JSON base_resp failure to a stream request throws from speech() itself", async () => {
    const err = await mmFailure(source.speech(speechRequest({ stream: true, text: "no [fake:1026]" })));
    assert.equal(err.code, 1026);
    assert.equal(err.contentRejected, true);
    const gone = await mmFailure(source.speech(speechRequest({ stream: true, voiceId: "No_Such_Voice_Here" })));
    assert.equal(gone.voiceUnavailable, true);
  });

  test("[fake:stream-break]: the first chunk arrives, then the iterator throws the mapped error", async () => {
    const result = await source.speech(speechRequest({ format: "pcm_24000", stream: true, text: "break [fake:stream-break]" }));
    const got: Uint8Array[] = [];
    let caught: unknown = null;
    try {
      if (result.kind === "stream") for await (const c of result.chunks) got.push(c);
    } catch (err) {
      caught = err;
    }
    assert.equal(got.length, 1, "exactly the first chunk");
    assert.ok(got[0].length > 0);
    const err = await mmFailure(Promise.reject(caught));
    assert.equal(err.code, 1000);
    assert.equal(err.retryable, true);
  });

  test("[fake:bad-hex] in a stream: a retryable malformed error from the iterator", async () => {
    const result = await source.speech(speechRequest({ stream: true, text: "x [fake:bad-hex]" }));
    const err = await mmFailure(chunksOf(result));
    assert.equal(err.kind, "malformed");
    assert.equal(err.retryable, true);
  });

  test("breaking out of the iteration closes the upstream stream", async () => {
    const slow = await startMiniMaxFake({ apiKey: MM_KEY, firstChunkMs: 5, chunkGapMs: 200 });
    const s = createMiniMaxSource({ name: "mm-break", baseUrl: slow.url, apiKey: MM_KEY });
    try {
      const result = await s.speech(speechRequest({ format: "pcm_16000", stream: true }));
      let n = 0;
      if (result.kind === "stream") {
        for await (const c of result.chunks) {
          n += c.length > 0 ? 1 : 0;
          break;
        }
      }
      assert.equal(n, 1);
    } finally {
      await s.close();
      await slow.close();
    }
  });
});
