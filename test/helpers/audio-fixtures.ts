/**
 * Audio fixture generators for tests (voice-clone reference recordings and anything else that needs a
 * real audio file). Everything is built in memory, deterministically, without external tools; nothing
 * here reads a file.
 *
 * - {@link makeWav}: PCM WAV with a tone, any duration and sample rate.
 * - {@link makeMp3}: a real MP3 (lamejs; MPEG-2 Layer III, mono, 22.05 kHz, 32 kbps, CBR, no Xing tag).
 * - {@link makeMp3HeaderClaiming}: the first few KB of a long MP3: an `Info`/`Xing`/`VBRI` header frame
 *   whose frame count claims a duration, then a few real frames (MPEG-2 Layer III, 24 kHz, 48 kbps).
 * - {@link makeM4a}: a minimal but structurally complete M4A (`ftyp` + `moov` + `mdat`, AAC-LC mono
 *   silent frames) whose `mdhd` duration states the length.
 * - {@link withId3v2}: prefixes an ID3v2.4 tag.
 * - {@link corruptAudio}, {@link pngBytes}: inputs that must be refused.
 */
import { crc32, deflateSync } from "node:zlib";
import { Mp3Encoder } from "@breezystack/lamejs";
import { concatBytes } from "../../src/upstreams/util.ts";

const ascii = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "latin1"));

const concat = concatBytes;

function u32be(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n >>> 0, false);
  return b;
}

function u16be(n: number): Uint8Array {
  const b = new Uint8Array(2);
  new DataView(b.buffer).setUint16(0, n, false);
  return b;
}

/** Mono 16-bit tone samples: a 220 Hz sine with a slow 3 Hz tremolo, amplitude about 0.3 FS. */
function tone(samples: number, sampleRate: number): Int16Array {
  const pcm = new Int16Array(samples);
  for (let i = 0; i < samples; i++) {
    const t = i / sampleRate;
    const env = 0.6 + 0.4 * Math.sin(2 * Math.PI * 3 * t);
    pcm[i] = Math.round(10000 * env * Math.sin(2 * Math.PI * 220 * t));
  }
  return pcm;
}

/**
 * A valid RIFF/WAVE file: PCM 16-bit mono at `sampleRate` Hz with `round(seconds x sampleRate)`
 * samples of a tone, so its duration is exactly that sample count / rate (10 s at 16 kHz = 10.0 s).
 * Size: 44 + 2 x samples bytes (12 s at 16 kHz is about 384 KB).
 */
export function makeWav(seconds: number, sampleRate = 16000): Uint8Array {
  const samples = Math.round(seconds * sampleRate);
  const dataBytes = samples * 2;
  const out = new Uint8Array(44 + dataBytes);
  const dv = new DataView(out.buffer);
  out.set(ascii("RIFF"), 0);
  dv.setUint32(4, 36 + dataBytes, true);
  out.set(ascii("WAVEfmt "), 8);
  dv.setUint32(16, 16, true); // fmt chunk size
  dv.setUint16(20, 1, true); // PCM
  dv.setUint16(22, 1, true); // mono
  dv.setUint32(24, sampleRate, true);
  dv.setUint32(28, sampleRate * 2, true); // byte rate
  dv.setUint16(32, 2, true); // block align
  dv.setUint16(34, 16, true); // bits per sample
  out.set(ascii("data"), 36);
  dv.setUint32(40, dataBytes, true);
  const pcm = tone(samples, sampleRate);
  for (let i = 0; i < samples; i++) dv.setInt16(44 + 2 * i, pcm[i], true);
  return out;
}

function encodeMp3(pcm: Int16Array, sampleRate: number, kbps: number): Uint8Array {
  const enc = new Mp3Encoder(1, sampleRate, kbps);
  const parts: Uint8Array[] = [];
  const step = 1152 * 16;
  for (let i = 0; i < pcm.length; i += step) {
    const out = enc.encodeBuffer(pcm.subarray(i, Math.min(pcm.length, i + step)));
    if (out.length > 0) parts.push(new Uint8Array(out.buffer, out.byteOffset, out.byteLength));
  }
  const tail = enc.flush();
  if (tail.length > 0) parts.push(new Uint8Array(tail.buffer, tail.byteOffset, tail.byteLength));
  return concat(parts);
}

/**
 * A real MP3 of a tone, `seconds` long: lamejs `Mp3Encoder`, mono, 22050 Hz, 32 kbps CBR (MPEG-2
 * Layer III frames of 104/105 bytes, 576 samples = 26.1 ms each), no ID3 and no Xing tag, so a reader
 * derives the duration from the file size (within a frame or two of `seconds`). About 4 KB per second.
 */
export function makeMp3(seconds: number): Uint8Array {
  return encodeMp3(tone(Math.round(seconds * 22050), 22050), 22050, 32);
}

/**
 * The frames of an MPEG Layer III stream that starts with a frame (as lamejs writes it), by walking
 * the frame headers; stops at the first byte that is not a frame header.
 */
export function mp3Frames(mp3: Uint8Array): Uint8Array[] {
  const v1 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
  const v2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
  const frames: Uint8Array[] = [];
  let p = 0;
  while (p + 4 <= mp3.length && mp3[p] === 0xff && (mp3[p + 1] & 0xe6) === 0xe2) {
    const ver = (mp3[p + 1] >> 3) & 3; // 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5
    const kbps = (ver === 3 ? v1 : v2)[mp3[p + 2] >> 4];
    const rate = [44100, 48000, 32000][(mp3[p + 2] >> 2) & 3] / (ver === 3 ? 1 : ver === 2 ? 2 : 4);
    if (!kbps || !rate) break;
    const len = Math.floor(((ver === 3 ? 144 : 72) * kbps * 1000) / rate) + ((mp3[p + 2] >> 1) & 1);
    frames.push(mp3.subarray(p, p + len));
    p += len;
  }
  return frames;
}

/**
 * A long MP3 made cheaply: the frames of `mp3` (a lamejs stream: no bit reservoir, so every frame
 * decodes on its own) repeated in order until there are `frameCount` of them. With {@link makeMp3}
 * frames (576 samples at 22.05 kHz) 100,000 frames are about 10.4 MB and 2612 s.
 */
export function loopMp3Frames(mp3: Uint8Array, frameCount: number): Uint8Array {
  const frames = mp3Frames(mp3);
  if (frames.length === 0) throw new RangeError("no MPEG frames to loop");
  const out: Uint8Array[] = [];
  for (let i = 0; i < frameCount; i++) out.push(frames[i % frames.length]);
  return concat(out);
}

/**
 * A variable-bit-rate MP3 without any Xing/VBRI tag, `seconds` long: the frames of two lamejs
 * encodings of the same tone (22050 Hz mono, 32 and 64 kbps; lamejs disables the bit reservoir, so
 * each frame decodes on its own) taken alternately. A reader can only get its duration by counting
 * frames (576 samples each).
 */
export function makeVbrMp3(seconds: number): Uint8Array {
  const pcm = tone(Math.round(seconds * 22050), 22050);
  const a = mp3Frames(encodeMp3(pcm, 22050, 32));
  const b = mp3Frames(encodeMp3(pcm, 22050, 64));
  const n = Math.min(a.length, b.length);
  const out: Uint8Array[] = [];
  for (let i = 0; i < n; i++) out.push(i % 3 === 2 ? b[i] : a[i]);
  return concat(out);
}

/** Frame geometry of {@link makeMp3HeaderClaiming}: MPEG-2 Layer III, 24 kHz, 48 kbps, mono. */
export const CLAIM_FRAME = { sampleRate: 24000, samplesPerFrame: 576, bytes: 144, kbps: 48 } as const;

/**
 * The head of a long MP3: one header frame carrying a `tag` (`Info` = LAME's CBR tag, default;
 * `Xing` = VBR tag; both with the frames and bytes fields; or Fraunhofer `VBRI`) whose frame count
 * claims `seconds` of audio, followed by `realSeconds` (default 0.5) of real lamejs frames of the same
 * format (MPEG-2 Layer III, mono, 24 kHz, 48 kbps: 144-byte frames of 24 ms). The claimed duration is
 * `ceil(seconds / 0.024)` frames x 24 ms, so multiples of 24 ms (300 s, 360 s) are claimed exactly.
 * About 3.6 KB with the default `realSeconds`. Models an upload cut after its first frames.
 */
export function makeMp3HeaderClaiming(
  seconds: number,
  opts: { tag?: "Info" | "Xing" | "VBRI"; realSeconds?: number } = {},
): Uint8Array {
  const tag = opts.tag ?? "Info";
  const real = encodeMp3(
    tone(Math.round((opts.realSeconds ?? 0.5) * CLAIM_FRAME.sampleRate), CLAIM_FRAME.sampleRate),
    CLAIM_FRAME.sampleRate,
    CLAIM_FRAME.kbps,
  );
  // Sanity: lamejs must have produced the intended frame format.
  if (real[0] !== 0xff || real[1] !== 0xf3 || real[2] !== 0x64) {
    throw new Error(`unexpected lamejs frame header ${Buffer.from(real.subarray(0, 4)).toString("hex")}`);
  }
  const frames = Math.ceil(seconds / (CLAIM_FRAME.samplesPerFrame / CLAIM_FRAME.sampleRate) - 1e-9);
  const frame = new Uint8Array(CLAIM_FRAME.bytes);
  frame.set(real.subarray(0, 4), 0); // same header as the real frames
  const dv = new DataView(frame.buffer);
  const streamBytes = (frames + 1) * CLAIM_FRAME.bytes;
  if (tag === "VBRI") {
    // Fraunhofer VBRI: 32 bytes after the 4-byte header, whatever the MPEG version or mode.
    frame.set(ascii("VBRI"), 36);
    dv.setUint16(40, 1); // version
    dv.setUint16(42, 0); // delay
    dv.setUint16(44, 75); // quality
    dv.setUint32(46, streamBytes);
    dv.setUint32(50, frames);
    dv.setUint16(54, 0); // TOC entries
    dv.setUint16(56, 1); // TOC scale
    dv.setUint16(58, 2); // TOC entry size
    dv.setUint16(60, 1); // frames per TOC entry
  } else {
    // Xing/Info: after the side information (9 bytes for MPEG-2 mono).
    const at = 4 + 9;
    frame.set(ascii(tag), at);
    dv.setUint32(at + 4, 0x3); // flags: frames + bytes
    dv.setUint32(at + 8, frames);
    dv.setUint32(at + 12, streamBytes);
  }
  return concat([frame, real]);
}

/**
 * `bytes` with an ID3v2.4 tag in front (one `TIT2` title frame plus `padding` zero bytes), as many
 * real MP3 files start.
 */
export function withId3v2(bytes: Uint8Array, title = "reference", padding = 64): Uint8Array {
  const text = concat([new Uint8Array([3]), ascii(title)]); // encoding 3 = UTF-8
  const syncsafe = (n: number) =>
    new Uint8Array([(n >>> 21) & 0x7f, (n >>> 14) & 0x7f, (n >>> 7) & 0x7f, n & 0x7f]);
  const frame = concat([ascii("TIT2"), syncsafe(text.length), new Uint8Array([0, 0]), text]);
  const body = concat([frame, new Uint8Array(padding)]);
  const header = concat([ascii("ID3"), new Uint8Array([4, 0, 0]), syncsafe(body.length)]);
  return concat([header, body, bytes]);
}

function box(type: string, ...payload: Uint8Array[]): Uint8Array {
  const body = concat(payload);
  return concat([u32be(8 + body.length), ascii(type), body]);
}

function fullBox(type: string, version: number, flags: number, ...payload: Uint8Array[]): Uint8Array {
  return box(type, u32be(((version & 0xff) << 24) | (flags & 0xffffff)), ...payload);
}

/** hls.js's silent AAC-LC mono raw frame (1024 samples). */
const SILENT_AAC_MONO = new Uint8Array([0x00, 0xc8, 0x00, 0x80, 0x23, 0x80]);

/** AAC sampling-frequency indexes of ISO/IEC 14496-3. */
const AAC_RATES = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000];

/**
 * A minimal, structurally complete M4A: `ftyp` (major brand `brand`, default `M4A `) + `moov`
 * (`mvhd`, one sound `trak` with `tkhd`, `mdhd`, `hdlr soun`, `smhd`, `dinf`, `stbl` with an `mp4a`
 * sample entry + `esds` AAC-LC mono config, `stts`, `stsc`, `stsz`, `stco`) + `mdat` of silent AAC-LC
 * frames. The `mdhd` and `mvhd` durations state exactly `round(seconds x sampleRate)` samples at time
 * scale `sampleRate` (default 16000 Hz, one of the AAC rates). About 6 bytes per 1024 samples plus ~1 KB.
 */
export function makeM4a(seconds: number, sampleRate = 16000, brand = "M4A "): Uint8Array {
  const rateIndex = AAC_RATES.indexOf(sampleRate);
  if (rateIndex < 0) throw new RangeError(`${sampleRate} Hz is not an AAC sampling rate`);
  const samples = Math.round(seconds * sampleRate);
  const nFrames = Math.max(1, Math.ceil(samples / 1024));
  const ftyp = box("ftyp", ascii(brand), u32be(0), ascii("M4A "), ascii("isom"), ascii("mp42"));
  const mvhd = fullBox(
    "mvhd",
    0,
    0,
    u32be(0), // creation
    u32be(0), // modification
    u32be(sampleRate), // time scale
    u32be(samples), // duration
    u32be(0x00010000), // rate 1.0
    u16be(0x0100), // volume 1.0
    new Uint8Array(10), // reserved
    ...[0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000].map(u32be), // matrix
    new Uint8Array(24), // pre-defined
    u32be(2), // next track id
  );
  const tkhd = fullBox(
    "tkhd",
    0,
    3, // enabled | in movie
    u32be(0),
    u32be(0),
    u32be(1), // track id
    u32be(0),
    u32be(samples),
    new Uint8Array(8),
    u16be(0), // layer
    u16be(0), // alternate group
    u16be(0x0100), // volume
    u16be(0),
    ...[0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000].map(u32be),
    u32be(0), // width
    u32be(0), // height
  );
  const mdhd = fullBox(
    "mdhd",
    0,
    0,
    u32be(0), // creation
    u32be(0), // modification
    u32be(sampleRate), // time scale
    u32be(samples), // duration
    u16be(0x55c4), // language "und"
    u16be(0),
  );
  const hdlr = fullBox("hdlr", 0, 0, u32be(0), ascii("soun"), new Uint8Array(12), ascii("SoundHandler\0"));
  const smhd = fullBox("smhd", 0, 0, u16be(0), u16be(0));
  const dinf = box("dinf", fullBox("dref", 0, 0, u32be(1), fullBox("url ", 0, 1)));
  // AudioSpecificConfig: object type 2 (AAC-LC), frequency index, channel configuration 1.
  const asc = new Uint8Array([(2 << 3) | (rateIndex >> 1), ((rateIndex & 1) << 7) | (1 << 3)]);
  const decSpecific = concat([new Uint8Array([0x05, asc.length]), asc]);
  const decConfig = concat([
    new Uint8Array([0x04, 13 + decSpecific.length, 0x40, 0x15, 0, 0x18, 0]), // AAC, audio stream, buffer
    u32be(32000), // max bitrate
    u32be(32000), // avg bitrate
    decSpecific,
  ]);
  const slConfig = new Uint8Array([0x06, 1, 0x02]);
  const esHeader = new Uint8Array([0x03, 3 + decConfig.length + slConfig.length, 0, 1, 0]); // ES_ID 1
  const esDescr = concat([esHeader, decConfig, slConfig]);
  const esds = fullBox("esds", 0, 0, esDescr);
  const mp4a = box(
    "mp4a",
    new Uint8Array(6), // reserved
    u16be(1), // data reference index
    new Uint8Array(8), // version, revision, vendor
    u16be(1), // channels
    u16be(16), // sample size
    u16be(0), // compression id
    u16be(0), // packet size
    u32be(sampleRate * 65536), // sample rate 16.16
    esds,
  );
  const stsd = fullBox("stsd", 0, 0, u32be(1), mp4a);
  const stts = fullBox("stts", 0, 0, u32be(1), u32be(nFrames), u32be(1024));
  const stsc = fullBox("stsc", 0, 0, u32be(1), u32be(1), u32be(nFrames), u32be(1));
  const stsz = fullBox("stsz", 0, 0, u32be(SILENT_AAC_MONO.length), u32be(nFrames));
  const mdatPayload = new Uint8Array(nFrames * SILENT_AAC_MONO.length);
  for (let i = 0; i < nFrames; i++) mdatPayload.set(SILENT_AAC_MONO, i * SILENT_AAC_MONO.length);
  // stco needs the mdat offset, which depends on the moov size: build once with 0, then patch.
  const build = (chunkOffset: number) => {
    const stco = fullBox("stco", 0, 0, u32be(1), u32be(chunkOffset));
    const stbl = box("stbl", stsd, stts, stsc, stsz, stco);
    const minf = box("minf", smhd, dinf, stbl);
    const mdia = box("mdia", mdhd, hdlr, minf);
    const trak = box("trak", tkhd, mdia);
    return box("moov", mvhd, trak);
  };
  const moovLen = build(0).length;
  const moov = build(ftyp.length + moovLen + 8);
  return concat([ftyp, moov, box("mdat", mdatPayload)]);
}

/**
 * Sniffs as WAV (`RIFF` size `WAVE`) but cannot be parsed: the chunk stream after the magic is
 * `size` (default 4096) bytes of deterministic garbage with no `fmt ` or `data` chunk.
 */
export function corruptAudio(size = 4096): Uint8Array {
  const out = new Uint8Array(12 + size);
  out.set(ascii("RIFF"), 0);
  new DataView(out.buffer).setUint32(4, 4 + size, true);
  out.set(ascii("WAVE"), 8);
  let x = 0x2545f491;
  for (let i = 12; i < out.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** A real, decodable 2x2 RGB PNG (about 70 bytes): signature, IHDR, IDAT (zlib), IEND with CRCs. */
export function pngBytes(): Uint8Array {
  const chunk = (type: string, data: Uint8Array) => {
    const td = concat([ascii(type), data]);
    return concat([u32be(data.length), td, u32be(crc32(td))]);
  };
  const ihdr = concat([u32be(2), u32be(2), new Uint8Array([8, 2, 0, 0, 0])]); // 8-bit RGB
  const raw = new Uint8Array([0, 255, 0, 0, 0, 255, 0, 0, 0, 0, 255, 255, 255, 255]); // 2 rows, filter 0
  return concat([
    new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", ihdr),
    chunk("IDAT", new Uint8Array(deflateSync(raw))),
    chunk("IEND", new Uint8Array(0)),
  ]);
}
