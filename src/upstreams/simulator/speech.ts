/**
 * The built-in simulated audio upstream (decision D10): speech synthesis for every `alpha-*` and
 * `beta-speech-*` model plus both voice libraries.
 *
 * - Real audio: {@link synthesizeSpeech} + encoding in the requested format; deterministic per
 *   (model, text, voice, format, voice settings).
 * - Latency, scaled by `latencyScale` (`SIM_LATENCY_SCALE`): {@link SIM_AUDIO_TIMING}. `X-Svc-Simulate`
 *   (`req.simulate`): `fail` throws {@link UpstreamError} after a short delay, `slow` and `hang` add at
 *   least 1 s even at scale 0 (D15).
 * - Speed: encoded clips are kept in a byte-bounded LRU cache, identical concurrent requests share one
 *   rendering, and long clips are rendered in `worker_threads` workers so the event loop stays free.
 * - Realtime speech (D42): {@link SimulatedAudioUpstream.openSpeechStream}, in speech-stream.ts, renders
 *   its chunks through the same cache and workers.
 */

import { hash } from "node:crypto";
import {
  type AudioResult,
  contentTypeOf,
  type SimulateMode,
  type SpeechAdapter,
  type SpeechRequest,
  UpstreamError,
  type VoiceLibraryAdapter,
  type VoiceRecord,
} from "../types.ts";
import { audioFormatInfo } from "./encode.ts";
import { concatBytes } from "../util.ts";
import { RENDER_CHUNK_SEC, renderSpeechChunks, type SpeechRenderJob } from "./speech/render.ts";
import { speechDurationSec } from "./speech/synthesize.ts";
import { sleep } from "./delay.ts";
import type { EncodeWorkerRequest } from "./encode-worker.ts";
import { RenderCache, type RenderStats, RenderTask } from "./render-cache.ts";
import { createVoiceCatalog, type VoiceCatalog } from "./voices.ts";
import type { SpeechStreamRequest, SpeechStreamSource } from "../realtime.ts";
import { openSimulatedSpeechStream, type RealtimeRendering, type SimulatedSpeechStream } from "./speech-stream.ts";

/** Simulated delays in seconds, before multiplication by `latencyScale` (unless stated otherwise). */
export const SIM_AUDIO_TIMING = {
  /** A complete (non-streamed) speech answer. */
  speechSec: 1.8,
  /** First chunk of a streamed answer. */
  streamFirstSec: 0.4,
  /** Between two later chunks of a streamed answer. */
  streamGapSec: 0.1,
  /** Before a simulated failure. */
  failSec: 0.3,
  /** A voice-library answer. */
  voicesSec: 0.25,
  /** Extra delay of `slow`/`hang`: `slowMinSec + slowScaledSec x latencyScale` (not scaled: D15). */
  slowMinSec: 1,
  slowScaledSec: 2,
} as const;

/** A streamed answer is cut into about this many pieces. */
const STREAM_PIECES = 8;

/** Options of {@link SimulatedAudioUpstream}. */
export interface SimulatedAudioUpstreamOptions {
  /** Multiplier of every simulated delay (0 = no delay except `slow`/`hang`); `SIM_LATENCY_SCALE`. */
  latencyScale: number;
  /** Public base address of the gateway, used for the alpha `preview_url`s. */
  publicBaseUrl: string;
  /** Byte budget of the encoded-clip cache (default 64 MiB). Clips over a quarter of it are not kept. */
  cacheMaxBytes?: number;
  /**
   * Render inline (on the calling thread) when `durationSec x (mp3 ? 1 : 0.1)` is at most this
   * (default 2 s: about 45 ms of work; MP3 encoding costs about 21 ms per audio second).
   * Larger jobs go to a worker. 0 sends everything to workers.
   */
  inlineMaxSec?: number;
  /** Number of encode workers (default `clamp(availableParallelism() - 1, 2, 4)`). */
  workers?: number;
}

/** An encoded clip: the file bytes, chunk boundaries (byte offsets, first 0, last body length). */
interface RenderedClip {
  body: Uint8Array;
  offsets: Uint32Array;
  durationSec: number;
  /** Approximate memory held, for the cache budget. */
  bytes: number;
}

function clipOf(parts: readonly Uint8Array[], durationSec: number): RenderedClip {
  const offsets = new Uint32Array(parts.length + 1);
  let off = 0;
  for (let i = 0; i < parts.length; i++) {
    offsets[i] = off;
    off += parts[i].length;
  }
  offsets[parts.length] = off;
  const body = concatBytes(parts);
  return { body, offsets, durationSec, bytes: body.byteLength + offsets.byteLength + 128 };
}

/** Reads a clip or a task in progress as a sequence of encoder chunks. */
interface ChunkSource {
  estimatedChunks: number;
  available(): number;
  done(): boolean;
  error(): Error | null;
  range(from: number, to: number): Uint8Array;
  changed(signal?: AbortSignal): Promise<void>;
}

function clipSource(clip: RenderedClip): ChunkSource {
  const n = clip.offsets.length - 1;
  return {
    estimatedChunks: n,
    available: () => n,
    done: () => true,
    error: () => null,
    range: (from, to) => clip.body.subarray(clip.offsets[from], clip.offsets[to]),
    changed: () => Promise.resolve(),
  };
}

/** A speech rendering in progress on a worker. */
type SpeechTask = RenderTask<SpeechRenderJob, RenderedClip>;

function taskSource(task: SpeechTask): ChunkSource {
  return {
    estimatedChunks: Math.ceil(speechDurationSec(task.job.text) / RENDER_CHUNK_SEC) + 1,
    available: () => task.chunks.length,
    done: () => task.clip !== null,
    error: () => task.error,
    range: (from, to) => (to - from === 1 ? task.chunks[from] : concatBytes(task.chunks.slice(from, to))),
    changed: (signal) => task.changed(signal),
  };
}

/** Cuts a chunk source into about {@link STREAM_PIECES} pieces, waiting for rendering as needed. */
class PieceCursor {
  private readonly src: ChunkSource;
  private readonly per: number;
  private next = 0;

  constructor(src: ChunkSource) {
    this.src = src;
    this.per = Math.max(1, Math.ceil(src.estimatedChunks / STREAM_PIECES));
  }

  /** The next piece, or null at the end. Throws the rendering error or the abort reason. */
  async piece(signal?: AbortSignal): Promise<Uint8Array | null> {
    const src = this.src;
    for (;;) {
      const err = src.error();
      if (err) throw err;
      signal?.throwIfAborted();
      const avail = src.available() - this.next;
      // The first piece goes out as soon as anything is ready (time to first audio); later ones are full.
      if (avail >= this.per || (avail > 0 && (src.done() || this.next === 0))) {
        const n = Math.min(this.per, avail);
        const out = src.range(this.next, this.next + n);
        this.next += n;
        return out;
      }
      if (src.done()) return null;
      await src.changed(signal);
    }
  }
}

/** Per-request rendering parameters: the cache key and the job. */
function jobOf(req: SpeechRequest): { key: string; job: SpeechRenderJob } {
  const s = req.voiceSettings ?? {};
  const settings = {
    stability: s.stability,
    similarity_boost: s.similarity_boost,
    style: s.style,
    use_speaker_boost: s.use_speaker_boost,
  };
  const job: SpeechRenderJob = {
    text: req.text,
    voiceId: req.voiceId,
    variant: req.model,
    settings,
    format: req.format,
  };
  const keyText = JSON.stringify([req.model, req.voiceId, req.format, settings, req.text]);
  return { key: hash("sha256", keyText, "base64url"), job };
}

/**
 * The simulated speech + voice-library upstream. Construct once per process; `close()` on shutdown.
 * Returned byte arrays may be shared with the cache: treat them as read-only.
 */
export class SimulatedAudioUpstream implements SpeechAdapter, VoiceLibraryAdapter, SpeechStreamSource {
  readonly #publicBaseUrl: string;
  #catalog: VoiceCatalog | null = null;
  private readonly scale: number;
  private readonly cache: RenderCache<SpeechRenderJob, RenderedClip>;
  private closed = false;

  constructor(opts: SimulatedAudioUpstreamOptions) {
    this.scale = Number.isFinite(opts.latencyScale) && opts.latencyScale > 0 ? opts.latencyScale : 0;
    this.#publicBaseUrl = opts.publicBaseUrl;
    const inlineMaxSec = opts.inlineMaxSec ?? 2;
    this.cache = new RenderCache<SpeechRenderJob, RenderedClip>({
      maxBytes: opts.cacheMaxBytes,
      workers: opts.workers,
      closedMessage: "the simulated audio upstream is closed",
      label: () => "speech",
      workerRequest: (id, job): EncodeWorkerRequest => ({ id, job }),
      renderInline: renderSpeechChunks,
      isSmall: (job) => {
        const dur = speechDurationSec(job.text);
        return (audioFormatInfo(job.format).codec === "mp3" ? dur : dur * 0.1) <= inlineMaxSec;
      },
      clipOf,
      keepChunks: true,
    });
  }

  /** The voice libraries (3000 alpha, 300 beta voices), built on first use (about 2 MB of records). */
  get catalog(): VoiceCatalog {
    this.#catalog ??= createVoiceCatalog(this.#publicBaseUrl);
    return this.#catalog;
  }

  /**
   * Synthesizes `req` (see {@link SpeechAdapter.speech}). Answers `{kind: "bytes"}` after about
   * 1.8 s x scale, or with `req.stream` `{kind: "stream"}` whose first chunk is ready after about
   * 0.4 s x scale (the promise resolves then) and whose later chunks (about 8 in all) follow 0.1 s x
   * scale apart. Throws {@link UpstreamError} for `simulate: "fail"` (not retryable) or a rendering
   * failure, and `signal.reason` (an `AbortError` by default) when `signal` aborts.
   */
  async speech(req: SpeechRequest, signal?: AbortSignal): Promise<AudioResult> {
    signal?.throwIfAborted();
    if (this.closed) throw new UpstreamError("the simulated audio upstream is closed", false);
    if (req.simulate === "fail") {
      await sleep(SIM_AUDIO_TIMING.failSec * this.scale * 1000, signal);
      throw new UpstreamError(`simulated upstream failure for model '${req.model}'`, false);
    }
    const extraMs = this.slowExtraMs(req.simulate);
    const contentType = contentTypeOf(req.format);
    const { key, job } = jobOf(req);
    const ready = this.cache.obtain(key, job);
    let task = ready instanceof RenderTask ? ready : null;
    if (task) this.cache.join(task);

    if (!req.stream) {
      const latencyMs = SIM_AUDIO_TIMING.speechSec * this.scale * 1000 + extraMs;
      if (!(ready instanceof RenderTask)) {
        await sleep(latencyMs, signal);
        return { kind: "bytes", contentType, body: ready.body, durationSec: ready.durationSec };
      }
      try {
        const [clip] = await Promise.all([this.cache.wait(ready, signal), sleep(latencyMs, signal)]);
        return { kind: "bytes", contentType, body: clip.body, durationSec: clip.durationSec };
      } finally {
        this.cache.release(ready);
      }
    }

    // Streaming.
    const src = ready instanceof RenderTask ? taskSource(ready) : clipSource(ready);
    const cursor = new PieceCursor(src);
    let first: Uint8Array | null;
    try {
      await sleep(SIM_AUDIO_TIMING.streamFirstSec * this.scale * 1000 + extraMs, signal);
      first = await cursor.piece(signal);
    } catch (err) {
      if (task) this.cache.release(task);
      throw err;
    }
    const gapMs = SIM_AUDIO_TIMING.streamGapSec * this.scale * 1000;
    const release = () => {
      if (task) this.cache.release(task);
      task = null;
    };
    async function* chunks(): AsyncGenerator<Uint8Array, void, undefined> {
      try {
        if (first === null) return;
        yield first;
        for (;;) {
          await sleep(gapMs, signal);
          const p = await cursor.piece(signal);
          if (p === null) return;
          yield p;
        }
      } finally {
        release();
      }
    }
    return { kind: "stream", contentType, chunks: chunks() };
  }

  /**
   * A short MP3 (mp3_44100_128, about 2.7 s) of `voiceId` reading a fixed sentence: the audio behind the
   * alpha `preview_url`s. No simulated latency; cached like speech.
   */
  async voicePreview(voiceId: string, signal?: AbortSignal): Promise<Uint8Array> {
    const result = await this.speechNoLatency(
      {
        model: "preview",
        text: "Hello! This is a short preview of my voice.",
        voiceId,
        format: "mp3_44100_128",
        voiceSettings: {},
        stream: false,
        simulate: null,
      },
      signal,
    );
    return result.body;
  }

  /**
   * All voices of `provider` (a fresh array of shared, frozen records) after about 0.25 s x scale.
   * `simulate`: `fail` throws {@link UpstreamError}; `slow`/`hang` add at least 1 s.
   */
  async listVoices(provider: "alpha" | "beta", simulate?: SimulateMode | null): Promise<VoiceRecord[]> {
    if (simulate === "fail") {
      await sleep(SIM_AUDIO_TIMING.failSec * this.scale * 1000);
      throw new UpstreamError(`simulated ${provider} voice catalog failure`, false);
    }
    await sleep(SIM_AUDIO_TIMING.voicesSec * this.scale * 1000 + this.slowExtraMs(simulate ?? null));
    return provider === "alpha" ? this.catalog.alpha.slice() : this.catalog.beta.slice();
  }

  /**
   * Opens a realtime speech stream (D42; see {@link openSimulatedSpeechStream}) whose chunks are rendered
   * through this upstream's cache and workers.
   */
  openSpeechStream(req: SpeechStreamRequest, signal?: AbortSignal): Promise<SimulatedSpeechStream> {
    if (this.closed) return Promise.reject(new UpstreamError("the simulated audio upstream is closed", false));
    const renderer = { latencyScale: this.scale, render: (key: string, job: SpeechRenderJob) => this.renderRealtime(key, job) };
    return openSimulatedSpeechStream(renderer, req, signal);
  }

  /** True when `voiceId` is in the alpha library (O(1)). */
  isAlphaVoice(voiceId: string): boolean {
    return this.catalog.isAlphaVoice(voiceId);
  }

  /** Cache occupancy (entries, bytes), renderings in progress and live workers; for metrics and tests. */
  stats(): RenderStats {
    return this.cache.stats();
  }

  /** Terminates the encode workers, fails renderings in progress and empties the cache. */
  async close(): Promise<void> {
    this.closed = true;
    await this.cache.close();
  }

  private slowExtraMs(simulate: SimulateMode | null): number {
    if (simulate !== "slow" && simulate !== "hang") return 0;
    return (SIM_AUDIO_TIMING.slowMinSec + SIM_AUDIO_TIMING.slowScaledSec * this.scale) * 1000;
  }

  /** The rendering of one realtime chunk: a cached or inline clip, or a worker task joined until `release`. */
  private renderRealtime(key: string, job: SpeechRenderJob): RealtimeRendering {
    if (this.closed) throw new UpstreamError("the simulated audio upstream is closed", false);
    const ready = this.cache.obtain(key, job);
    if (!(ready instanceof RenderTask)) return { source: clipSource(ready), release: () => {} };
    this.cache.join(ready);
    let joined = true;
    const release = () => {
      if (joined) this.cache.release(ready);
      joined = false;
    };
    return { source: taskSource(ready), release };
  }

  private async speechNoLatency(req: SpeechRequest, signal?: AbortSignal): Promise<RenderedClip> {
    const { key, job } = jobOf(req);
    const ready = this.cache.obtain(key, job);
    if (!(ready instanceof RenderTask)) return ready;
    this.cache.join(ready);
    try {
      return await this.cache.wait(ready, signal);
    } finally {
      this.cache.release(ready);
    }
  }
}

/** Builds a {@link SimulatedAudioUpstream}; see {@link SimulatedAudioUpstreamOptions}. */
export function createSimulatedAudioUpstream(opts: SimulatedAudioUpstreamOptions): SimulatedAudioUpstream {
  return new SimulatedAudioUpstream(opts);
}
