/**
 * Video synthesis for the built-in simulator (decision D10): playable MP4 files of any length, built
 * in JS from small committed clips (no ffmpeg at run time).
 *
 * `clips/` holds one-second H.264 clips (Constrained Baseline, yuv420p, 24 fps, one IDR frame then 23
 * P frames, seamlessly looping colour fields with a moving ball) in two variants ("plasma", "waves")
 * and two orientations (320x180 landscape, 180x320 portrait), plus 16 s of mono AAC-LC (16 kHz) for
 * models with sound. `clips/README.md` has the ffmpeg commands that made them.
 *
 * {@link renderMp4} parses a clip (box walk of `moov`: sample sizes, offsets, durations, sync samples,
 * `stsd`), repeats its samples until the requested length (each repetition starts with an IDR frame,
 * so the stream stays decodable), optionally adds the first seconds of the audio track (with its
 * edit list that skips the AAC priming), and writes a new progressive ("faststart") MP4:
 * `ftyp`, `moov` (`mvhd`, one `trak` per track with `tkhd`/`edts`/`mdia`/`minf`/`stbl`: copied
 * `stsd`, new `stts`/`stss`/`stsc`/`stsz`/`stco`), then `mdat` with the samples interleaved in
 * one-second chunks. Deterministic: the same options give the same bytes.
 */

import { readFileSync } from "node:fs";
import { createRng, seedFrom } from "./rng.ts";

/** Longest clip {@link renderMp4} builds, in seconds. */
export const MAX_VIDEO_SEC = 60;

/** Orientation of a simulated clip: 320x180 (landscape) or 180x320 (portrait) pixels. */
export type VideoOrientation = "landscape" | "portrait";

/** Options of {@link renderMp4}. */
export interface RenderVideoOptions {
  /** The prompt: its hash picks the clip variant. */
  prompt: string;
  /** Length in seconds, > 0 and at most {@link MAX_VIDEO_SEC}; rounded to whole frames (1/24 s). */
  durationSec: number;
  /** Default `landscape`. */
  orientation?: VideoOrientation;
  /** Add an AAC audio track (default false: a silent, video-only file). */
  audio?: boolean;
  /** Extra seed material for the variant choice (for example the model id); default "". */
  seed?: string | number;
}

/** A rendered MP4 file and its properties (pixels, seconds). */
export interface RenderedVideo {
  contentType: "video/mp4";
  body: Uint8Array;
  width: number;
  height: number;
  /** Length of the movie in seconds (`mvhd` duration / timescale): whole frames at 24 fps. */
  durationSec: number;
  hasAudio: boolean;
}

/** The clip variants committed under `clips/` (file `<variant>-<W>x<H>.mp4`). */
export const VIDEO_VARIANTS = ["plasma", "waves"] as const;

/**
 * The orientation requested by pass-through parameters: the first of `aspect_ratio`, `aspectRatio`,
 * `aspect`, `size`, `resolution` that reads as `W:H` or `WxH` with H > W gives `portrait`; anything
 * else `landscape`.
 */
export function videoOrientationOf(parameters: Record<string, unknown>): VideoOrientation {
  for (const key of ["aspect_ratio", "aspectRatio", "aspect", "size", "resolution"]) {
    const v = parameters[key];
    if (typeof v !== "string") continue;
    const m = /^\s*(\d+(?:\.\d+)?)\s*[:xX*]\s*(\d+(?:\.\d+)?)\s*$/.exec(v);
    if (m) return Number(m[2]) > Number(m[1]) ? "portrait" : "landscape";
  }
  return "landscape";
}

// ---------------------------------------------------------------------------------------------------
// MP4 reading
// ---------------------------------------------------------------------------------------------------

interface Box {
  type: string;
  /** Offset of the box header. */
  start: number;
  /** Offset of the payload (after size/type and any 64-bit size). */
  body: number;
  end: number;
}

function fourcc(buf: Uint8Array, at: number): string {
  return String.fromCharCode(buf[at], buf[at + 1], buf[at + 2], buf[at + 3]);
}

/** The boxes laid out between `start` and `end`. */
function boxesIn(buf: Uint8Array, dv: DataView, start: number, end: number): Box[] {
  const out: Box[] = [];
  let o = start;
  while (o + 8 <= end) {
    let size = dv.getUint32(o);
    const type = fourcc(buf, o + 4);
    let body = o + 8;
    if (size === 1) {
      size = Number(dv.getBigUint64(o + 8));
      body += 8;
    } else if (size === 0) size = end - o;
    if (size < body - o || o + size > end) throw new Error(`bad MP4 box ${type} at ${o}`);
    out.push({ type, start: o, body, end: o + size });
    o += size;
  }
  return out;
}

/** A parsed track of a source clip. */
interface SourceTrack {
  handler: string;
  /** Media timescale (units per second). */
  timescale: number;
  /** The whole `stsd` box, copied unchanged. */
  stsd: Uint8Array;
  /** Sample bytes (views into the source file), in decoding order. */
  samples: Uint8Array[];
  /** Per-sample durations in media units. */
  durations: number[];
  /** Per-sample sync flags; null when every sample is a sync sample (no `stss`). */
  sync: boolean[] | null;
  /** Media time (media units) where presentation starts (first non-empty edit), e.g. AAC priming. */
  mediaTime: number;
  /** Track size in pixels (0 for audio). */
  width: number;
  height: number;
}

function parseTracks(buf: Uint8Array): SourceTrack[] {
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const top = boxesIn(buf, dv, 0, buf.length);
  const moov = top.find((b) => b.type === "moov");
  if (!moov) throw new Error("MP4 without moov");
  const child = (parent: Box, type: string): Box => {
    const b = boxesIn(buf, dv, parent.body, parent.end).find((x) => x.type === type);
    if (!b) throw new Error(`MP4 box ${type} missing in ${parent.type}`);
    return b;
  };
  const maybe = (parent: Box, type: string): Box | undefined =>
    boxesIn(buf, dv, parent.body, parent.end).find((x) => x.type === type);

  const tracks: SourceTrack[] = [];
  for (const trak of boxesIn(buf, dv, moov.body, moov.end).filter((b) => b.type === "trak")) {
    const tkhd = child(trak, "tkhd");
    const tkVersion = buf[tkhd.body];
    const sizeAt = tkhd.body + (tkVersion === 1 ? 88 : 76);
    const width = dv.getUint32(sizeAt) / 65536;
    const height = dv.getUint32(sizeAt + 4) / 65536;

    let mediaTime = 0;
    const edts = maybe(trak, "edts");
    const elst = edts && maybe(edts, "elst");
    if (elst) {
      const v = buf[elst.body];
      const count = dv.getUint32(elst.body + 4);
      let o = elst.body + 8;
      for (let i = 0; i < count; i++) {
        const mt = v === 1 ? Number(dv.getBigInt64(o + 8)) : dv.getInt32(o + 4);
        o += v === 1 ? 20 : 12;
        if (mt >= 0) {
          mediaTime = mt;
          break;
        }
      }
    }

    const mdia = child(trak, "mdia");
    const mdhd = child(mdia, "mdhd");
    const timescale = dv.getUint32(mdhd.body + (buf[mdhd.body] === 1 ? 20 : 12));
    const handler = fourcc(buf, child(mdia, "hdlr").body + 8);
    const stbl = child(child(mdia, "minf"), "stbl");
    const stsd = child(stbl, "stsd");

    const stsz = child(stbl, "stsz");
    const fixedSize = dv.getUint32(stsz.body + 4);
    const count = dv.getUint32(stsz.body + 8);
    const sizes: number[] = [];
    for (let i = 0; i < count; i++) sizes.push(fixedSize || dv.getUint32(stsz.body + 12 + 4 * i));

    const durations: number[] = [];
    const stts = child(stbl, "stts");
    for (let e = 0, n = dv.getUint32(stts.body + 4); e < n; e++) {
      const c = dv.getUint32(stts.body + 8 + 8 * e);
      const d = dv.getUint32(stts.body + 12 + 8 * e);
      for (let i = 0; i < c; i++) durations.push(d);
    }
    if (durations.length !== count) throw new Error("MP4 stts/stsz sample counts differ");

    const ctts = maybe(stbl, "ctts");
    if (ctts) {
      for (let e = 0, n = dv.getUint32(ctts.body + 4); e < n; e++) {
        if (dv.getUint32(ctts.body + 12 + 8 * e) !== 0) throw new Error("MP4 clips with reordered frames are not supported");
      }
    }

    let sync: boolean[] | null = null;
    const stss = maybe(stbl, "stss");
    if (stss) {
      sync = new Array<boolean>(count).fill(false);
      for (let e = 0, n = dv.getUint32(stss.body + 4); e < n; e++) sync[dv.getUint32(stss.body + 8 + 4 * e) - 1] = true;
    }

    const chunkOffsets: number[] = [];
    const stco = maybe(stbl, "stco");
    const co64 = maybe(stbl, "co64");
    if (stco) {
      for (let i = 0, n = dv.getUint32(stco.body + 4); i < n; i++) chunkOffsets.push(dv.getUint32(stco.body + 8 + 4 * i));
    } else if (co64) {
      for (let i = 0, n = dv.getUint32(co64.body + 4); i < n; i++) {
        chunkOffsets.push(Number(dv.getBigUint64(co64.body + 8 + 8 * i)));
      }
    } else throw new Error("MP4 without chunk offsets");

    const stsc = child(stbl, "stsc");
    const stscEntries: { first: number; perChunk: number }[] = [];
    for (let e = 0, n = dv.getUint32(stsc.body + 4); e < n; e++) {
      stscEntries.push({ first: dv.getUint32(stsc.body + 8 + 12 * e), perChunk: dv.getUint32(stsc.body + 12 + 12 * e) });
    }
    const samples: Uint8Array[] = [];
    let entry = 0;
    for (let c = 0; c < chunkOffsets.length && samples.length < count; c++) {
      while (entry + 1 < stscEntries.length && stscEntries[entry + 1].first <= c + 1) entry++;
      let o = chunkOffsets[c];
      for (let k = 0; k < stscEntries[entry].perChunk && samples.length < count; k++) {
        const size = sizes[samples.length];
        if (o + size > buf.length) throw new Error("MP4 sample outside the file");
        samples.push(buf.subarray(o, o + size));
        o += size;
      }
    }
    if (samples.length !== count) throw new Error("MP4 chunk table does not cover every sample");

    tracks.push({
      handler,
      timescale,
      stsd: buf.subarray(stsd.start, stsd.end),
      samples,
      durations,
      sync,
      mediaTime,
      width,
      height,
    });
  }
  return tracks;
}

const clipCache = new Map<string, SourceTrack>();

/** The first track with handler `handler` of the committed clip `file` (parsed once, then cached). */
function clipTrack(file: string, handler: "vide" | "soun"): SourceTrack {
  const key = `${file}#${handler}`;
  let t = clipCache.get(key);
  if (!t) {
    const bytes = new Uint8Array(readFileSync(new URL(`./clips/${file}`, import.meta.url)));
    t = parseTracks(bytes).find((x) => x.handler === handler);
    if (!t) throw new Error(`clip ${file} has no ${handler} track`);
    if (t.samples.length === 0) throw new Error(`clip ${file} has no samples`);
    clipCache.set(key, t);
  }
  return t;
}

// ---------------------------------------------------------------------------------------------------
// MP4 writing
// ---------------------------------------------------------------------------------------------------

/** Big-endian field writer for box payloads. */
class Fields {
  private readonly bytes: number[] = [];
  u8(v: number): this {
    this.bytes.push(v & 0xff);
    return this;
  }
  u16(v: number): this {
    return this.u8(v >>> 8).u8(v);
  }
  u32(v: number): this {
    return this.u16(v >>> 16).u16(v);
  }
  str(s: string): this {
    for (let i = 0; i < s.length; i++) this.u8(s.charCodeAt(i));
    return this;
  }
  done(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

function box(type: string, ...payload: Uint8Array[]): Uint8Array {
  const size = 8 + payload.reduce((n, p) => n + p.length, 0);
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, size);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  let o = 8;
  for (const p of payload) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function fullBox(type: string, version: number, flags: number, ...payload: Uint8Array[]): Uint8Array {
  return box(type, new Fields().u8(version).u8(flags >>> 16).u16(flags).done(), ...payload);
}

/** A 32-bit table: entry count then the values. */
function table32(values: readonly number[], perEntry = 1): Uint8Array {
  const f = new Fields().u32(values.length / perEntry);
  for (const v of values) f.u32(v);
  return f.done();
}

const MATRIX = [0x00010000, 0, 0, 0, 0x00010000, 0, 0, 0, 0x40000000];

/** Movie timescale (units per second) of written files. */
const MOVIE_TIMESCALE = 1000;

/** A track to write. */
interface OutTrack {
  id: number;
  src: SourceTrack;
  samples: Uint8Array[];
  durations: number[];
  sync: boolean[] | null;
  /** Sample counts of the track's chunks, in order. */
  chunks: number[];
  /** Presentation length in movie units. */
  movieDuration: number;
  /** Media time where presentation starts (edit list), media units. */
  mediaTime: number;
}

function writeTrak(t: OutTrack, chunkOffsets: readonly number[]): Uint8Array {
  const isVideo = t.src.handler === "vide";
  const mediaDuration = t.durations.reduce((a, b) => a + b, 0);
  const tkhd = new Fields()
    .u32(0) // creation time
    .u32(0) // modification time
    .u32(t.id)
    .u32(0)
    .u32(t.movieDuration)
    .u32(0)
    .u32(0)
    .u16(0) // layer
    .u16(0) // alternate group
    .u16(isVideo ? 0 : 0x0100) // volume
    .u16(0);
  for (const m of MATRIX) tkhd.u32(m);
  tkhd.u32(Math.round(t.src.width * 65536)).u32(Math.round(t.src.height * 65536));

  const elst = fullBox(
    "elst",
    0,
    0,
    new Fields().u32(1).u32(t.movieDuration).u32(t.mediaTime).u16(1).u16(0).done(),
  );

  const mdhd = new Fields().u32(0).u32(0).u32(t.src.timescale).u32(mediaDuration).u16(0x55c4).u16(0).done();
  const hdlr = new Fields()
    .u32(0)
    .str(t.src.handler)
    .u32(0)
    .u32(0)
    .u32(0)
    .str(isVideo ? "VideoHandler\0" : "SoundHandler\0")
    .done();
  const mhd = isVideo
    ? fullBox("vmhd", 0, 1, new Fields().u16(0).u16(0).u16(0).u16(0).done())
    : fullBox("smhd", 0, 0, new Fields().u16(0).u16(0).done());
  const dinf = box("dinf", fullBox("dref", 0, 0, new Fields().u32(1).done(), fullBox("url ", 0, 1)));

  const stts: number[] = [];
  for (const d of t.durations) {
    if (stts.length > 0 && stts[stts.length - 1] === d) stts[stts.length - 2]++;
    else stts.push(1, d);
  }
  const stsc: number[] = [];
  t.chunks.forEach((n, i) => {
    if (stsc.length === 0 || stsc[stsc.length - 2] !== n) stsc.push(i + 1, n, 1);
  });
  const stblParts = [
    t.src.stsd,
    fullBox("stts", 0, 0, table32(stts, 2)),
  ];
  if (t.sync) {
    const keys: number[] = [];
    t.sync.forEach((s, i) => {
      if (s) keys.push(i + 1);
    });
    stblParts.push(fullBox("stss", 0, 0, table32(keys)));
  }
  stblParts.push(
    fullBox("stsc", 0, 0, table32(stsc, 3)),
    fullBox("stsz", 0, 0, new Fields().u32(0).done(), table32(t.samples.map((s) => s.length))),
    fullBox("stco", 0, 0, table32(chunkOffsets)),
  );

  return box(
    "trak",
    fullBox("tkhd", 0, 3, tkhd.done()),
    box("edts", elst),
    box(
      "mdia",
      fullBox("mdhd", 0, 0, mdhd),
      fullBox("hdlr", 0, 0, hdlr),
      box("minf", mhd, dinf, box("stbl", ...stblParts)),
    ),
  );
}

/** Writes a progressive MP4 (`ftyp`, `moov`, `mdat`) with the tracks' chunks interleaved. */
function writeMp4(tracks: OutTrack[], movieDuration: number): Uint8Array {
  const ftyp = box("ftyp", new Fields().str("isom").u32(512).str("isomiso2avc1mp41").done());

  // mdat layout: chunk k of every track, in track order, for k = 0, 1, ...
  const layout: { track: number; first: number; count: number }[] = [];
  const firsts = tracks.map(() => 0);
  const maxChunks = Math.max(...tracks.map((t) => t.chunks.length));
  for (let k = 0; k < maxChunks; k++) {
    tracks.forEach((t, ti) => {
      if (k < t.chunks.length) {
        layout.push({ track: ti, first: firsts[ti], count: t.chunks[k] });
        firsts[ti] += t.chunks[k];
      }
    });
  }
  let mdatSize = 8;
  for (const t of tracks) for (const s of t.samples) mdatSize += s.length;

  const buildMoov = (dataStart: number): Uint8Array => {
    const offsets: number[][] = tracks.map(() => []);
    let o = dataStart;
    for (const c of layout) {
      offsets[c.track].push(o);
      const t = tracks[c.track];
      for (let i = c.first; i < c.first + c.count; i++) o += t.samples[i].length;
    }
    const mvhd = new Fields()
      .u32(0)
      .u32(0)
      .u32(MOVIE_TIMESCALE)
      .u32(movieDuration)
      .u32(0x00010000) // rate 1.0
      .u16(0x0100) // volume 1.0
      .u16(0)
      .u32(0)
      .u32(0);
    for (const m of MATRIX) mvhd.u32(m);
    for (let i = 0; i < 6; i++) mvhd.u32(0);
    mvhd.u32(tracks.length + 1);
    return box("moov", fullBox("mvhd", 0, 0, mvhd.done()), ...tracks.map((t, i) => writeTrak(t, offsets[i])));
  };
  // The moov size does not depend on the offsets' values: build once to measure, once for real.
  const moovSize = buildMoov(0).length;
  const moov = buildMoov(ftyp.length + moovSize + 8);

  const out = new Uint8Array(ftyp.length + moov.length + mdatSize);
  out.set(ftyp, 0);
  out.set(moov, ftyp.length);
  let o = ftyp.length + moov.length;
  new DataView(out.buffer).setUint32(o, mdatSize);
  out.set([0x6d, 0x64, 0x61, 0x74], o + 4); // "mdat"
  o += 8;
  for (const c of layout) {
    const t = tracks[c.track];
    for (let i = c.first; i < c.first + c.count; i++) {
      out.set(t.samples[i], o);
      o += t.samples[i].length;
    }
  }
  return out;
}

/** Splits samples into chunks of about one second of media time each; returns the chunk sizes. */
function secondChunks(durations: readonly number[], timescale: number): number[] {
  const chunks: number[] = [];
  let t = 0;
  let current = -1;
  for (const d of durations) {
    const sec = Math.floor(t / timescale);
    if (sec !== current) {
      chunks.push(0);
      current = sec;
    }
    chunks[chunks.length - 1]++;
    t += d;
  }
  return chunks;
}

// ---------------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------------

/** File name under `clips/` of the audio source (16 s of mono AAC-LC at 16 kHz). */
const AUDIO_CLIP = "pad-16k.m4a";

/**
 * Builds a playable MP4 of `opts.durationSec` seconds (rounded to whole frames at 24 fps, at least one
 * frame): H.264 320x180 or 180x320, looping one-second clip picked by a hash of (prompt, seed), plus
 * an AAC track when `opts.audio`. The file starts with `ftyp`, then `moov`, then `mdat`.
 * Deterministic. Throws `RangeError` when the duration is not a number in (0, {@link MAX_VIDEO_SEC}].
 */
export function renderMp4(opts: RenderVideoOptions): RenderedVideo {
  const sec = opts.durationSec;
  if (!(Number.isFinite(sec) && sec > 0 && sec <= MAX_VIDEO_SEC)) {
    throw new RangeError(`video duration must be in (0, ${MAX_VIDEO_SEC}] seconds, got ${sec}`);
  }
  const orientation = opts.orientation ?? "landscape";
  const rng = createRng(seedFrom("video-variant", opts.prompt.normalize("NFC"), String(opts.seed ?? "")));
  const variant = VIDEO_VARIANTS[Math.floor(rng() * VIDEO_VARIANTS.length)];
  const size = orientation === "portrait" ? "180x320" : "320x180";
  const video = clipTrack(`${variant}-${size}.mp4`, "vide");

  // Video: repeat the clip's samples (each pass starts with its IDR frame) up to the length.
  const vTarget = sec * video.timescale;
  const vSamples: Uint8Array[] = [];
  const vDurations: number[] = [];
  const vSync: boolean[] = [];
  let vTime = 0;
  for (let i = 0; vSamples.length === 0 || vTime + video.durations[i % video.samples.length] / 2 <= vTarget; i++) {
    const k = i % video.samples.length;
    vSamples.push(video.samples[k]);
    vDurations.push(video.durations[k]);
    vSync.push(video.sync ? video.sync[k] : true);
    vTime += video.durations[k];
  }
  const movieDuration = Math.round((vTime / video.timescale) * MOVIE_TIMESCALE);
  const tracks: OutTrack[] = [
    {
      id: 1,
      src: video,
      samples: vSamples,
      durations: vDurations,
      sync: video.sync ? vSync : null,
      chunks: secondChunks(vDurations, video.timescale),
      movieDuration,
      mediaTime: 0,
    },
  ];

  if (opts.audio) {
    // Audio: the first frames of the audio clip (cycled if ever too short), covering priming + length.
    const audio = clipTrack(AUDIO_CLIP, "soun");
    const aTarget = audio.mediaTime + (movieDuration / MOVIE_TIMESCALE) * audio.timescale;
    const aSamples: Uint8Array[] = [];
    const aDurations: number[] = [];
    let aTime = 0;
    for (let i = 0; aTime < aTarget; i++) {
      const k = i % audio.samples.length;
      aSamples.push(audio.samples[k]);
      aDurations.push(audio.durations[k]);
      aTime += audio.durations[k];
    }
    // Shorten the last frame's duration so that the media ends exactly at priming + length.
    const excess = Math.floor(aTime - aTarget);
    if (excess > 0 && excess < aDurations[aDurations.length - 1]) aDurations[aDurations.length - 1] -= excess;
    tracks.push({
      id: 2,
      src: audio,
      samples: aSamples,
      durations: aDurations,
      sync: null,
      chunks: secondChunks(aDurations, audio.timescale),
      movieDuration,
      mediaTime: audio.mediaTime,
    });
  }

  return {
    contentType: "video/mp4",
    body: writeMp4(tracks, movieDuration),
    width: video.width,
    height: video.height,
    durationSec: movieDuration / MOVIE_TIMESCALE,
    hasAudio: opts.audio === true,
  };
}
