/**
 * The simulator's speech watermark (D43: "speech the simulator made from text comes back as that text"):
 * the text of a realtime speech chunk, written into the least significant bit of its first samples, so that
 * the simulated realtime transcription can read back what the simulated voice said, whatever the gateway
 * or the client did to the bytes in between short of re-encoding them.
 *
 * Frame, one bit per sample from the chunk's first sample, each byte most significant bit first:
 *
 * | bytes | field |
 * |---|---|
 * | 4 | magic `F5 9E 3B 62` |
 * | 1 | version (1) |
 * | 2 | length `n` of the text in UTF-8 bytes, big-endian (at most {@link WATERMARK_MAX_BYTES}) |
 * | n | the text, UTF-8 |
 * | 4 | CRC-32 (node:zlib `crc32`) of version, length and text, big-endian |
 *
 * The carrier bit is bit 0 of each 16-bit little-endian PCM sample (bit 0 of its low byte) or bit 0 of
 * each G.711 mu-law byte: at most one quantization step, inaudible (-90 dBFS in PCM; in mu-law one step of
 * the sample's segment). MP3 carries no watermark (a lossy codec would not keep it).
 *
 * False positives: a frame is accepted only after its magic (32 bits), its version (8), a length within
 * the bound and a matching CRC-32 (32) over well-formed UTF-8, so random audio produces one by chance with
 * a probability below 2^-72 per sample: never, in practice. The magic's first byte (F5) never occurs in
 * UTF-8, and the carrier bits of silence (all zero in PCM, all one in mu-law) never match it.
 */
import { crc32 } from "node:zlib";

/** The frame's first four bytes. */
const MAGIC = 0xf59e3b62;
/** The frame layout version this module writes and reads. */
const VERSION = 1;
/** Longest text carried, UTF-8 bytes (about 18 minutes of speech at 15 characters per second). */
export const WATERMARK_MAX_BYTES = 16384;
/** Bits of a frame besides the text: magic, version, length, CRC. */
const OVERHEAD_BITS = (4 + 1 + 2 + 4) * 8;
/** At most this many candidate frames are followed at once (more only in adversarial input). */
const MAX_CANDIDATES = 8;

const utf8 = new TextEncoder();

/**
 * The frame bytes carrying `text` (layout in the module comment), or null when its UTF-8 form is longer
 * than {@link WATERMARK_MAX_BYTES}.
 */
export function watermarkFrame(text: string): Uint8Array | null {
  const payload = utf8.encode(text);
  if (payload.length > WATERMARK_MAX_BYTES) return null;
  const frame = new Uint8Array(4 + 1 + 2 + payload.length + 4);
  const dv = new DataView(frame.buffer);
  dv.setUint32(0, MAGIC);
  frame[4] = VERSION;
  dv.setUint16(5, payload.length);
  frame.set(payload, 7);
  dv.setUint32(7 + payload.length, crc32(frame.subarray(4, 7 + payload.length)));
  return frame;
}

/** Bit `i` of `frame`, most significant bit of each byte first. */
function bitOf(frame: Uint8Array, i: number): number {
  return (frame[i >> 3] >> (7 - (i & 7))) & 1;
}

/**
 * Writes the watermark of `text` into bit 0 of the first samples of `pcm` (16-bit samples; in the
 * little-endian bytes that is bit 0 of each low byte), in place. Returns false, leaving `pcm` as it was,
 * when the text is too long ({@link WATERMARK_MAX_BYTES}) or the frame needs more samples than `pcm` has.
 */
export function embedWatermarkPcm16(pcm: Int16Array, text: string): boolean {
  const frame = watermarkFrame(text);
  if (frame === null || frame.length * 8 > pcm.length) return false;
  for (let i = 0; i < frame.length * 8; i++) pcm[i] = (pcm[i] & ~1) | bitOf(frame, i);
  return true;
}

/**
 * Writes the watermark of `text` into bit 0 of the first bytes of `ulaw` (G.711 mu-law, one byte per
 * sample), in place; false as {@link embedWatermarkPcm16}.
 */
export function embedWatermarkUlaw(ulaw: Uint8Array, text: string): boolean {
  const frame = watermarkFrame(text);
  if (frame === null || frame.length * 8 > ulaw.length) return false;
  for (let i = 0; i < frame.length * 8; i++) ulaw[i] = (ulaw[i] & 0xfe) | bitOf(frame, i);
  return true;
}

/** A watermark found in a stream: its text and the samples its frame spans (`start` inclusive, `end` exclusive). */
export interface WatermarkHit {
  text: string;
  /** Index of the frame's first sample (the first sample of the chunk that carries it), from the stream's start. */
  start: number;
  end: number;
}

/** A frame being read: where its magic started and the bytes after the magic so far. */
interface Candidate {
  start: number;
  bytes: Uint8Array;
  /** Bits read after the magic. */
  bits: number;
  /** Total bytes after the magic once the length is known (version + length + text + CRC), else 0. */
  need: number;
}

const fatalUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads watermarks out of a stream of audio, one carrier bit per sample, however the audio is cut into
 * pieces: a frame may span any number of pieces. {@link WatermarkExtractor.pushBit} takes one sample's
 * bit; {@link WatermarkExtractor.push} takes raw bytes of the stream's codec (a 16-bit PCM sample may be
 * split between two pushes). Sample indices count from the first sample pushed.
 */
export class WatermarkExtractor {
  readonly #codec: "pcm" | "ulaw";
  /** The last 32 bits, newest in bit 0. */
  #reg = 0;
  /** Samples (bits) read so far. */
  #count = 0;
  #candidates: Candidate[] = [];
  /** A PCM sample's low byte waiting for its high byte (the carrier bit is in the low byte). */
  #pendingLow = -1;

  /** `codec`: how {@link WatermarkExtractor.push} reads bytes (16-bit little-endian PCM, or mu-law). */
  constructor(codec: "pcm" | "ulaw") {
    this.#codec = codec;
  }

  /** Samples read so far. */
  get samples(): number {
    return this.#count;
  }

  /**
   * The first sample that may still belong to a frame not yet complete: samples before it are known to
   * be outside any frame not yet reported. Equals {@link WatermarkExtractor.samples} minus at most 31
   * (a magic may be arriving) unless a candidate frame is being read.
   */
  get horizon(): number {
    let h = Math.max(0, this.#count - 31);
    for (const c of this.#candidates) h = Math.min(h, c.start);
    return h;
  }

  /** Reads raw bytes of the codec; returns the watermarks completed by them, in order. */
  push(bytes: Uint8Array): WatermarkHit[] {
    const hits: WatermarkHit[] = [];
    let i = 0;
    if (this.#codec === "ulaw") {
      for (; i < bytes.length; i++) this.#collect(this.pushBit(bytes[i] & 1), hits);
      return hits;
    }
    if (this.#pendingLow >= 0 && bytes.length > 0) {
      this.#collect(this.pushBit(this.#pendingLow & 1), hits);
      this.#pendingLow = -1;
      i = 1;
    }
    for (; i + 1 < bytes.length; i += 2) this.#collect(this.pushBit(bytes[i] & 1), hits);
    if (i < bytes.length) this.#pendingLow = bytes[i];
    return hits;
  }

  #collect(hit: WatermarkHit | null, into: WatermarkHit[]): void {
    if (hit !== null) into.push(hit);
  }

  /** Reads the carrier bit (0 or 1) of the next sample; returns the watermark it completes, if any. */
  pushBit(bit: number): WatermarkHit | null {
    const b = bit & 1;
    this.#count++;
    this.#reg = ((this.#reg << 1) | b) >>> 0;
    let hit: WatermarkHit | null = null;
    if (this.#candidates.length > 0) {
      for (let k = 0; k < this.#candidates.length; k++) {
        const c = this.#candidates[k];
        const verdict = this.#advance(c, b);
        if (verdict === "fail") {
          this.#candidates.splice(k, 1);
          k--;
        } else if (verdict !== "more" && hit === null) {
          hit = { text: verdict, start: c.start, end: this.#count };
        }
      }
      // A verified frame ends every candidate that began inside it or before it: genuine frames never overlap.
      if (hit !== null) {
        const end = hit.end;
        this.#candidates = this.#candidates.filter((c) => c.start >= end);
      }
    }
    if (this.#count >= 32 && this.#reg === MAGIC && this.#candidates.length < MAX_CANDIDATES) {
      this.#candidates.push({ start: this.#count - 32, bytes: new Uint8Array(7), bits: 0, need: 0 });
    }
    return hit;
  }

  /** Adds one bit to `c`: "more" while incomplete, "fail" once it cannot be a frame, else the frame's text. */
  #advance(c: Candidate, bit: number): "more" | "fail" | string {
    const byteIndex = c.bits >> 3;
    if (byteIndex >= c.bytes.length) return "fail";
    c.bytes[byteIndex] = (c.bytes[byteIndex] << 1) | bit;
    c.bits++;
    if ((c.bits & 7) !== 0) return "more";
    const done = c.bits >> 3; // whole bytes read after the magic
    if (done === 1 && c.bytes[0] !== VERSION) return "fail";
    if (done === 3) {
      const n = (c.bytes[1] << 8) | c.bytes[2];
      if (n > WATERMARK_MAX_BYTES) return "fail";
      c.need = 3 + n + 4;
      const grown = new Uint8Array(c.need);
      grown.set(c.bytes.subarray(0, 3));
      c.bytes = grown;
    }
    if (c.need === 0 || done < c.need) return "more";
    const body = c.bytes.subarray(0, c.need - 4);
    const crc = new DataView(c.bytes.buffer, c.bytes.byteOffset + c.need - 4, 4).getUint32(0);
    if (crc32(body) !== crc) return "fail";
    try {
      return fatalUtf8.decode(body.subarray(3));
    } catch {
      return "fail";
    }
  }
}

/** Bits a frame carrying `text` takes (one sample each), or null when the text is too long to carry. */
export function watermarkBits(text: string): number | null {
  const n = utf8.encode(text).length;
  return n > WATERMARK_MAX_BYTES ? null : OVERHEAD_BITS + 8 * n;
}
