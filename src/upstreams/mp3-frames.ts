/**
 * The one MPEG audio Layer III frame parser of the gateway, pure and synchronous, used by the adapters'
 * audio conversion (audio-convert.ts: the length and the trimming of delivered MP3, D26) and by the check
 * of voice-clone reference recordings (audio/reference-audio.ts: sniffing and the structural pre-check,
 * D20):
 * - {@link mp3FrameAt}: the frame header at an offset (MPEG-1, 2 and 2.5; free format is not accepted);
 * - {@link mp3ChainAt} and {@link findMp3Frame}: where the frames start, verified over a chain of frames;
 * - {@link mp3FramesFrom}: the frames one after the other;
 * - {@link id3v2LengthAt}: the length of an ID3v2 tag before the audio.
 * Each caller applies its own policy on top (where a walk stops, how many frames verify a start).
 */

/** One MPEG audio Layer III frame, from its 4-byte header. */
export interface Mp3Frame {
  /** Where the frame starts in the bytes it was read from. */
  offset: number;
  /** 1 (MPEG-1), 2 (MPEG-2) or 2.5 (MPEG-2.5). */
  version: 1 | 2 | 2.5;
  /** Hz. */
  sampleRate: number;
  /** Samples the frame holds: 1152 (MPEG-1) or 576 (MPEG-2/2.5). */
  samplesPerFrame: 1152 | 576;
  /** Whole frame length in bytes, header included. */
  length: number;
  /** Length of the side information after the header, bytes (where a Xing/Info tag starts). */
  sideInfoLength: number;
}

/** Bit rates (kbit/s) of MPEG-1 and of MPEG-2/2.5 Layer III by index. */
const L3_KBPS_V1 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const L3_KBPS_V2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
/** MPEG-1 sample rates by index; MPEG-2 halves them, MPEG-2.5 quarters them. */
const BASE_RATES = [44100, 48000, 32000];

/**
 * The Layer III frame header at `at`, or null. Requires the 11-bit sync, a defined version, layer III,
 * a bit-rate index 1..14 (free format is not accepted) and a defined sample-rate index. The frame may run
 * past the end of `b` (only its header is read).
 */
export function mp3FrameAt(b: Uint8Array, at: number): Mp3Frame | null {
  if (at < 0 || at + 4 > b.length) return null;
  const b1 = b[at + 1];
  if (b[at] !== 0xff || (b1 & 0xe0) !== 0xe0) return null;
  const versionBits = (b1 >> 3) & 3; // 0 = 2.5, 1 = reserved, 2 = 2, 3 = 1
  if (versionBits === 1 || ((b1 >> 1) & 3) !== 1) return null; // layer bits 01 = layer III
  const b2 = b[at + 2];
  const bitrateIndex = b2 >> 4;
  const rateIndex = (b2 >> 2) & 3;
  if (bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) return null;
  const version = versionBits === 3 ? 1 : versionBits === 2 ? 2 : 2.5;
  const sampleRate = BASE_RATES[rateIndex] / (version === 1 ? 1 : version === 2 ? 2 : 4);
  const kbps = (version === 1 ? L3_KBPS_V1 : L3_KBPS_V2)[bitrateIndex];
  const samplesPerFrame = version === 1 ? 1152 : 576;
  const padding = (b2 >> 1) & 1;
  const length = Math.floor(((samplesPerFrame / 8) * kbps * 1000) / sampleRate) + padding;
  const mono = b[at + 3] >> 6 === 3;
  const sideInfoLength = version === 1 ? (mono ? 17 : 32) : mono ? 9 : 17;
  return { offset: at, version, sampleRate, samplesPerFrame, length, sideInfoLength };
}

/**
 * The frames of `b` one after the other from the frame at `at`: each starts where the previous one ends,
 * until no frame header is found there (the end of `b`, or bytes that are not a frame). The last frame
 * may run past the end of `b`; frames of another version or sample rate are yielded too (the caller
 * stops where its policy says).
 */
export function* mp3FramesFrom(b: Uint8Array, at: number): Generator<Mp3Frame> {
  for (let f = mp3FrameAt(b, at); f !== null; f = mp3FrameAt(b, f.offset + f.length)) yield f;
}

/**
 * True when `count` consecutive Layer III frames of one version and sample rate start at `at`; a chain
 * that runs into the end of `b` first also counts (a short head, or a short file).
 */
export function mp3ChainAt(b: Uint8Array, at: number, count: number): boolean {
  const first = mp3FrameAt(b, at);
  if (!first) return false;
  let p = at;
  for (let n = 0; n < count; n++) {
    if (p + 4 > b.length) return true;
    const f = mp3FrameAt(b, p);
    if (!f || f.version !== first.version || f.sampleRate !== first.sampleRate) return false;
    p += f.length;
  }
  return true;
}

/**
 * Where the first MPEG audio starts at or after `from`: the first offset with a chain of `chain`
 * frames ({@link mp3ChainAt}; 1: a single frame header), looking at most `maxSkip` bytes past `from`
 * (default: to the end). -1 when there is none.
 */
export function findMp3Frame(b: Uint8Array, from: number, chain = 1, maxSkip = Infinity): number {
  const limit = Math.min(b.length - 4, from + maxSkip);
  for (let p = Math.max(0, from); p <= limit; p++) {
    if (b[p] === 0xff && mp3ChainAt(b, p, chain)) return p;
  }
  return -1;
}

/** How {@link id3v2LengthAt} reads a tag header. */
export type Id3v2Reading = "strict" | "lenient";

/**
 * Byte length of the ID3v2 tag at `at` (header, body and optional footer), or 0 when there is none.
 * - `"strict"` (the sniffer's reading, where a file that merely starts with `ID3` must not pass for MP3):
 *   a tag needs major version 2..4, a defined revision and sync-safe size bytes; only ID3v2.4 has a footer.
 * - `"lenient"` (the trimmer's reading of audio an upstream sent): any `ID3` header is a tag, the size
 *   bytes' top bits are ignored and a footer flag counts whatever the version.
 */
export function id3v2LengthAt(b: Uint8Array, at: number, reading: Id3v2Reading): number {
  if (at < 0 || at + 10 > b.length || b[at] !== 0x49 || b[at + 1] !== 0x44 || b[at + 2] !== 0x33) return 0;
  const major = b[at + 3];
  const footerFlag = (b[at + 5] & 0x10) !== 0;
  if (reading === "lenient") {
    const size = ((b[at + 6] & 0x7f) << 21) | ((b[at + 7] & 0x7f) << 14) | ((b[at + 8] & 0x7f) << 7) | (b[at + 9] & 0x7f);
    return 10 + size + (footerFlag ? 10 : 0);
  }
  if (major < 2 || major > 4 || b[at + 4] === 0xff) return 0;
  for (let i = 6; i < 10; i++) if (b[at + i] & 0x80) return 0;
  const size = (b[at + 6] << 21) | (b[at + 7] << 14) | (b[at + 8] << 7) | b[at + 9];
  return 10 + size + (major === 4 && footerFlag ? 10 : 0);
}
