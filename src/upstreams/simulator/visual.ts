/**
 * The built-in simulated image and video upstream (decision D10): every image and video model that
 * has no real upstream configured.
 *
 * - Real media: PNG (`image/png`) or SVG (`image/svg+xml`, `req.output === "svg"`) images from
 *   {@link renderPngAsync} / {@link renderSvg}, at exactly the requested pixel size up to 2048 px per
 *   side ({@link fitRenderSize}), drawn from the prompt (subject, palette, composition, the prompt as a
 *   caption: `images/plan.ts`); playable MP4 video (`video/mp4`, H.264 drawn from the prompt with
 *   motion, at the pixel size asked for up to the model's largest ({@link simulatedVideoSize}), else
 *   640 px on the long side at the requested aspect ratio, AAC audio for the models with sound) of the
 *   requested length from {@link renderMp4}, rendered on a worker thread. Always bytes, never an
 *   upstream URL. Output is deterministic per request (model, prompt, size, index, reference URLs and
 *   a pass-through `parameters.seed`).
 * - Latency, multiplied by `latencyScale` (`SIM_LATENCY_SCALE`): {@link SIM_VISUAL_TIMING}, with a
 *   deterministic per-request spread of +-20 %.
 * - Progress: `onProgress` is called when work starts, every {@link SIM_VISUAL_TIMING}.progressEveryMs
 *   while waiting and after each rendered output (the job runner turns it into heartbeats), with the
 *   fraction done: the simulated wait is the first {@link WAIT_SHARE} of the work (elapsed over the
 *   delay), the rendered outputs the rest.
 * - `images: "placeholder"` (`SIM_IMAGES=placeholder`, benchmarks): every image is a flat grey picture of
 *   the real size, encoded once per size and then answered from a small cache (the same bytes for every
 *   request), so a job costs the gateway's own work and nearly nothing of the simulator's.
 * - `X-Svc-Simulate` (`req.simulate`, D10/D15): `fail` throws a non-retryable {@link UpstreamError}
 *   after a short delay; `slow` adds at least 1 s even at scale 0; `hang` never answers and never
 *   reports progress (a dead worker: the sweep refunds the job): the promise stays pending until
 *   `signal` aborts (then rejects with its reason) or the upstream is closed.
 */

import { createRng, seedFrom } from "./rng.ts";
import { simulatedDelaySec, simulateLatency } from "./delay.ts";
import { renderPlaceholderPng, renderPngAsync } from "./images/png.ts";
import { ByteLruCache, RenderCache } from "./render-cache.ts";
import { fitRenderSize, sizeForAspect } from "./images/size.ts";
import { renderSvg } from "./images/svg.ts";
import { findModelOf } from "../../catalog/models.ts";
import { fitVideoSize, MAX_VIDEO_SEC, type RenderVideoOptions, renderSizeOf, requestedVideoSize, videoAspectOf } from "./video.ts";
import type { VideoWorkerRequest } from "./encode-worker.ts";
import { concatBytes } from "../util.ts";
import {
  type ImageRequest,
  type MediaOutput,
  type SimulateMode,
  UpstreamError,
  type VideoRequest,
  type VisualAdapter,
  type VisualProgress,
} from "../types.ts";

export { renderPng, renderPngAsync } from "./images/png.ts";
export { renderSvg } from "./images/svg.ts";
export { renderMp4 } from "./video.ts";

/** A rendered video in the render cache: the MP4 bytes and the movie length (seconds). */
interface VideoClip {
  bytes: number;
  body: Uint8Array;
  durationSec: number;
}

/** Byte budget of the cache of rendered videos (a 5 s clip is about 100 KB). */
const VIDEO_CACHE_BYTES = 32 * 1024 * 1024;

/** Simulated delays in seconds, before multiplication by `latencyScale`. */
export const SIM_VISUAL_TIMING = {
  /** One image request (all `n` images): the spec says images mostly finish within 30 s. */
  imageSec: 8,
  /** A video: `videoBaseSec + videoPerSec x durationSec` (60 s for the default 5 s; spec: 1-3 min). */
  videoBaseSec: 45,
  videoPerSec: 3,
  /** Deterministic per-request spread: the delay is multiplied by a factor in `1 +- spread`. */
  spread: 0.2,
  /** Interval of `onProgress` calls while waiting, in real milliseconds (not scaled). */
  progressEveryMs: 500,
} as const;

/** The share of a request's progress (0..1) that its simulated wait stands for; rendering is the rest. */
const WAIT_SHARE = 0.9;

/** Largest `n` the simulator accepts in one image request. */
const MAX_IMAGES = 10;

/** Options of {@link createSimulatedVisualUpstream}. */
export interface SimulatedVisualUpstreamOptions {
  /** Multiplier of every simulated delay (0 = no delay except `slow`/`hang`); `SIM_LATENCY_SCALE`. */
  latencyScale: number;
  /**
   * `draw` (default): each image is drawn from its prompt. `placeholder` (`SIM_IMAGES`): a flat grey
   * image of the same size, encoded once per size (see the module comment). Videos are always drawn.
   */
  images?: "draw" | "placeholder";
}

/** Byte budget of the placeholder PNGs kept by size (a few KB each). */
const PLACEHOLDER_CACHE_BYTES = 4 * 1024 * 1024;

/** A flat grey SVG document of `width` x `height` px (the placeholder of vector models). */
function placeholderSvg(width: number, height: number): string {
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}"><rect width="${width}" height="${height}" fill="#808080"/></svg>`;
}

/** The simulated visual upstream: a {@link VisualAdapter} plus `close()` for shutdown. */
export type SimulatedVisualUpstream = VisualAdapter & {
  /**
   * Stops the upstream: pending calls (including `hang`ing ones) reject with an `AbortError`
   * `DOMException`, later calls throw {@link UpstreamError}.
   */
  close(): Promise<void>;
};

/**
 * Whether the simulated clip of `model` carries sound: a boolean pass-through `generate_audio` or
 * `audio` parameter decides; otherwise models whose id contains `audio`, the `vidB-*` models (bundled
 * audio) and `vidD-3` (1080p with audio) have sound, the others are silent.
 */
export function simulatedVideoHasAudio(model: string, parameters: Record<string, unknown>): boolean {
  for (const key of ["generate_audio", "audio"]) {
    const v = parameters[key];
    if (typeof v === "boolean") return v;
  }
  return /audio/i.test(model) || model.startsWith("vidB-") || model === "vidD-3";
}

/**
 * The pixel size of the simulated clip of `model` for pass-through `parameters`, or null for the default
 * (640 px on the long side): the size asked for ({@link requestedVideoSize}: `size` or `resolution`) scaled
 * down to the model's largest output (the catalog's `maxShortSidePx`: vidD-3-fast at most 1280x720) and
 * made even ({@link fitVideoSize}).
 */
export function simulatedVideoSize(model: string, parameters: Record<string, unknown>): { width: number; height: number } | null {
  const asked = requestedVideoSize(parameters);
  if (asked === null) return null;
  return fitVideoSize(asked, findModelOf(model, "video")?.maxShortSidePx);
}

/** The pass-through `seed` parameter as seed material ("" when absent or not a string/number). */
function seedParam(parameters: Record<string, unknown>): string {
  const s = parameters.seed;
  return typeof s === "number" || typeof s === "string" ? String(s) : "";
}

/** A factor in `1 +- spread`, fixed for the given parts. */
function spreadFactor(...parts: string[]): number {
  const rng = createRng(seedFrom("visual-latency", ...parts));
  return 1 + (rng() * 2 - 1) * SIM_VISUAL_TIMING.spread;
}

/** Rejects with `signal.reason` when `signal` aborts; never resolves. */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

class SimulatedVisualUpstreamImpl implements SimulatedVisualUpstream {
  private readonly scale: number;
  private readonly closing = new AbortController();
  /** Placeholder PNGs by `WxH`, or null when images are drawn. */
  private readonly placeholders: ByteLruCache<{ bytes: number; body: Uint8Array }> | null;
  /** Videos render on worker threads (about 10 ms of CPU per frame), one rendering per identical request. */
  private readonly videos = new RenderCache<RenderVideoOptions, VideoClip>({
    maxBytes: VIDEO_CACHE_BYTES,
    workers: 1,
    closedMessage: "simulated visual upstream is closed",
    label: () => "video",
    workerRequest: (id, video): VideoWorkerRequest => ({ id, video }),
    renderInline: () => {
      throw new Error("simulated videos render on a worker");
    },
    isSmall: () => false,
    clipOf: (parts, durationSec) => {
      const body = concatBytes(parts);
      return { bytes: body.length, body, durationSec };
    },
  });

  constructor(opts: SimulatedVisualUpstreamOptions) {
    this.scale = Number.isFinite(opts.latencyScale) && opts.latencyScale > 0 ? opts.latencyScale : 0;
    this.placeholders = opts.images === "placeholder" ? new ByteLruCache(PLACEHOLDER_CACHE_BYTES) : null;
  }

  /** The MP4 of `video`, rendered on the worker pool (or shared with an identical rendering). */
  private async renderVideo(video: RenderVideoOptions, signal: AbortSignal): Promise<VideoClip> {
    const key = JSON.stringify(video);
    const got = this.videos.obtain(key, video);
    if (!("consumers" in got)) return got;
    this.videos.join(got);
    try {
      return await this.videos.wait(got, signal);
    } finally {
      this.videos.release(got);
    }
  }

  /** The placeholder PNG of a size (encoded on first use); callers share the bytes and must not change them. */
  private placeholderPng(width: number, height: number): Uint8Array {
    const cache = this.placeholders as ByteLruCache<{ bytes: number; body: Uint8Array }>;
    const key = `${width}x${height}`;
    let entry = cache.get(key);
    if (entry === undefined) {
      const body = renderPlaceholderPng(width, height);
      entry = { bytes: body.length, body };
      cache.set(key, entry);
    }
    return entry.body;
  }

  /**
   * Waits the simulated latency (see {@link simulateLatency}) while calling `onProgress` every
   * `progressEveryMs`; `hang` waits for an abort without reporting.
   */
  private async work(
    typicalSec: number,
    simulate: SimulateMode | null,
    signal: AbortSignal,
    onProgress?: VisualProgress,
  ): Promise<void> {
    if (simulate === "hang") return untilAborted(signal);
    const totalMs = simulatedDelaySec(typicalSec, this.scale, simulate) * 1000;
    const started = Date.now();
    const report = () => onProgress?.(totalMs > 0 ? WAIT_SHARE * Math.min(1, (Date.now() - started) / totalMs) : WAIT_SHARE);
    report();
    // No wait (SIM_LATENCY_SCALE=0): no progress timer to start and stop for every request.
    const timer = onProgress && totalMs > 0 ? setInterval(report, SIM_VISUAL_TIMING.progressEveryMs) : null;
    timer?.unref();
    try {
      await simulateLatency(typicalSec, this.scale, simulate, signal);
    } catch (err) {
      // The timer rejects with an AbortError whose `cause` is the reason: surface the reason itself.
      if (signal.aborted) throw signal.reason;
      throw err;
    } finally {
      if (timer) clearInterval(timer);
    }
  }

  /** The caller's signal combined with the shutdown signal; throws when already closed. */
  private signalFor(signal?: AbortSignal): AbortSignal {
    if (this.closing.signal.aborted) throw new UpstreamError("simulated visual upstream is closed");
    return signal ? AbortSignal.any([signal, this.closing.signal]) : this.closing.signal;
  }

  /**
   * Generates `req.n` images (1..10) after about 8 s x scale. Each output is
   * `{kind: "bytes", contentType: "image/png" | "image/svg+xml", body, width, height}` with the real
   * pixel size: `req.width` x `req.height` when both are at most 2048 (larger sizes are scaled down
   * to a 2048 px long side; invalid sizes fall back to {@link sizeForAspect}(`req.aspect`)). Image `i`
   * of a request differs from image `j`. Throws {@link UpstreamError} for `simulate: "fail"` or an
   * invalid `n` (not retryable), and `signal.reason` on abort. `onProgress`: see the module comment.
   */
  async generateImages(req: ImageRequest, signal?: AbortSignal, onProgress?: VisualProgress): Promise<MediaOutput[]> {
    const sig = this.signalFor(signal);
    const typical = SIM_VISUAL_TIMING.imageSec * spreadFactor("image", req.model, req.prompt);
    await this.work(typical, req.simulate, sig, onProgress);
    if (!(Number.isInteger(req.n) && req.n >= 1 && req.n <= MAX_IMAGES)) {
      throw new UpstreamError(`n must be an integer in 1..${MAX_IMAGES}, got ${req.n}`, false);
    }
    const size = fitRenderSize(req.width, req.height) ?? sizeForAspect(req.aspect);
    const seed = [req.model, seedParam(req.parameters ?? {}), ...(req.imageUrls ?? [])].join("\n");
    const outputs: MediaOutput[] = [];
    for (let index = 0; index < req.n; index++) {
      sig.throwIfAborted();
      const opts = { prompt: req.prompt, width: size.width, height: size.height, seed, index };
      if (this.placeholders !== null) {
        outputs.push(
          req.output === "svg"
            ? { kind: "bytes", contentType: "image/svg+xml", body: new TextEncoder().encode(placeholderSvg(size.width, size.height)), ...size }
            : { kind: "bytes", contentType: "image/png", body: this.placeholderPng(size.width, size.height), ...size },
        );
      } else if (req.output === "svg") {
        const body = new TextEncoder().encode(renderSvg(opts));
        outputs.push({ kind: "bytes", contentType: "image/svg+xml", body, ...size });
      } else {
        const body = await renderPngAsync(opts);
        outputs.push({ kind: "bytes", contentType: "image/png", body, ...size });
      }
      onProgress?.(WAIT_SHARE + ((1 - WAIT_SHARE) * (index + 1)) / req.n);
    }
    sig.throwIfAborted();
    return outputs;
  }

  /**
   * Generates one clip after about (45 + 3 x durationSec) s x scale:
   * `{kind: "bytes", contentType: "video/mp4", body, width, height, durationSec}` at the size the
   * pass-through parameters ask for, up to the model's largest ({@link simulatedVideoSize}), else 640 px
   * on the long side at their aspect ratio ({@link videoAspectOf}; 16:9, 640x360, when none); sound per
   * {@link simulatedVideoHasAudio}. Image-to-video requests (`imageUrl` set) get the same kind of
   * clip. Throws {@link UpstreamError} for `simulate: "fail"` or a duration outside (0, 60] s (not
   * retryable), and `signal.reason` on abort. `onProgress`: see the module comment.
   */
  async generateVideo(req: VideoRequest, signal?: AbortSignal, onProgress?: VisualProgress): Promise<MediaOutput> {
    const sig = this.signalFor(signal);
    const parameters = req.parameters ?? {};
    const sec = req.durationSec;
    const typical =
      (SIM_VISUAL_TIMING.videoBaseSec + SIM_VISUAL_TIMING.videoPerSec * (Number.isFinite(sec) ? sec : 0)) *
      spreadFactor("video", req.model, req.prompt);
    await this.work(typical, req.simulate, sig, onProgress);
    if (!(Number.isFinite(sec) && sec > 0 && sec <= MAX_VIDEO_SEC)) {
      throw new UpstreamError(`video duration must be in (0, ${MAX_VIDEO_SEC}] seconds, got ${sec}`, false);
    }
    const options: RenderVideoOptions = {
      prompt: req.prompt,
      durationSec: sec,
      aspect: videoAspectOf(parameters) ?? "16:9",
      ...(simulatedVideoSize(req.model, parameters) ?? {}),
      audio: simulatedVideoHasAudio(req.model, parameters),
      seed: [req.model, seedParam(parameters), req.imageUrl ?? ""].join("\n"),
    };
    const clip = await this.renderVideo(options, sig);
    const size = renderSizeOf(options);
    onProgress?.(1);
    return {
      kind: "bytes",
      contentType: "video/mp4",
      body: clip.body,
      width: size.width,
      height: size.height,
      durationSec: clip.durationSec,
    };
  }

  async close(): Promise<void> {
    if (!this.closing.signal.aborted) {
      this.closing.abort(new DOMException("simulated visual upstream closed", "AbortError"));
    }
    await this.videos.close();
  }
}

/** Builds the simulated image + video upstream; see {@link SimulatedVisualUpstreamOptions}. */
export function createSimulatedVisualUpstream(opts: SimulatedVisualUpstreamOptions): SimulatedVisualUpstream {
  return new SimulatedVisualUpstreamImpl(opts);
}
