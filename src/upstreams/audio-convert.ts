/**
 * What an adapter does to a real source's audio so the caller gets exactly what was asked (D26):
 * - transcoding from the 16-bit PCM a source returns into a format it lacks (MiniMax has no 192 kbps MP3
 *   and no mu-law): whole ({@link pcmToFormat}) or chunk by chunk while streaming ({@link PcmStreamEncoder});
 * - trimming a clip generated at a source's minimum down to the requested length ({@link trimAudio}: MP3
 *   at frame boundaries, PCM and mu-law by samples);
 * - the length of delivered audio, seconds ({@link audioDurationSec}).
 * Formats are the gateway's names (`mp3_44100_128`, `pcm_24000`, `ulaw_8000`, ...); PCM is raw signed
 * 16-bit little-endian mono, mu-law raw G.711 at 8 kHz (D20).
 */
import { Mp3Encoder } from "@breezystack/lamejs";
import { audioFormatInfo, type AudioFormatInfo, linearToUlaw } from "./simulator/encode.ts";
import { findMp3Frame, id3v2LengthAt, type Mp3Frame, mp3FramesFrom } from "./mp3-frames.ts";
import type { AudioFormat } from "./types.ts";

export { audioFormatInfo, type AudioFormatInfo };

/** Bytes of `view` without a copy. */
function asBytes(view: ArrayBufferView): Uint8Array {
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** Little-endian 16-bit samples of `bytes` (an even number of bytes). */
function int16Of(bytes: Uint8Array): Int16Array {
  const n = bytes.length >> 1;
  const out = new Int16Array(n);
  for (let i = 0, j = 0; i < n; i++, j += 2) out[i] = (bytes[j]! | (bytes[j + 1]! << 8)) << 16 >> 16;
  return out;
}

/** Linear resampling of 16-bit samples from `from` Hz to `to` Hz. */
function resample(pcm: Int16Array, from: number, to: number): Int16Array {
  if (from === to || pcm.length === 0) return pcm;
  const n = Math.max(1, Math.round((pcm.length * to) / from));
  const out = new Int16Array(n);
  const step = from / to;
  for (let i = 0; i < n; i++) {
    const x = i * step;
    const k = Math.floor(x);
    const a = pcm[Math.min(k, pcm.length - 1)]!;
    const b = pcm[Math.min(k + 1, pcm.length - 1)]!;
    out[i] = Math.round(a + (b - a) * (x - k));
  }
  return out;
}

/**
 * Converts a chunked stream of raw 16-bit PCM at `pcmRate` Hz into `format`, keeping an odd trailing
 * byte for the next chunk. MP3 goes through one lamejs encoder (the concatenation of every output is
 * one valid MP3 stream); mu-law and PCM at another rate are converted per chunk (linear resampling).
 * Call {@link push} for each chunk, then {@link end} once.
 */
export class PcmStreamEncoder {
  readonly #info: AudioFormatInfo;
  readonly #pcmRate: number;
  #carry: Uint8Array = new Uint8Array(0);
  #mp3: Mp3Encoder | null = null;

  /** @throws RangeError for a format name the gateway does not have. */
  constructor(format: AudioFormat, pcmRate: number) {
    this.#info = audioFormatInfo(format);
    this.#pcmRate = pcmRate;
    if (this.#info.codec === "mp3") this.#mp3 = new Mp3Encoder(1, this.#info.sampleRate, this.#info.bitrateKbps ?? 128);
  }

  /** The converted bytes of `chunk` (possibly empty: MP3 frames are emitted once complete). */
  push(chunk: Uint8Array): Uint8Array {
    let bytes = chunk;
    if (this.#carry.length > 0) {
      bytes = new Uint8Array(this.#carry.length + chunk.length);
      bytes.set(this.#carry);
      bytes.set(chunk, this.#carry.length);
    }
    const even = bytes.length & ~1;
    this.#carry = bytes.slice(even);
    const pcm = resample(int16Of(bytes.subarray(0, even)), this.#pcmRate, this.#info.sampleRate);
    switch (this.#info.codec) {
      case "mp3":
        return asBytes(this.#mp3!.encodeBuffer(pcm));
      case "ulaw": {
        const out = new Uint8Array(pcm.length);
        for (let i = 0; i < pcm.length; i++) out[i] = linearToUlaw(pcm[i]!);
        return out;
      }
      case "pcm":
        return asBytes(pcm.slice());
    }
  }

  /** The last bytes (the MP3 encoder's flush); empty for PCM and mu-law. */
  end(): Uint8Array {
    return this.#mp3 === null ? new Uint8Array(0) : asBytes(this.#mp3.flush());
  }
}

/** Converts whole raw 16-bit PCM at `pcmRate` Hz into `format` (see {@link PcmStreamEncoder}). */
export function pcmToFormat(pcm: Uint8Array, pcmRate: number, format: AudioFormat): Uint8Array {
  const enc = new PcmStreamEncoder(format, pcmRate);
  const head = enc.push(pcm);
  const tail = enc.end();
  const out = new Uint8Array(head.length + tail.length);
  out.set(head);
  out.set(tail, head.length);
  return out;
}

/**
 * The MP3 frames of `b` in order ({@link mp3FramesFrom}), from the first frame header (after an ID3v2 tag,
 * read leniently) to the last whole frame.
 */
function mp3Frames(b: Uint8Array): Mp3Frame[] {
  const frames: Mp3Frame[] = [];
  // Find the first frame, then walk frame by frame.
  const first = findMp3Frame(b, id3v2LengthAt(b, 0, "lenient"));
  if (first < 0) return frames;
  for (const f of mp3FramesFrom(b, first)) {
    if (f.offset + f.length > b.length) break;
    frames.push(f);
  }
  return frames;
}

/** Bytes per second of a raw format (PCM: 2 per sample; mu-law: 1), or null for MP3. */
function rawBytesPerSec(info: AudioFormatInfo): number | null {
  if (info.codec === "pcm") return info.sampleRate * 2;
  if (info.codec === "ulaw") return info.sampleRate;
  return null;
}

/**
 * The length of `body` in `format`, seconds: raw formats by their size, MP3 by its frames (0 when no
 * frame is found).
 */
export function audioDurationSec(body: Uint8Array, format: AudioFormat): number {
  const info = audioFormatInfo(format);
  const perSec = rawBytesPerSec(info);
  if (perSec !== null) return (body.length - (body.length % (info.codec === "pcm" ? 2 : 1))) / perSec;
  let sec = 0;
  for (const f of mp3Frames(body)) sec += f.samplesPerFrame / f.sampleRate;
  return sec;
}

/**
 * `body` cut to at most `seconds` (D26): raw formats at a sample boundary; MP3 after the last whole frame
 * that starts before `seconds` (so the clip may run up to one frame, 26 ms at 44.1 kHz, past it), keeping
 * any leading ID3 tag. A clip already short enough is returned as it is.
 */
export function trimAudio(body: Uint8Array, format: AudioFormat, seconds: number): Uint8Array {
  const info = audioFormatInfo(format);
  const perSec = rawBytesPerSec(info);
  if (perSec !== null) {
    const sampleBytes = info.codec === "pcm" ? 2 : 1;
    const keep = Math.round(seconds * info.sampleRate) * sampleBytes;
    return keep >= body.length ? body : body.subarray(0, keep);
  }
  let sec = 0;
  for (const f of mp3Frames(body)) {
    if (sec >= seconds - 1e-9) return body.subarray(0, f.offset);
    sec += f.samplesPerFrame / f.sampleRate;
  }
  return body;
}
