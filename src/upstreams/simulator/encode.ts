/**
 * Audio encoding of the simulator: MP3 (lamejs), raw 16-bit PCM and G.711 mu-law in the formats of the
 * spec, whole or as chunks. Deterministic: the same samples always give the same bytes.
 */
import { Mp3Encoder } from "@breezystack/lamejs";
import type { AudioFormat } from "../types.ts";
import { resampleLinear } from "./signal.ts";
import { concatBytes } from "../util.ts";

/** Codec, sample rate (Hz) and, for MP3, bit rate (kbit/s) of an {@link AudioFormat}. */
export interface AudioFormatInfo {
  codec: "mp3" | "pcm" | "ulaw";
  sampleRate: number;
  bitrateKbps: number | null;
}

/** Parses a format name such as `mp3_44100_128`, `pcm_24000` or `ulaw_8000`. */
export function audioFormatInfo(format: AudioFormat): AudioFormatInfo {
  const [codec, rate, kbps] = format.split("_");
  if (codec !== "mp3" && codec !== "pcm" && codec !== "ulaw")
    throw new RangeError(`unknown format ${format}`);
  return { codec, sampleRate: Number(rate), bitrateKbps: codec === "mp3" ? Number(kbps) : null };
}

/** Float samples (-1..1, clipped) to signed 16-bit integers. */
export function floatToInt16(samples: Float32Array): Int16Array {
  const out = new Int16Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    const v = samples[i];
    const c = Math.min(1, Math.max(-1, v));
    out[i] = c < 0 ? Math.round(c * 32768) : Math.round(c * 32767);
  }
  return out;
}

/** Raw 16-bit little-endian bytes of `pcm` (no header): 2 bytes per sample, low byte first. */
export function int16ToLeBytes(pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(pcm.length * 2);
  for (let i = 0, j = 0; i < pcm.length; i++, j += 2) {
    const v = pcm[i];
    out[j] = v & 0xff;
    out[j + 1] = (v >> 8) & 0xff;
  }
  return out;
}

/** G.711 mu-law encoding of one signed 16-bit sample. */
export function linearToUlaw(sample: number): number {
  const BIAS = 0x84;
  const CLIP = 32635;
  let s = sample;
  const sign = s < 0 ? 0x80 : 0;
  if (s < 0) s = -s;
  if (s > CLIP) s = CLIP;
  s += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** G.711 mu-law decoding of one byte to a signed 16-bit sample (inverse of {@link linearToUlaw}). */
export function ulawToLinear(byte: number): number {
  const u = ~byte & 0xff;
  const sign = u & 0x80;
  const exponent = (u >> 4) & 0x07;
  const mantissa = u & 0x0f;
  const s = (((mantissa << 3) + 0x84) << exponent) - 0x84;
  return sign ? -s : s;
}

/** 16-bit samples as G.711 mu-law bytes (1 byte per sample). */
export function int16ToUlaw(pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = linearToUlaw(pcm[i]);
  return out;
}

/** Samples per MPEG frame: 1152 for MPEG-1 (32, 44.1, 48 kHz), 576 for MPEG-2/2.5 (lower rates). */
export function mp3FrameSamples(sampleRate: number): number {
  return sampleRate >= 32000 ? 1152 : 576;
}

/** Default chunk size of the chunked encoders: about 0.2 s of audio, a whole number of MP3 frames. */
export function defaultChunkSamples(rate: number): number {
  const frame = mp3FrameSamples(rate);
  return Math.max(frame, Math.round((rate * 0.2) / frame) * frame);
}

/** The bytes of `view` (no copy). */
function asBytes(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/**
 * Streaming MP3 encoder: encodes `samples` (mono, -1..1 at `sampleRate` Hz; resampled linearly to the
 * format's rate) as MP3 with the bit rate of `format`, feeding `chunkSamples` samples (at the format's
 * rate) at a time and yielding each non-empty piece of MP3 frames the encoder produces, then the flush.
 * The concatenation of all yielded pieces is one valid, complete MP3 stream (MPEG-1 Layer III at 44.1
 * kHz, MPEG-2 Layer III at 22.05 kHz), byte-identical to {@link encodeAudio}.
 */
export function* encodeMp3Chunks(
  samples: Float32Array,
  sampleRate: number,
  format: AudioFormat,
  chunkSamples?: number,
): Generator<Uint8Array, void, undefined> {
  const info = audioFormatInfo(format);
  if (info.codec !== "mp3" || info.bitrateKbps === null)
    throw new RangeError(`${format} is not an mp3 format`);
  const pcm = floatToInt16(resampleLinear(samples, sampleRate, info.sampleRate));
  const step = Math.max(1, Math.floor(chunkSamples ?? defaultChunkSamples(info.sampleRate)));
  const enc = new Mp3Encoder(1, info.sampleRate, info.bitrateKbps);
  for (let i = 0; i < pcm.length; i += step) {
    const out = enc.encodeBuffer(pcm.subarray(i, Math.min(pcm.length, i + step)));
    if (out.length > 0) yield asBytes(out);
  }
  const tail = enc.flush();
  if (tail.length > 0) yield asBytes(tail);
}

/**
 * Chunked encoder for every format: MP3 via {@link encodeMp3Chunks}; `pcm_*` and `ulaw_8000` yield
 * consecutive slices of the raw byte stream, each covering `chunkSamples` samples at the format's rate
 * (default about 0.2 s). The concatenation equals {@link encodeAudio}'s result.
 */
export function* encodeAudioChunks(
  samples: Float32Array,
  sampleRate: number,
  format: AudioFormat,
  chunkSamples?: number,
): Generator<Uint8Array, void, undefined> {
  const info = audioFormatInfo(format);
  if (info.codec === "mp3") {
    yield* encodeMp3Chunks(samples, sampleRate, format, chunkSamples);
    return;
  }
  const step = Math.max(1, Math.floor(chunkSamples ?? defaultChunkSamples(info.sampleRate)));
  const pcm = floatToInt16(resampleLinear(samples, sampleRate, info.sampleRate));
  for (let i = 0; i < pcm.length; i += step) {
    const part = pcm.subarray(i, Math.min(pcm.length, i + step));
    yield info.codec === "pcm" ? int16ToLeBytes(part) : int16ToUlaw(part);
  }
}

/**
 * Encodes mono `samples` (-1..1 at `sampleRate` Hz) in `format`, resampling linearly to the format's
 * rate: MP3 (mono, the format's rate and bit rate), `pcm_<rate>` (raw 16-bit little-endian signed, no
 * header: 2 bytes per sample) or `ulaw_8000` (raw G.711 mu-law, 1 byte per sample at 8 kHz).
 */
export function encodeAudio(samples: Float32Array, sampleRate: number, format: AudioFormat): Uint8Array {
  const info = audioFormatInfo(format);
  if (info.codec !== "mp3") {
    const pcm = floatToInt16(resampleLinear(samples, sampleRate, info.sampleRate));
    return info.codec === "pcm" ? int16ToLeBytes(pcm) : int16ToUlaw(pcm);
  }
  return concatBytes(Array.from(encodeMp3Chunks(samples, sampleRate, format)));
}
