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

import { createRng, seedFrom } from "./rng.ts";
import { clipTrack } from "./video/mp4-read.ts";
import { MOVIE_TIMESCALE, type OutTrack, writeMp4 } from "./video/mp4-write.ts";

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
