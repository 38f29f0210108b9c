/**
 * Video synthesis for the built-in simulator (decision D10; issue 28: the video shows the prompt):
 * playable MP4 files drawn from the prompt, at the requested aspect ratio and length, encoded in
 * process (no ffmpeg, no native addon).
 *
 * {@link renderMp4} draws every frame (24 fps) with the image simulator's scene planner at the frame's
 * time (`planImage` with `timeSec`: the prompt's subject, palette and composition, moving sun or moon,
 * drifting clouds, rolling waves, panning hills, travelling cars and boats; the prompt as a caption),
 * on a raster of half the output size enlarged 2x, and encodes the frames as H.264 (Constrained
 * Baseline, yuv420p, one IDR frame a second) with the `h264-mp4-encoder` package (a WebAssembly build
 * of minih264 and minimp4: prebuilt, installs without compiling). The encoder's MP4 is then parsed and
 * written again as a progressive ("faststart") file: `ftyp`, `moov` (`mvhd`, one `trak` per track with
 * `tkhd`/`edts`/`mdia`/`minf`/`stbl`), `mdat`, with zero creation times (the encoder's own file stamps
 * the wall clock) and, for models with sound, the first seconds of the committed AAC track
 * `clips/pad-16k.m4a` (16 kHz mono, its edit list skipping the AAC priming).
 *
 * Size: `width` x `height` when given (even, at most {@link MAX_VIDEO_SIDE}), else
 * {@link VIDEO_LONG_SIDE} px on the long side and the short side from the aspect ratio (even).
 * Deterministic: the same options give the same bytes. Costs about 10 ms of CPU per frame at 640x360
 * (about 1.1 s for 5 s of video) and about 25 ms at 1280x720 (about 3 s for 5 s; the H.264 encoder is
 * most of it, and it grows with the pixels): the simulator's upstream runs it on its worker pool.
 */

import { createRequire } from "node:module";
import { planImage } from "./images/plan.ts";
import { rasterize } from "./images/raster.ts";
import { clipTrack, parseTrack } from "./video/mp4-read.ts";
import { MOVIE_TIMESCALE, type OutTrack, writeMp4 } from "./video/mp4-write.ts";

/** Longest clip {@link renderMp4} builds, in seconds. */
export const MAX_VIDEO_SEC = 60;

/** Long side of every simulated video, in pixels. */
export const VIDEO_LONG_SIDE = 640;

/** Longest side of a simulated video asked for by pixel size, in pixels (1080p). */
export const MAX_VIDEO_SIDE = 1920;

/** Shortest side of a simulated video asked for by pixel size, in pixels. */
export const MIN_VIDEO_SIDE = 32;

/** Frames per second of the simulated videos. */
export const VIDEO_FPS = 24;

/**
 * Pixels per raster cell of the video frames of a size: 2 (drawn at half size, enlarged 2x) up to the
 * default 640 px long side, coarser for larger frames so the drawing stays about the default's (a 1280 px
 * frame is drawn at a quarter, enlarged 4x). The encoder's cost, which grows with the pixels, stays.
 */
function frameCell(width: number, height: number): number {
  return Math.max(2, Math.round(Math.max(width, height) / 320));
}

/** Orientation of a simulated clip: landscape (16:9 by default) or portrait (9:16). */
export type VideoOrientation = "landscape" | "portrait";

/** Options of {@link renderMp4}. */
export interface RenderVideoOptions {
  /** The prompt: it picks the scene (see `images/plan.ts`) and is written on every frame. */
  prompt: string;
  /** Length in seconds, > 0 and at most {@link MAX_VIDEO_SEC}; rounded to whole frames (1/24 s). */
  durationSec: number;
  /** Aspect ratio `W:H` (for example `16:9`, `9:16`, `1:1`, `4:3`, `21:9`); wins over `orientation`. */
  aspect?: string;
  /** Without `aspect`: `landscape` (default) is 16:9, `portrait` 9:16. */
  orientation?: VideoOrientation;
  /**
   * The pixel size, both or neither: even integers from {@link MIN_VIDEO_SIDE} to
   * {@link MAX_VIDEO_SIDE}; they win over `aspect` and `orientation`. Without them: {@link videoSize}.
   */
  width?: number;
  height?: number;
  /** Add an AAC audio track (default false: a silent, video-only file). */
  audio?: boolean;
  /** Extra seed material for the composition (for example the model id); default "". */
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

/** A `W:H` or `WxH` string as a ratio, or null. */
function parseRatio(v: string): { w: number; h: number } | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*[:xX*]\s*(\d+(?:\.\d+)?)\s*$/.exec(v);
  if (!m) return null;
  const w = Number(m[1]);
  const h = Number(m[2]);
  return w > 0 && h > 0 ? { w, h } : null;
}

/**
 * The aspect ratio requested by pass-through parameters: the first of `aspect_ratio`, `aspectRatio`,
 * `aspect`, `size`, `resolution` that reads as `W:H` or `WxH`, as `"W:H"`; null when none does.
 */
export function videoAspectOf(parameters: Record<string, unknown>): string | null {
  for (const key of ["aspect_ratio", "aspectRatio", "aspect", "size", "resolution"]) {
    const v = parameters[key];
    if (typeof v !== "string") continue;
    const r = parseRatio(v);
    if (r) return `${r.w}:${r.h}`;
  }
  return null;
}

/**
 * The pixel size requested by pass-through parameters, or null when none is: `size` or `resolution` as
 * `WxH` (`1280x720`), else `resolution` as a video class (`720p`, `1080P`, `4k`: the short side) at the
 * aspect ratio of {@link videoAspectOf} (16:9 when none). Not yet fitted to any limit (see
 * {@link fitVideoSize}).
 */
export function requestedVideoSize(parameters: Record<string, unknown>): { width: number; height: number } | null {
  for (const key of ["size", "resolution"]) {
    const v = parameters[key];
    if (typeof v !== "string") continue;
    const m = /^\s*(\d{1,5})\s*[xX*×]\s*(\d{1,5})\s*$/.exec(v);
    if (m && Number(m[1]) > 0 && Number(m[2]) > 0) return { width: Number(m[1]), height: Number(m[2]) };
  }
  const res = parameters.resolution;
  if (typeof res !== "string") return null;
  const p = /^\s*(\d{3,4})\s*[pP]\s*$/.exec(res);
  const short = p ? Number(p[1]) : /^\s*4k\s*$/i.test(res) ? 2160 : null;
  if (short === null || short === 0) return null;
  const r = parseRatio(videoAspectOf(parameters) ?? "16:9") ?? { w: 16, h: 9 };
  const long = Math.round((short * Math.max(r.w, r.h)) / Math.min(r.w, r.h));
  return r.w >= r.h ? { width: long, height: short } : { width: short, height: long };
}

/**
 * `size` scaled down (aspect ratio kept) to fit a model whose largest output has a short side of
 * `maxShortSide` px (default 1080: 1080p; its long side 16/9 of that, made even) and
 * {@link MAX_VIDEO_SIDE}; never scaled up.
 * Each side is then made even (a scaled side to the nearest even number, which stays within the even
 * limits; a side kept as asked rounded down) and at least {@link MIN_VIDEO_SIDE}.
 */
export function fitVideoSize(size: { width: number; height: number }, maxShortSide = 1080): { width: number; height: number } {
  const maxShort = Math.min(MAX_VIDEO_SIDE, Math.floor(maxShortSide / 2) * 2);
  const maxLong = Math.min(MAX_VIDEO_SIDE, Math.round((maxShort * 8) / 9) * 2);
  const long = Math.max(size.width, size.height);
  const short = Math.min(size.width, size.height);
  const scale = Math.min(1, maxLong / long, maxShort / short);
  const side = (v: number) => {
    const exact = v * scale;
    const even = scale < 1 ? Math.round(exact / 2) * 2 : Math.floor(exact / 2) * 2;
    return Math.min(MAX_VIDEO_SIDE, Math.max(MIN_VIDEO_SIDE, even));
  };
  return { width: side(size.width), height: side(size.height) };
}

/** The orientation requested by pass-through parameters (see {@link videoAspectOf}): portrait when H > W. */
export function videoOrientationOf(parameters: Record<string, unknown>): VideoOrientation {
  const a = videoAspectOf(parameters);
  const r = a === null ? null : parseRatio(a);
  return r !== null && r.h > r.w ? "portrait" : "landscape";
}

/**
 * The pixel size of a simulated video: {@link VIDEO_LONG_SIDE} on the long side, the short side from
 * the aspect ratio rounded to an even number (at least 2; ratios beyond 4:1 are clamped to 4:1).
 * `aspect` as in {@link RenderVideoOptions} (unparseable: 16:9), else `orientation`.
 */
export function videoSize(aspect?: string | null, orientation: VideoOrientation = "landscape"): { width: number; height: number } {
  const r = (aspect ? parseRatio(aspect) : null) ?? (orientation === "portrait" ? { w: 9, h: 16 } : { w: 16, h: 9 });
  const ratio = Math.min(4, Math.max(0.25, r.w / r.h));
  const short = Math.max(2, Math.round((VIDEO_LONG_SIDE / Math.max(ratio, 1 / ratio)) / 2) * 2);
  return ratio >= 1 ? { width: VIDEO_LONG_SIDE, height: short } : { width: short, height: VIDEO_LONG_SIDE };
}

/**
 * The pixel size {@link renderMp4} draws `opts` at: `opts.width` x `opts.height` when given, else
 * {@link videoSize}. @throws RangeError for a size that is not a pair of even integers within
 * {@link MIN_VIDEO_SIDE}..{@link MAX_VIDEO_SIDE}, or only one of the two.
 */
export function renderSizeOf(opts: Pick<RenderVideoOptions, "aspect" | "orientation" | "width" | "height">): { width: number; height: number } {
  if (opts.width === undefined && opts.height === undefined) return videoSize(opts.aspect, opts.orientation ?? "landscape");
  const ok = (v: number | undefined) => typeof v === "number" && Number.isInteger(v) && v % 2 === 0 && v >= MIN_VIDEO_SIDE && v <= MAX_VIDEO_SIDE;
  if (!ok(opts.width) || !ok(opts.height)) {
    throw new RangeError(`video size must be two even whole numbers of pixels from ${MIN_VIDEO_SIDE} to ${MAX_VIDEO_SIDE}, got ${opts.width}x${opts.height}`);
  }
  return { width: opts.width as number, height: opts.height as number };
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

/** File name under `clips/` of the audio source (16 s of mono AAC-LC at 16 kHz). */
const AUDIO_CLIP = "pad-16k.m4a";

/** The encoder package's API (its own typings describe an Emscripten module we use a small part of). */
interface H264Encoder {
  outputFilename: string;
  width: number;
  height: number;
  frameRate: number;
  speed: number;
  quantizationParameter: number;
  groupOfPictures: number;
  initialize(): void;
  addFrameRgba(buffer: Uint8Array): void;
  finalize(): void;
  delete(): void;
  FS: { readFile(path: string): Uint8Array; unlink(path: string): void };
}

/** The encoder constructor, loaded on first use (the WebAssembly module compiles once per thread). */
let encoderClass: Promise<new () => H264Encoder> | null = null;

function loadEncoder(): Promise<new () => H264Encoder> {
  encoderClass ??= (async () => {
    const require = createRequire(import.meta.url);
    const { createH264MP4Encoder } = require("h264-mp4-encoder") as { createH264MP4Encoder(): Promise<H264Encoder> };
    const first = await createH264MP4Encoder();
    // Later encoders are made synchronously from the same class; they share the module's file system.
    const Encoder = first.constructor as new () => H264Encoder;
    first.delete();
    return class {
      constructor() {
        const e = new Encoder();
        e.FS = first.FS;
        return e;
      }
    } as unknown as new () => H264Encoder;
  })();
  return encoderClass;
}

/** Sequence number of the encoder's output files in its in-memory file system. */
let outputSeq = 0;

/**
 * H.264 frames of the scene of `opts` at `width` x `height` for `frames` frames (see the module
 * comment), as the encoder's MP4 file.
 */
async function encodeFrames(opts: RenderVideoOptions, width: number, height: number, frames: number): Promise<Uint8Array> {
  const Encoder = await loadEncoder();
  const enc = new Encoder();
  const file = `sim-${process.pid}-${outputSeq++}.mp4`;
  try {
    enc.outputFilename = file;
    enc.width = width;
    enc.height = height;
    enc.frameRate = VIDEO_FPS;
    enc.groupOfPictures = VIDEO_FPS;
    enc.speed = 10;
    enc.quantizationParameter = 30;
    enc.initialize();
    const cell = frameCell(width, height);
    const cw = Math.ceil(width / cell);
    const ch = Math.ceil(height / cell);
    const rgba = new Uint8Array(width * height * 4).fill(255);
    const rowBytes = width * 4;
    const prompt = opts.prompt.normalize("NFC");
    for (let f = 0; f < frames; f++) {
      const plan = planImage({ prompt, width, height, seed: opts.seed ?? "", index: 0, timeSec: f / VIDEO_FPS });
      const cv = rasterize(plan, cw, ch);
      const src = cv.data;
      const stride = cw * 3 + 1;
      for (let y = 0; y < height; y++) {
        const o0 = y * rowBytes;
        if (y % cell !== 0) {
          // The rows of one raster cell are the same: copy the cell's first one.
          rgba.copyWithin(o0, o0 - rowBytes, o0);
          continue;
        }
        const row = (y / cell) * stride + 1;
        let o = o0;
        for (let x = 0; x < width; x++, o += 4) {
          const si = row + Math.floor(x / cell) * 3;
          rgba[o] = src[si];
          rgba[o + 1] = src[si + 1];
          rgba[o + 2] = src[si + 2];
        }
      }
      enc.addFrameRgba(rgba);
    }
    enc.finalize();
    const out = enc.FS.readFile(file);
    return new Uint8Array(out);
  } finally {
    try {
      enc.FS.unlink(file);
    } catch {
      // never written
    }
    enc.delete();
  }
}

/**
 * Builds a playable MP4 of `opts.durationSec` seconds (rounded to whole frames at 24 fps, at least one
 * frame): H.264 frames drawn from the prompt at `opts.width` x `opts.height`, else {@link videoSize},
 * plus an AAC track when `opts.audio`. The file starts with `ftyp`, then `moov`, then `mdat`.
 * Deterministic. Rejects with `RangeError` when the duration is not a number in (0,
 * {@link MAX_VIDEO_SEC}], or the size is not a pair of even integers within
 * {@link MIN_VIDEO_SIDE}..{@link MAX_VIDEO_SIDE}.
 */
export async function renderMp4(opts: RenderVideoOptions): Promise<RenderedVideo> {
  const sec = opts.durationSec;
  if (!(Number.isFinite(sec) && sec > 0 && sec <= MAX_VIDEO_SEC)) {
    throw new RangeError(`video duration must be in (0, ${MAX_VIDEO_SEC}] seconds, got ${sec}`);
  }
  const { width, height } = renderSizeOf(opts);
  const frames = Math.max(1, Math.round(sec * VIDEO_FPS));
  const encoded = await encodeFrames(opts, width, height, frames);
  const video = parseTrack(encoded, "vide");
  const vTime = video.durations.reduce((n, d) => n + d, 0);
  const movieDuration = Math.round((vTime / video.timescale) * MOVIE_TIMESCALE);
  const tracks: OutTrack[] = [
    {
      id: 1,
      src: video,
      samples: video.samples,
      durations: video.durations,
      sync: video.sync,
      chunks: secondChunks(video.durations, video.timescale),
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
    width,
    height,
    durationSec: movieDuration / MOVIE_TIMESCALE,
    hasAudio: opts.audio === true,
  };
}
