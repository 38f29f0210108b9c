import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createRng } from "../../../src/upstreams/simulator/rng.ts";
import {
  embedWatermarkPcm16,
  embedWatermarkUlaw,
  WATERMARK_MAX_BYTES,
  watermarkBits,
  WatermarkExtractor,
  watermarkFrame,
  type WatermarkHit,
} from "../../../src/upstreams/simulator/watermark.ts";

/** `n` deterministic pseudo-random bytes. */
function randomBytes(n: number, seed: string): Uint8Array {
  const r = createRng(seed);
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(r() * 256);
  return out;
}

/** `n` samples of speech-like noise (a random walk, as 16-bit values). */
function noisePcm(n: number, seed: string): Int16Array {
  const r = createRng(seed);
  const out = new Int16Array(n);
  let v = 0;
  for (let i = 0; i < n; i++) {
    v = Math.max(-30000, Math.min(30000, v * 0.98 + (r() - 0.5) * 4000));
    out[i] = Math.round(v);
  }
  return out;
}

function leBytes(pcm: Int16Array): Uint8Array {
  return new Uint8Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength));
}

/** Feeds `bytes` to a fresh extractor in slices of the given sizes, cycling; returns every hit. */
function extract(codec: "pcm" | "ulaw", bytes: Uint8Array, slices: readonly number[] = [bytes.length]): WatermarkHit[] {
  const x = new WatermarkExtractor(codec);
  const hits: WatermarkHit[] = [];
  let k = 0;
  for (let i = 0; i < bytes.length; ) {
    const n = Math.max(1, slices[k++ % slices.length]);
    hits.push(...x.push(bytes.subarray(i, i + n)));
    i += n;
  }
  return hits;
}

const TEXTS = ["Hello world. ", "Ünïcödé, 日本語のテキスト and emoji 🎙️ too! ", "x", ""];

describe("watermark", () => {
  for (const text of TEXTS) {
    it(`round-trips ${JSON.stringify(text)} in PCM and mu-law, whatever the slicing`, () => {
      const bits = watermarkBits(text) ?? 0;
      const lead = 1234; // audio before the chunk: the hit says where the chunk starts
      const pcm = noisePcm(lead + bits + 500, `pcm ${text}`);
      const chunk = pcm.subarray(lead);
      assert.ok(embedWatermarkPcm16(chunk, text));
      const bytes = leBytes(pcm);
      for (const slices of [[bytes.length], [1], [3, 7, 1, 333], [2]]) {
        const hits = extract("pcm", bytes, slices);
        assert.deepEqual(hits, [{ text, start: lead, end: lead + bits }], `slices ${slices.join(",")}`);
      }
      const ulaw = randomBytes(lead + bits + 100, `ulaw ${text}`);
      assert.ok(embedWatermarkUlaw(ulaw.subarray(lead), text));
      for (const slices of [[ulaw.length], [1], [5, 2, 999]]) {
        assert.deepEqual(extract("ulaw", ulaw, slices), [{ text, start: lead, end: lead + bits }]);
      }
    });
  }

  it("changes only the least significant bit of the frame's samples, deterministically", () => {
    const text = "Only the lowest bit changes.";
    const original = noisePcm(5000, "lsb");
    const a = original.slice();
    const b = original.slice();
    embedWatermarkPcm16(a, text);
    embedWatermarkPcm16(b, text);
    assert.deepEqual(a, b);
    const bits = watermarkBits(text) ?? 0;
    for (let i = 0; i < a.length; i++) {
      assert.ok(Math.abs(a[i] - original[i]) <= 1);
      assert.equal(a[i] >> 1, original[i] >> 1);
      if (i >= bits) assert.equal(a[i], original[i]);
    }
    const u = randomBytes(5000, "lsb ulaw");
    const v = u.slice();
    embedWatermarkUlaw(v, text);
    for (let i = 0; i < u.length; i++) assert.equal(v[i] & 0xfe, u[i] & 0xfe);
  });

  it("finds consecutive frames (one per chunk) in order", () => {
    const texts = ["First chunk. ", "Second chunk, ", "third."];
    const parts = texts.map((t, i) => {
      const p = noisePcm((watermarkBits(t) ?? 0) + 300 * (i + 1), `seq ${i}`);
      embedWatermarkPcm16(p, t);
      return p;
    });
    const all = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
    let off = 0;
    const starts: number[] = [];
    for (const p of parts) {
      starts.push(off);
      all.set(p, off);
      off += p.length;
    }
    const hits = extract("pcm", leBytes(all), [777]);
    assert.deepEqual(
      hits.map((h) => [h.text, h.start]),
      texts.map((t, i) => [t, starts[i]]),
    );
  });

  it("refuses texts over the bound and frames that do not fit", () => {
    assert.equal(watermarkFrame("a".repeat(WATERMARK_MAX_BYTES + 1)), null);
    assert.equal(watermarkBits("a".repeat(WATERMARK_MAX_BYTES + 1)), null);
    assert.notEqual(watermarkFrame("a".repeat(WATERMARK_MAX_BYTES)), null);
    const small = new Int16Array(50);
    assert.equal(embedWatermarkPcm16(small, "too long for fifty samples"), false);
    assert.deepEqual(small, new Int16Array(50));
    assert.equal(embedWatermarkUlaw(new Uint8Array(10), "x"), false);
  });

  it("finds nothing in random audio (millions of samples) and in silence", () => {
    // 4 M PCM samples and 8 M mu-law samples: a false frame has a chance below 2^-72 per sample.
    assert.deepEqual(extract("pcm", randomBytes(8 << 20, "random pcm"), [4093]), []);
    assert.deepEqual(extract("ulaw", randomBytes(8 << 20, "random ulaw"), [4096]), []);
    assert.deepEqual(extract("pcm", new Uint8Array(1 << 20)), []);
    assert.deepEqual(extract("ulaw", new Uint8Array(1 << 20).fill(0xff)), []);
  });

  it("rejects a frame with any bit flipped, a wrong version and a length over the bound", () => {
    const text = "Corrupt me.";
    const frameBits = watermarkBits(text) ?? 0;
    const clean = noisePcm(frameBits + 64, "flip");
    embedWatermarkPcm16(clean, text);
    assert.equal(extract("pcm", leBytes(clean)).length, 1);
    // Every bit after the magic: version, length, text, CRC (a flipped magic bit only hides the frame).
    for (let i = 0; i < frameBits; i++) {
      const p = clean.slice();
      p[i] ^= 1;
      assert.deepEqual(extract("pcm", leBytes(p)), [], `bit ${i}`);
    }
    // A valid magic followed by a length over the bound is dropped as soon as the length is read.
    const frame = watermarkFrame(text) as Uint8Array;
    const forged = frame.slice();
    new DataView(forged.buffer).setUint16(5, WATERMARK_MAX_BYTES + 1);
    const x = new WatermarkExtractor("ulaw");
    const bytes = new Uint8Array(forged.length * 8);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (forged[i >> 3] >> (7 - (i & 7))) & 1;
    assert.deepEqual(x.push(bytes.subarray(0, 7 * 8)), []);
    assert.equal(x.horizon, x.samples - 31, "the candidate is dropped once its length is read");
  });

  it("does not stall on adversarial magics: candidates stay bounded and give the horizon back", () => {
    // The magic every 40 samples, then random bits: candidates start, fail on their version or CRC, and go.
    const frame = watermarkFrame("") as Uint8Array;
    const x = new WatermarkExtractor("ulaw");
    const r = createRng("adversarial");
    const bytes: number[] = [];
    for (let k = 0; k < 2000; k++) {
      for (let i = 0; i < 32; i++) bytes.push((frame[i >> 3] >> (7 - (i & 7))) & 1);
      for (let i = 0; i < 8; i++) bytes.push(r() < 0.5 ? 0 : 1);
    }
    for (let i = 0; i < 200_000; i++) bytes.push(r() < 0.5 ? 0 : 1);
    assert.deepEqual(x.push(Uint8Array.from(bytes)), []);
    assert.equal(x.horizon, x.samples - 31);
  });
});
