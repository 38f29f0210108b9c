/**
 * The built-in simulated music and sound-effect upstream (decision D10): `alpha-music`,
 * `beta-music`, `beta-music-pro` and `alpha-sfx`.
 *
 * - Real audio: {@link synthesizeMusic} / {@link synthesizeSfx} + encoding in the requested format;
 *   deterministic per (model, prompt, lyrics, length, prompt influence, format).
 * - Latency, scaled by `latencyScale` (`SIM_LATENCY_SCALE`): {@link SIM_MEDIA_TIMING}. `X-Svc-Simulate`
 *   (`req.simulate`): `fail` throws {@link UpstreamError} after a short delay, `slow` and `hang` add at
 *   least 1 s even at scale 0 (D15).
 * - Speed: encoded clips are kept in a byte-bounded LRU cache ({@link RenderCache}), identical
 *   concurrent requests share one rendering, and everything but tiny clips is rendered in
 *   `worker_threads` workers (the speech encode worker, `encode-worker.ts`) so the event loop stays
 *   free: five minutes of 44.1 kHz MP3 take about 10 s of CPU.
 */

import { hash } from "node:crypto";
import {
  type AudioResult,
  contentTypeOf,
  type MusicAdapter,
  type MusicRequest,
  type SfxRequest,
  type SimulateMode,
  UpstreamError,
} from "../types.ts";
import { audioFormatInfo } from "./encode.ts";
import { concatBytes } from "../util.ts";
import { sleep } from "./delay.ts";
import type { MediaWorkerRequest } from "./encode-worker.ts";
import { type MediaRenderJob, renderMediaChunks } from "./media-render.ts";
import { musicDurationFromLyrics } from "./music/lyrics.ts";
import { RenderCache, type RenderStats, RenderTask } from "./render-cache.ts";
import { sfxDurationSec } from "./sfx/kinds.ts";
import { SIM_AUDIO_TIMING } from "./speech.ts";

/** Simulated delays in seconds, before multiplication by `latencyScale` (unless stated otherwise). */
export const SIM_MEDIA_TIMING = {
  /** A complete music answer (a long job). */
  musicSec: 10,
  /** A complete sound-effect answer. */
  sfxSec: 2,
  /** Before a simulated failure. */
  failSec: SIM_AUDIO_TIMING.failSec,
  /** Extra delay of `slow`/`hang`: `slowMinSec + slowScaledSec x latencyScale` (not scaled: D15). */
  slowMinSec: SIM_AUDIO_TIMING.slowMinSec,
  slowScaledSec: SIM_AUDIO_TIMING.slowScaledSec,
} as const;

/** A complete answer: `contentType` of the format, the file bytes and the clip length in seconds. */
export type BytesResult = Extract<AudioResult, { kind: "bytes" }>;

/** Options of {@link SimulatedMediaUpstream}. */
export interface SimulatedMediaUpstreamOptions {
  /** Multiplier of every simulated delay (0 = no delay except `slow`/`hang`); `SIM_LATENCY_SCALE`. */
  latencyScale: number;
  /** Byte budget of the encoded-clip cache (default 64 MiB). Clips over a quarter of it are not kept. */
  cacheMaxBytes?: number;
  /**
   * Render inline (on the calling thread) when the estimated work is at most this many milliseconds
   * (default 25). Estimates at 44.1 kHz (proportionally less at lower rates): music 20 ms + 10 ms per
   * audio second, sound effects 5 ms + 7 ms per second, plus MP3 encoding 26 ms per second (PCM and
   * mu-law 1 ms). With the default only short sound effects (up to about 0.6 s of MP3) stay inline;
   * every song goes to a worker. 0 sends everything to workers.
   */
  inlineMaxMs?: number;
  /** Number of render workers (default `clamp(availableParallelism() - 1, 2, 4)`). */
  workers?: number;
}

/** An encoded clip and the memory it holds (for the cache budget). */
interface MediaClip {
  body: Uint8Array;
  durationSec: number;
  bytes: number;
}

function clipOf(parts: readonly Uint8Array[], durationSec: number): MediaClip {
  const body = concatBytes(parts);
  return { body, durationSec, bytes: body.byteLength + 128 };
}

function closedError(): UpstreamError {
  return new UpstreamError("the simulated media upstream is closed", false);
}

/** Estimated milliseconds of CPU to synthesize and encode `job` (see `inlineMaxMs`). */
function estimatedWorkMs(job: MediaRenderJob): number {
  const info = audioFormatInfo(job.format);
  const rel = info.sampleRate / 44100;
  const encode = info.codec === "mp3" ? 26 * rel : 1;
  const fixed = job.kind === "music" ? 20 : 5;
  const synth = (job.kind === "music" ? 10 : 7) * rel;
  return fixed + job.durationSec * (synth + encode);
}

/** Cache key of a job: a SHA-256 of everything that determines its bytes. */
function keyOf(job: MediaRenderJob): string {
  const parts =
    job.kind === "music"
      ? [job.kind, job.model, job.format, job.durationSec, job.prompt, job.lyrics]
      : [job.kind, job.model, job.format, job.durationSec, job.promptInfluence, job.prompt];
  return hash("sha256", JSON.stringify(parts), "base64url");
}

/**
 * The simulated music + sound-effect upstream. Construct once per process; `close()` on shutdown.
 * Returned byte arrays may be shared with the cache: treat them as read-only.
 */
export class SimulatedMediaUpstream implements MusicAdapter {
  private readonly scale: number;
  private readonly cache: RenderCache<MediaRenderJob, MediaClip>;
  private closed = false;

  constructor(opts: SimulatedMediaUpstreamOptions) {
    this.scale = Number.isFinite(opts.latencyScale) && opts.latencyScale > 0 ? opts.latencyScale : 0;
    const inlineMaxMs = opts.inlineMaxMs ?? 25;
    this.cache = new RenderCache<MediaRenderJob, MediaClip>({
      maxBytes: opts.cacheMaxBytes,
      workers: opts.workers,
      closedMessage: "the simulated media upstream is closed",
      label: (job) => job.kind,
      workerRequest: (id, media): MediaWorkerRequest => ({ id, media }),
      renderInline: renderMediaChunks,
      isSmall: (job) => estimatedWorkMs(job) <= inlineMaxMs,
      clipOf,
    });
  }

  /**
   * Generates a song for `req` (see {@link MusicAdapter.music}) after about 10 s x scale (or the
   * rendering time, whichever is longer). The length in seconds is `req.lengthMs / 1000`, or with
   * `req.lengthFromLyrics` {@link musicDurationFromLyrics}(lyrics, prompt) (10..300 s; 30..90 s without
   * lyrics); it is the answer's `durationSec`, and the audio holds `round(durationSec x rate)` samples.
   * Throws {@link UpstreamError} for `simulate: "fail"` (not retryable), an invalid length (not
   * retryable) or a rendering failure, and `signal.reason` (an `AbortError` by default) on abort.
   */
  async music(req: MusicRequest, signal?: AbortSignal): Promise<BytesResult> {
    const durationSec = req.lengthFromLyrics
      ? musicDurationFromLyrics(req.lyrics, req.prompt)
      : req.lengthMs / 1000;
    const job: MediaRenderJob = {
      kind: "music",
      model: req.model,
      prompt: req.prompt,
      lyrics: req.lyrics,
      durationSec,
      format: req.format,
    };
    return this.run(job, req.simulate, SIM_MEDIA_TIMING.musicSec, signal);
  }

  /**
   * Generates a sound effect for `req` (see {@link MusicAdapter.sfx}) after about 2 s x scale. The
   * length is `req.durationSec`, or when null 2..6 s picked from the prompt ({@link sfxDurationSec});
   * it is the answer's `durationSec`. Errors as for {@link SimulatedMediaUpstream.music}.
   */
  async sfx(req: SfxRequest, signal?: AbortSignal): Promise<BytesResult> {
    const influence = Number.isFinite(req.promptInfluence)
      ? Math.min(1, Math.max(0, req.promptInfluence))
      : 0.3;
    const job: MediaRenderJob = {
      kind: "sfx",
      model: req.model,
      prompt: req.prompt,
      durationSec: sfxDurationSec(req.prompt, req.durationSec),
      promptInfluence: influence,
      format: req.format,
    };
    return this.run(job, req.simulate, SIM_MEDIA_TIMING.sfxSec, signal);
  }

  /** Cache occupancy (entries, bytes), renderings in progress and live workers; for metrics and tests. */
  stats(): RenderStats {
    return this.cache.stats();
  }

  /** Terminates the render workers, fails renderings in progress and empties the cache. */
  async close(): Promise<void> {
    this.closed = true;
    await this.cache.close();
  }

  private async run(
    job: MediaRenderJob,
    simulate: SimulateMode | null,
    latencySec: number,
    signal: AbortSignal | undefined,
  ): Promise<BytesResult> {
    signal?.throwIfAborted();
    if (this.closed) throw closedError();
    if (simulate === "fail") {
      await sleep(SIM_MEDIA_TIMING.failSec * this.scale * 1000, signal);
      throw new UpstreamError(`simulated upstream failure for model '${job.model}'`, false);
    }
    if (!(Number.isFinite(job.durationSec) && job.durationSec > 0 && job.durationSec <= 600)) {
      throw new UpstreamError(`invalid ${job.kind} length ${job.durationSec} s`, false);
    }
    const contentType = contentTypeOf(job.format);
    const latencyMs = latencySec * this.scale * 1000 + this.slowExtraMs(simulate);
    const key = keyOf(job);
    const ready = this.cache.obtain(key, job);
    if (!(ready instanceof RenderTask)) {
      await sleep(latencyMs, signal);
      return { kind: "bytes", contentType, body: ready.body, durationSec: ready.durationSec };
    }
    this.cache.join(ready);
    try {
      const [clip] = await Promise.all([this.cache.wait(ready, signal), sleep(latencyMs, signal)]);
      return { kind: "bytes", contentType, body: clip.body, durationSec: clip.durationSec };
    } finally {
      this.cache.release(ready);
    }
  }

  private slowExtraMs(simulate: SimulateMode | null): number {
    if (simulate !== "slow" && simulate !== "hang") return 0;
    return (SIM_MEDIA_TIMING.slowMinSec + SIM_MEDIA_TIMING.slowScaledSec * this.scale) * 1000;
  }
}

/** Builds a {@link SimulatedMediaUpstream}; see {@link SimulatedMediaUpstreamOptions}. */
export function createSimulatedMediaUpstream(opts: SimulatedMediaUpstreamOptions): SimulatedMediaUpstream {
  return new SimulatedMediaUpstream(opts);
}
