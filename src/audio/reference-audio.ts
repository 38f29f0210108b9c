/**
 * Inspection of a voice-clone reference recording before anything is charged (spec "POST
 * /v1/audio/voice-clone" and its error table; decisions D5, D16, D20).
 *
 * The format is sniffed from the content (magic bytes), never from the file name or the declared
 * content type; the duration is read from the file's headers with `music-metadata`. Every failure is
 * an {@link AppError} with `param: "file"`:
 *
 * | status | code                | when                                                         |
 * |--------|---------------------|--------------------------------------------------------------|
 * | 415    | invalid_request     | the content is not MP3, WAV or M4A                            |
 * | 400    | audio_unreadable    | sniffs as one of them but no duration can be read (D20)       |
 * | 400    | reference_too_short | under 10.0 s (exactly 10.0 s is accepted, D20)                |
 * | 400    | reference_too_long  | over 300.0 s (exactly 5 minutes is accepted, D20)             |
 *
 * Hostile input stays cheap: before `music-metadata` sees a file, a synchronous structural pass checks
 * it and hands the library a bounded view (MP3: the MPEG frames from the first verified frame, without
 * ID3v2/ID3v1/APE tags; WAV: only the `fmt `, `fact` and `data` chunks; M4A: a box tree of bounded
 * size and depth). Without it a 10 MB upload of `0xFF` bytes after an MP3 magic keeps the library busy
 * for about 30 s, and 10 MB of 8-byte RIFF or MP4 boxes for 2 to 6 s. With it any 10 MB input takes
 * under 10 ms once warm (a 9.6 MB WAV ~5 ms, mostly one copy of its samples; a 10 MB tagless VBR MP3
 * ~6 ms of frame counting; the pathological inputs above under 5 ms).
 */
import { AppError } from "../errors.ts";
import { findMp3Frame, id3v2LengthAt, type Mp3Frame, mp3FrameAt, mp3FramesFrom } from "../upstreams/mp3-frames.ts";

/** The accepted reference formats. */
export type ReferenceAudioFormat = "mp3" | "wav" | "m4a";

/** What {@link inspectReferenceAudio} found out about an accepted reference recording. */
export interface ReferenceAudioInfo {
  /** The sniffed container/codec family. */
  format: ReferenceAudioFormat;
  /** Duration in seconds, as stated by the file's headers (unrounded). */
  durationSec: number;
  /** The canonical media type of `format`: `audio/mpeg`, `audio/wav` or `audio/mp4`. */
  mimeType: string;
}

/** Duration limits of {@link inspectReferenceAudio}, in seconds, both inclusive. */
export interface ReferenceAudioLimits {
  /** Shortest accepted duration, s (default {@link REFERENCE_MIN_SEC}). */
  minSec?: number;
  /** Longest accepted duration, s (default {@link REFERENCE_MAX_SEC}). */
  maxSec?: number;
}

/** Shortest accepted reference recording: 10 s (spec; exactly 10.0 s is accepted, D20). */
export const REFERENCE_MIN_SEC = 10;
/** Longest accepted reference recording: 300 s = 5 minutes (spec; exactly 300.0 s is accepted, D20). */
export const REFERENCE_MAX_SEC = 300;

/** Canonical media type per format (sent upstream with the file). */
export const REFERENCE_MIME_TYPES: Readonly<Record<ReferenceAudioFormat, string>> = {
  mp3: "audio/mpeg",
  wav: "audio/wav",
  m4a: "audio/mp4",
};

/** Durations are ratios (samples / rate); this much floating-point slack is forgiven at the limits. */
const LIMIT_EPSILON_SEC = 1e-6;

/** `ftyp` brands accepted as MP4/M4A audio (major or compatible brand). */
const MP4_AUDIO_BRANDS = new Set([
  "M4A ",
  "M4B ",
  "M4P ",
  "mp41",
  "mp42",
  "isom",
  "iso2",
  "iso3",
  "iso4",
  "iso5",
  "iso6",
  "dash",
  "MSNV",
]);

// ---------------------------------------------------------------------------------------------------
// Sniffing
// ---------------------------------------------------------------------------------------------------

function ascii(b: Uint8Array, at: number, len: number): string {
  if (at < 0 || at + len > b.length) return "";
  let s = "";
  for (let i = at; i < at + len; i++) s += String.fromCharCode(b[i]);
  return s;
}

function u32be(b: Uint8Array, at: number): number {
  return ((b[at] << 24) >>> 0) + (b[at + 1] << 16) + (b[at + 2] << 8) + b[at + 3];
}

function u32le(b: Uint8Array, at: number): number {
  return ((b[at + 3] << 24) >>> 0) + (b[at + 2] << 16) + (b[at + 1] << 8) + b[at];
}

/**
 * The audio format of a file from its first bytes (pass the whole file or at least its first ~4 KB),
 * never from a name or a declared type:
 * - `"wav"`: `RIFF` <size> `WAVE`;
 * - `"mp3"`: an ID3v2 tag header (`ID3`, major version 2..4, sync-safe size), or an MPEG audio Layer
 *   III frame header at offset 0 (11-bit sync 0xFFE, defined version and sample rate, layer III,
 *   bit-rate index 1..14; what follows is checked later, by the parse);
 * - `"m4a"`: an ISO-BMFF `ftyp` box first whose major or a compatible brand is an MP4 audio brand
 *   (`M4A `, `M4B `, `M4P `, `mp41`, `mp42`, `isom`, `iso2`..`iso6`, `dash`, `MSNV`);
 * - null for anything else (PNG, JPEG, text, ADTS AAC, MP2, Ogg, FLAC, empty input, ...).
 * Pure and synchronous; never throws. Spec "POST /v1/audio/voice-clone" (MP3, WAV or M4A only).
 */
export function sniffAudioFormat(head: Uint8Array): ReferenceAudioFormat | null {
  if (head.length < 4) return null;
  if (ascii(head, 0, 4) === "RIFF" && ascii(head, 8, 4) === "WAVE") return "wav";
  if (id3v2LengthAt(head, 0, "strict") > 0) return "mp3";
  if (mp3FrameAt(head, 0)) return "mp3";
  if (ascii(head, 4, 4) === "ftyp") {
    const size = u32be(head, 0);
    if (size < 16) return null;
    if (MP4_AUDIO_BRANDS.has(ascii(head, 8, 4))) return "m4a";
    for (let at = 16; at + 4 <= Math.min(size, head.length); at += 4) {
      if (MP4_AUDIO_BRANDS.has(ascii(head, at, 4))) return "m4a";
    }
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------------

function unsupportedFormat(): AppError {
  return new AppError(
    415,
    "invalid_request",
    "The file's format is not MP3, WAV or M4A (the format is read from the content, not the file name).",
    "file",
  );
}

/** Thrown inside this module for a file that sniffs as an accepted format but cannot be read. */
function unreadable(detail: string): AppError {
  const reason = detail.replace(/[^\x20-\x7e]/g, "?");
  return new AppError(
    400,
    "audio_unreadable",
    `The reference audio could not be read (${reason}); the file may be corrupt or use an unsupported codec.`,
    "file",
  );
}

/** Seconds for a message, at most 3 decimals, rounded away from the limit it is compared with. */
function showSec(sec: number, round: (x: number) => number): string {
  return String(round(sec * 1000) / 1000);
}

// ---------------------------------------------------------------------------------------------------
// Structural pre-checks (synchronous, linear, bounded)
// ---------------------------------------------------------------------------------------------------

/** How far past the ID3v2 tag(s) the first MPEG frame may start, bytes. */
const MP3_SYNC_WINDOW = 64 * 1024;
/** Most ID3v2 tags accepted in a row before the audio. */
const MAX_ID3_TAGS = 4;

/** MP3 facts found by the pre-check: the MPEG frame bytes and what the first frame says. */
interface Mp3Layout {
  /** The MPEG frames: from the first verified frame to the end, trailing ID3v1/APE tags removed. */
  frames: Uint8Array;
  first: Mp3Frame;
  /** Duration claimed by a VBRI tag in the first frame, s (music-metadata does not read VBRI). */
  vbriSec: number | null;
  /** Duration from a Xing/Info tag's frame count, s, when it has one. */
  xingSec: number | null;
}

function mp3Layout(b: Uint8Array): Mp3Layout {
  let start = 0;
  for (let i = 0; i < MAX_ID3_TAGS; i++) {
    const len = id3v2LengthAt(b, start, "strict");
    if (len === 0) break;
    start += len;
  }
  if (start >= b.length) throw unreadable("no MPEG audio after the ID3 tag");
  const at = findMp3Frame(b, start, 4, MP3_SYNC_WINDOW);
  const first = mp3FrameAt(b, at);
  if (first === null) throw unreadable("no MPEG Layer III frames found");
  let end = b.length;
  if (end - at >= 128 && ascii(b, end - 128, 3) === "TAG") end -= 128; // ID3v1
  if (end - at >= 32 && ascii(b, end - 32, 8) === "APETAGEX") {
    const apeLen = u32le(b, end - 32 + 12); // items + footer
    const hasHeader = (b[end - 32 + 23] & 0x80) !== 0;
    const total = apeLen + (hasHeader ? 32 : 0);
    if (total >= 32 && total <= end - at) end -= total;
  }
  const secPerFrame = first.samplesPerFrame / first.sampleRate;
  let vbriSec: number | null = null;
  if (ascii(b, at + 36, 4) === "VBRI" && at + 54 <= b.length) {
    const frames = u32be(b, at + 50);
    if (frames > 0) vbriSec = frames * secPerFrame;
  }
  let xingSec: number | null = null;
  const x = at + 4 + first.sideInfoLength;
  const tag = ascii(b, x, 4);
  if ((tag === "Xing" || tag === "Info") && x + 12 <= b.length && (b[x + 7] & 1) === 1) {
    const frames = u32be(b, x + 8);
    if (frames > 0) xingSec = frames * secPerFrame;
  }
  return { frames: b.subarray(at, Math.max(at, end)), first, vbriSec, xingSec };
}

/**
 * Duration of consecutive Layer III frames from the start of `frames` (same version and sample rate),
 * s: the fallback for a VBR stream without a Xing or VBRI tag. Linear and synchronous (~100k frames
 * per 10 MB). A leading Xing/Info frame without a frame count is not audio and is not counted.
 */
function scanLayer3Duration(frames: Uint8Array, first: Mp3Frame): number {
  let n = 0;
  for (const f of mp3FramesFrom(frames, 0)) {
    if (f.version !== first.version || f.sampleRate !== first.sampleRate) break;
    n++;
  }
  const tag = ascii(frames, 4 + first.sideInfoLength, 4);
  if (n > 0 && (tag === "Xing" || tag === "Info")) n--;
  return (n * first.samplesPerFrame) / first.sampleRate;
}

/** Most RIFF chunks looked at before the `data` chunk. */
const MAX_WAV_CHUNKS = 64;

/**
 * A minimal copy of a WAV for the parser: `RIFF`/`WAVE` with only the file's `fmt `, `fact` (when
 * present) and `data` chunks, the data cut to the bytes actually present. Requires `fmt ` before
 * `data` within the first {@link MAX_WAV_CHUNKS} chunks.
 */
function wavForParser(b: Uint8Array): Uint8Array {
  let p = 12;
  let fmt: Uint8Array | null = null;
  let fact: Uint8Array | null = null;
  for (let n = 0; n < MAX_WAV_CHUNKS && p + 8 <= b.length; n++) {
    const id = ascii(b, p, 4);
    const size = u32le(b, p + 4);
    const bodyEnd = Math.min(b.length, p + 8 + size);
    if (id === "fmt ") {
      if (size < 16 || bodyEnd - (p + 8) < size) throw unreadable("truncated fmt chunk");
      fmt = b.subarray(p, bodyEnd);
    } else if (id === "fact") {
      if (size >= 4 && bodyEnd - (p + 8) >= size) fact = b.subarray(p, bodyEnd);
    } else if (id === "data") {
      if (!fmt) throw unreadable("no fmt chunk before the data chunk");
      const data = b.subarray(p + 8, bodyEnd);
      const parts = [fmt, ...(fact ? [fact] : [])];
      let headerLen = 12 + 8;
      for (const c of parts) headerLen += c.length + (c.length & 1);
      const out = new Uint8Array(headerLen + data.length);
      const dv = new DataView(out.buffer);
      out.set([0x52, 0x49, 0x46, 0x46], 0); // RIFF
      dv.setUint32(4, out.length - 8, true);
      out.set([0x57, 0x41, 0x56, 0x45], 8); // WAVE
      let o = 12;
      for (const c of parts) {
        out.set(c, o);
        o += c.length + (c.length & 1);
      }
      out.set([0x64, 0x61, 0x74, 0x61], o); // data
      dv.setUint32(o + 4, data.length, true);
      out.set(data, o + 8);
      return out;
    }
    p += 8 + size + (size & 1);
  }
  throw unreadable(fmt ? "no data chunk" : "no fmt and data chunks");
}

/** Most MP4 boxes walked (a normal M4A has tens; a fragmented one a few thousand). */
const MAX_MP4_BOXES = 50_000;
/** Deepest MP4 box nesting accepted. */
const MAX_MP4_DEPTH = 24;
/** Boxes whose payload is a sequence of boxes (music-metadata walks into these). */
const MP4_CONTAINERS = new Set([
  "moov",
  "trak",
  "udta",
  "mdia",
  "minf",
  "stbl",
  "ilst",
  "tref",
  "moof",
  "traf",
  "mvex",
  "edts",
  "dinf",
  "meta",
]);

/**
 * Checks that `b` is a well-formed ISO-BMFF box tree of bounded size ({@link MAX_MP4_BOXES} boxes,
 * depth {@link MAX_MP4_DEPTH}) containing a `moov` box; the parser walks the same tree.
 */
function checkMp4Boxes(b: Uint8Array): void {
  let boxes = 0;
  let sawMoov = false;
  const walk = (from: number, to: number, depth: number, parent: string): void => {
    if (depth > MAX_MP4_DEPTH) throw unreadable("MP4 boxes nested too deeply");
    let p = from;
    while (p < to) {
      if (to - p < 8) throw unreadable("truncated MP4 box header");
      if (++boxes > MAX_MP4_BOXES) throw unreadable("too many MP4 boxes");
      let size = u32be(b, p);
      const type = ascii(b, p + 4, 4);
      let header = 8;
      if (size === 1) {
        if (to - p < 16) throw unreadable("truncated MP4 box header");
        const hi = u32be(b, p + 8);
        size = hi * 2 ** 32 + u32be(b, p + 12);
        header = 16;
      } else if (size === 0) {
        size = to - p; // to the end of the enclosing box / file
      }
      if (size < header || size > to - p) throw unreadable(`bad size of MP4 box '${type}'`);
      if (type === "moov") sawMoov = true;
      // Children of `ilst` are metadata items, each a sequence of boxes.
      if (MP4_CONTAINERS.has(type) || parent === "ilst") {
        let childFrom = p + header;
        if (type === "meta" && ascii(b, childFrom + 4, 4) !== "hdlr") childFrom += 4; // full-box header
        if (childFrom <= p + size) walk(childFrom, p + size, depth + 1, type);
      }
      p += size;
    }
  };
  walk(0, b.length, 0, "");
  if (!sawMoov) throw unreadable("no moov box");
}

// ---------------------------------------------------------------------------------------------------
// Inspection
// ---------------------------------------------------------------------------------------------------

/** The duration (s) music-metadata reads, with the module's pre-checks; throws `audio_unreadable`. */
async function readDuration(bytes: Uint8Array, format: ReferenceAudioFormat): Promise<number> {
  const mimeType = REFERENCE_MIME_TYPES[format];
  // `duration: false`: no full-stream scan inside the library (see the module comment); the MP3 scan
  // fallback below is done here, synchronously. `skipPostHeaders`: trailing tags are not needed.
  const options = { duration: false, skipCovers: true, skipPostHeaders: true };
  // Loaded on the first upload, not at boot (idle memory).
  const { parseBuffer } = await import("music-metadata");
  if (format === "mp3") {
    const layout = mp3Layout(bytes);
    const meta = await parseBuffer(layout.frames, { mimeType }, options);
    const codec = meta.format.codec ?? "";
    if (!/^MPEG (1|2|2\.5) Layer 3$/.test(codec)) throw unreadable(`codec ${codec || "unknown"} is not MP3`);
    if (layout.vbriSec !== null) return layout.vbriSec;
    return meta.format.duration ?? layout.xingSec ?? scanLayer3Duration(layout.frames, layout.first);
  }
  if (format === "wav") {
    const meta = await parseBuffer(wavForParser(bytes), { mimeType }, options);
    const d = meta.format.duration;
    if (d === undefined) throw unreadable("no duration in the WAV header");
    return d;
  }
  checkMp4Boxes(bytes);
  const meta = await parseBuffer(bytes, { mimeType }, options);
  if (meta.format.hasAudio === false) throw unreadable("no audio track");
  const d = meta.format.duration;
  if (d === undefined) throw unreadable("no audio track with a duration");
  return d;
}

/**
 * Inspects a voice-clone reference recording (spec "POST /v1/audio/voice-clone": MP3, WAV or M4A,
 * 10 s to 5 min, "the duration is read from the file header and out-of-range files are rejected
 * before any charge"; D20). `bytes` is the whole uploaded file (the 10 MB cap is enforced by the
 * caller, 413); `opts` overrides the inclusive limits in seconds (default 10 and 300).
 *
 * Steps: {@link sniffAudioFormat} on the content; then the duration from the headers: MP3 from a
 * Xing/Info frame count, a VBRI frame count, the file size for constant bit rate, or else by counting
 * the frames (so the first few KB of a 6-minute MP3 whose Info tag counts 6 minutes measure 360 s);
 * WAV from the `data` (or `fact`) chunk and `fmt `; M4A from the first audio track's `mdhd` (or its
 * fragments).
 *
 * @returns `{format, durationSec, mimeType}` with `durationSec` in seconds, unrounded.
 * @throws AppError (all with `param: "file"`; nothing else is ever thrown):
 * - 415 `invalid_request` when the content is not MP3, WAV or M4A;
 * - 400 `audio_unreadable` when it sniffs as one but is corrupt, truncated before any audio, uses
 *   another codec (e.g. MP2 after an ID3 tag), has no audio track, or states no finite positive
 *   duration;
 * - 400 `reference_too_short` under `minSec`, 400 `reference_too_long` over `maxSec`; the message
 *   names the measured duration and the limit. The limits are inclusive (10.0 s and 300.0 s pass).
 */
export async function inspectReferenceAudio(
  bytes: Uint8Array,
  opts: ReferenceAudioLimits = {},
): Promise<ReferenceAudioInfo> {
  const minSec = opts.minSec ?? REFERENCE_MIN_SEC;
  const maxSec = opts.maxSec ?? REFERENCE_MAX_SEC;
  const format = sniffAudioFormat(bytes);
  if (format === null) throw unsupportedFormat();
  let durationSec: number;
  try {
    durationSec = await readDuration(bytes, format);
  } catch (err) {
    if (err instanceof AppError) throw err;
    const detail = err instanceof Error ? err.message : String(err);
    throw unreadable(detail.length > 200 ? `${detail.slice(0, 200)}...` : detail);
  }
  if (!Number.isFinite(durationSec) || durationSec <= 0) {
    throw unreadable(`duration ${durationSec} s is not a positive number`);
  }
  if (durationSec < minSec - LIMIT_EPSILON_SEC) {
    throw new AppError(
      400,
      "reference_too_short",
      `The reference audio is ${showSec(durationSec, Math.floor)} s long; the minimum is ${minSec} s.`,
      "file",
    );
  }
  if (durationSec > maxSec + LIMIT_EPSILON_SEC) {
    throw new AppError(
      400,
      "reference_too_long",
      `The reference audio is ${showSec(durationSec, Math.ceil)} s long; the maximum is ${maxSec} s.`,
      "file",
    );
  }
  return { format, durationSec, mimeType: REFERENCE_MIME_TYPES[format] };
}
