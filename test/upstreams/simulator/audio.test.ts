import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseBuffer } from "music-metadata";
import { audioFormatInfo, encodeAudio, encodeAudioChunks, encodeMp3Chunks, linearToUlaw, ulawToLinear } from "../../../src/upstreams/simulator/encode.ts";
import { concatBytes } from "../../../src/upstreams/util.ts";
import { createRng } from "../../../src/upstreams/simulator/rng.ts";
import { adsr, resampleLinear } from "../../../src/upstreams/simulator/signal.ts";
import { renderSpeechChunks } from "../../../src/upstreams/simulator/speech/render.ts";
import { speechDurationSec, synthesizeSpeech } from "../../../src/upstreams/simulator/speech/synthesize.ts";
import { AUDIO_FORMATS, type AudioFormat } from "../../../src/upstreams/types.ts";

const TEXT = "Hello there! This is a simulated voice reading a sentence. Does it sound right?";

function rms(x: Float32Array): number {
  let e = 0;
  for (const v of x) e += v * v;
  return Math.sqrt(e / Math.max(1, x.length));
}

function equalSamples(a: Float32Array, b: Float32Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}

describe("speechDurationSec", () => {
  it("follows the text length at 15 characters per second, at least 0.3 s", () => {
    assert.equal(speechDurationSec(""), 0.3);
    assert.equal(speechDurationSec("a"), 0.3);
    assert.equal(speechDurationSec("x".repeat(150)), 10);
    assert.equal(speechDurationSec("x".repeat(5000)), 5000 / 15);
    // Code points, not UTF-16 units.
    assert.equal(speechDurationSec("😀".repeat(30)), 2);
  });
});

describe("synthesizeSpeech", () => {
  it("produces round(duration x rate) samples of real, bounded audio", () => {
    for (const sampleRate of [8000, 22050, 44100]) {
      const s = synthesizeSpeech({ text: TEXT, voiceId: "v1", sampleRate });
      assert.equal(s.length, Math.round(speechDurationSec(TEXT) * sampleRate));
      assert.ok(rms(s) > 0.03, `not silent at ${sampleRate}`);
      for (const v of s) assert.ok(Number.isFinite(v) && Math.abs(v) <= 1);
    }
  });

  it("lengthens with the text", () => {
    const short = synthesizeSpeech({ text: "Hi.", voiceId: "v1", sampleRate: 16000 });
    const long = synthesizeSpeech({ text: "x".repeat(300), voiceId: "v1", sampleRate: 16000 });
    assert.equal(short.length, Math.round(0.3 * 16000));
    assert.equal(long.length, 20 * 16000);
  });

  it("is deterministic and depends on voice, settings and variant", () => {
    const opts = { text: TEXT, voiceId: "voice-a", sampleRate: 16000 };
    const a = synthesizeSpeech(opts);
    assert.ok(equalSamples(a, synthesizeSpeech(opts)));
    assert.ok(!equalSamples(a, synthesizeSpeech({ ...opts, voiceId: "voice-b" })));
    assert.ok(!equalSamples(a, synthesizeSpeech({ ...opts, settings: { stability: 0.9 } })));
    assert.ok(!equalSamples(a, synthesizeSpeech({ ...opts, variant: "other-model" })));
  });

  it("handles empty text, punctuation only and other scripts", () => {
    for (const text of ["", "...", "こんにちは世界", "Привет, мир", "123 456"]) {
      const s = synthesizeSpeech({ text, voiceId: "v", sampleRate: 8000 });
      assert.equal(s.length, Math.round(speechDurationSec(text) * 8000));
      for (const v of s) assert.ok(Number.isFinite(v));
    }
  });

  it("leaves pauses at spaces and punctuation (the envelope varies)", () => {
    const s = synthesizeSpeech({ text: "Ah.    Ah.    Ah.", voiceId: "v", sampleRate: 16000 });
    const win = 320;
    const levels: number[] = [];
    for (let i = 0; i + win <= s.length; i += win) levels.push(rms(s.subarray(i, i + win)));
    assert.ok(Math.min(...levels) < 0.1 * Math.max(...levels));
  });
});

describe("generic helpers", () => {
  it("createRng is seeded and in [0, 1)", () => {
    const a = createRng("seed");
    const b = createRng("seed");
    const c = createRng("other");
    const xs = Array.from({ length: 100 }, () => a());
    assert.deepEqual(
      xs,
      Array.from({ length: 100 }, () => b()),
    );
    assert.notDeepEqual(
      xs,
      Array.from({ length: 100 }, () => c()),
    );
    for (const x of xs) assert.ok(x >= 0 && x < 1);
  });

  it("adsr shapes a note", () => {
    assert.equal(adsr(-1, 1, 0.1, 0.1, 0.5, 0.2), 0);
    assert.equal(adsr(0.05, 1, 0.1, 0.1, 0.5, 0.2), 0.5);
    assert.equal(adsr(0.1, 1, 0.1, 0.1, 0.5, 0.2), 1);
    assert.equal(adsr(0.5, 1, 0.1, 0.1, 0.5, 0.2), 0.5);
    assert.ok(Math.abs(adsr(0.9, 1, 0.1, 0.1, 0.5, 0.2) - 0.25) < 1e-9);
  });

  it("resampleLinear changes the length by the rate ratio", () => {
    const x = new Float32Array(44100).fill(0.5);
    assert.equal(resampleLinear(x, 44100, 8000).length, 8000);
    assert.equal(resampleLinear(x, 44100, 44100), x);
    assert.ok(resampleLinear(x, 44100, 16000).every((v) => v === 0.5));
  });

  it("mu-law round trips within quantization error", () => {
    for (const v of [0, 1, -1, 100, -100, 1000, -5000, 20000, 32767, -32768]) {
      const back = ulawToLinear(linearToUlaw(v));
      assert.ok(Math.abs(back - v) <= Math.max(8, Math.abs(v) * 0.07), `${v} -> ${back}`);
    }
    assert.equal(linearToUlaw(0), 0xff);
  });
});

describe("encodeAudio", () => {
  const rate = 44100;
  const samples = synthesizeSpeech({ text: TEXT, voiceId: "enc", sampleRate: rate });
  const dur = speechDurationSec(TEXT);

  for (const format of AUDIO_FORMATS.filter((f) => f.startsWith("mp3_"))) {
    it(`${format} decodes with the format's rate and bit rate`, async () => {
      const info = audioFormatInfo(format);
      const mp3 = encodeAudio(samples, rate, format);
      const meta = await parseBuffer(mp3, { mimeType: "audio/mpeg" }, { duration: true });
      assert.match(meta.format.codec ?? "", /^MPEG [12] Layer 3$/);
      assert.equal(meta.format.sampleRate, info.sampleRate);
      assert.equal(meta.format.bitrate, (info.bitrateKbps ?? 0) * 1000);
      assert.equal(meta.format.numberOfChannels, 1);
      const d = meta.format.duration ?? 0;
      assert.ok(d > 0 && Math.abs(d - dur) < 0.12, `duration ${d} vs ${dur}`);
      // CBR: size follows the bit rate.
      assert.ok(Math.abs(mp3.length - ((info.bitrateKbps ?? 0) * 1000 * d) / 8) < 2000);
    });
  }

  for (const format of AUDIO_FORMATS.filter((f) => f.startsWith("pcm_"))) {
    it(`${format} is 16-bit little-endian at the format's rate`, () => {
      const { sampleRate } = audioFormatInfo(format);
      const pcm = encodeAudio(samples, rate, format);
      assert.equal(pcm.length % 2, 0);
      assert.ok(Math.abs(pcm.length - 2 * sampleRate * dur) <= 4, `${pcm.length} bytes`);
      const view = new DataView(pcm.buffer, pcm.byteOffset, pcm.byteLength);
      let peak = 0;
      for (let i = 0; i < pcm.length; i += 2) peak = Math.max(peak, Math.abs(view.getInt16(i, true)));
      assert.ok(peak > 20000 && peak <= 32768, `peak ${peak}`);
    });
  }

  it("ulaw_8000 is one mu-law byte per sample at 8 kHz", () => {
    const u = encodeAudio(samples, rate, "ulaw_8000");
    assert.ok(Math.abs(u.length - 8000 * dur) <= 2);
    let peak = 0;
    for (const b of u) peak = Math.max(peak, Math.abs(ulawToLinear(b)));
    assert.ok(peak > 20000);
  });

  it("is deterministic", () => {
    for (const format of ["mp3_44100_128", "pcm_16000", "ulaw_8000"] as const) {
      assert.deepEqual(encodeAudio(samples, rate, format), encodeAudio(samples, rate, format));
    }
  });
});

describe("chunked encoders", () => {
  const rate = 22050;
  const samples = synthesizeSpeech({ text: TEXT, voiceId: "chunks", sampleRate: rate });

  for (const format of AUDIO_FORMATS) {
    it(`${format}: chunks concatenate to the complete file`, () => {
      const chunks = Array.from(encodeAudioChunks(samples, rate, format, 2304));
      assert.ok(chunks.length > 3, `${chunks.length} chunks`);
      assert.deepEqual(concatBytes(chunks), encodeAudio(samples, rate, format));
    });
  }

  it("encodeMp3Chunks yields frames progressively; the concatenation parses as one MP3", async () => {
    const chunks: Uint8Array[] = [];
    for (const c of encodeMp3Chunks(samples, rate, "mp3_44100_192", 1152)) chunks.push(c);
    assert.ok(chunks.length > 10);
    const all = concatBytes(chunks);
    const meta = await parseBuffer(all, { mimeType: "audio/mpeg" }, { duration: true });
    assert.equal(meta.format.sampleRate, 44100);
    assert.equal(meta.format.bitrate, 192000);
    assert.ok(Math.abs((meta.format.duration ?? 0) - speechDurationSec(TEXT)) < 0.12);
  });

  it("rejects a non-mp3 format in encodeMp3Chunks", () => {
    assert.throws(() => Array.from(encodeMp3Chunks(samples, rate, "pcm_16000" as AudioFormat)), RangeError);
  });

  it("renderSpeechChunks renders at the format's rate", () => {
    const r = renderSpeechChunks({
      text: TEXT,
      voiceId: "v",
      variant: "m",
      settings: {},
      format: "pcm_24000",
    });
    const body = concatBytes(Array.from(r.chunks));
    assert.equal(body.length, 2 * Math.round(speechDurationSec(TEXT) * 24000));
    assert.ok(Math.abs(r.durationSec - speechDurationSec(TEXT)) < 1e-3);
  });
});
