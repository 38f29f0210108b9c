/**
 * The simulator's realtime speech (D42, D10): text chunks in, audio out, as ElevenLabs' text-to-speech
 * socket does. Each chunk is spoken with the simulator's own voice synthesis (the HTTP speech route's voice
 * for the same voice id, model and settings) and its audio is yielded in pieces of about 0.2 s, each with
 * the alignment of the characters it covers, as the rendering progresses.
 *
 * - One stream, one format: every chunk is rendered on its own (through the render cache of
 *   {@link SimulatedAudioUpstream}, small chunks inline, larger ones on its workers), and the chunks'
 *   encodings follow each other into one valid stream: raw PCM and mu-law trivially, MP3 because lamejs
 *   writes bare frames (no ID3, Xing or Info tag, bit reservoir disabled: each frame decodes on its own).
 * - PCM and mu-law chunks carry their text in a watermark (watermark.ts) so that the simulated realtime
 *   transcription (realtime-transcription.ts) hears them back as that text (D43).
 * - Timing, scaled by `latencyScale` ({@link SIM_REALTIME_SPEECH_TIMING}); `X-Svc-Simulate`: `fail` makes
 *   every chunk fail before any audio (non-retryable), `slow` and `hang` add at least 1 s before the first
 *   piece of each chunk (D15).
 */
import { hash } from "node:crypto";
import type { CharAlignment, SpeechPiece, SpeechStream, SpeechStreamRequest } from "../realtime.ts";
import { type SimulateMode, UpstreamError } from "../types.ts";
import { mp3FramesFrom } from "../mp3-frames.ts";
import { abortError, sleep } from "./delay.ts";
import { audioFormatInfo, type AudioFormatInfo } from "./encode.ts";
import type { SpeechRenderJob } from "./speech/render.ts";
import { speechCharStarts } from "./speech/synthesize.ts";

/** Simulated delays of realtime speech in seconds, before multiplication by `latencyScale` (unless stated otherwise). */
export const SIM_REALTIME_SPEECH_TIMING = {
  /** Opening a stream (the socket's handshake). */
  openSec: 0.05,
  /** From a chunk's text to its first piece of audio. */
  firstPieceSec: 0.2,
  /** Between two pieces of a chunk (a piece is about 0.2 s of audio: 4 times faster than real time). */
  pieceGapSec: 0.05,
  /** Before a simulated failure. */
  failSec: 0.3,
  /** Extra delay before each chunk's first piece for `slow`/`hang`: `slowMinSec + slowScaledSec x latencyScale` (not scaled: D15). */
  slowMinSec: 1,
  slowScaledSec: 2,
} as const;

/**
 * What LAME's MP3 adds before the audio when decoded: its 576-sample encoder delay plus the usual
 * 529-sample decoder delay. Pieces' alignments are on the synthesizer's timeline, which starts this much
 * before the decoded MP3's.
 */
const MP3_DELAY_SAMPLES = 576 + 529;

/**
 * The encoded chunks of one rendering as they arrive (a cached clip has them all at once). Structurally the
 * chunk source of speech.ts.
 */
export interface RenderedChunkSource {
  /** Chunks ready so far. */
  available(): number;
  /** True once every chunk is ready. */
  done(): boolean;
  /** The rendering's failure, if it failed. */
  error(): Error | null;
  /** The bytes of chunks `from` (inclusive) to `to` (exclusive). */
  range(from: number, to: number): Uint8Array;
  /** Resolves at the next progress; rejects with the abort reason of `signal`. */
  changed(signal?: AbortSignal): Promise<void>;
}

/** A rendering obtained from the render cache: read it, then give it back once with `release`. */
export interface RealtimeRendering {
  source: RenderedChunkSource;
  release(): void;
}

/** What the realtime speech needs of the simulated speech upstream: its latency scale and its render cache. */
export interface SpeechStreamRenderer {
  /** Multiplier of the simulated delays (`SIM_LATENCY_SCALE`), 0 or more. */
  readonly latencyScale: number;
  /**
   * Starts or joins the rendering of `job` under the cache key `key` (a small job is rendered before this
   * returns).
   * @throws UpstreamError (not retryable) when the upstream is closed.
   */
  render(key: string, job: SpeechRenderJob): RealtimeRendering;
}

/**
 * The render job of one realtime chunk and its cache key: the HTTP route's voice (voice id, model as the
 * variant, the four voice settings; `speed` is not simulated) with the watermark on. The key cannot meet
 * an HTTP speech key (different bytes).
 */
export function realtimeSpeechJob(req: SpeechStreamRequest, text: string): { key: string; job: SpeechRenderJob } {
  const s = req.voiceSettings;
  const settings = {
    stability: s.stability,
    similarity_boost: s.similarity_boost,
    style: s.style,
    use_speaker_boost: s.use_speaker_boost,
  };
  const job: SpeechRenderJob = { text, voiceId: req.voiceId, variant: req.model, settings, format: req.format, watermark: true };
  const key = hash("sha256", JSON.stringify(["realtime-v1", req.model, req.voiceId, req.format, settings, text]), "base64url");
  return { key, job };
}

/** The characters of a chunk on the synthesizer's timeline: samples for assigning them to pieces, milliseconds for the alignment. */
interface CharTimeline {
  chars: string[];
  /** Start of each character, samples at the format's rate. */
  startSample: Float64Array;
  /** Start and length of each character in whole milliseconds; each ends where the next starts. */
  startMs: number[];
  durationMs: number[];
}

/**
 * The timeline of `text` spoken at `rate` Hz ({@link speechCharStarts}): character `i` spans
 * `[round(start_i), round(start_i+1))` ms, so the last one ends at the clip's length.
 */
function charTimeline(text: string, rate: number): CharTimeline {
  const chars = Array.from(text);
  const starts = speechCharStarts(text, rate);
  const ms = (sample: number) => Math.round((sample / rate) * 1000);
  const startMs: number[] = [];
  const durationMs: number[] = [];
  for (let i = 0; i < chars.length; i++) {
    startMs.push(ms(starts[i]));
    durationMs.push(ms(starts[i + 1]) - ms(starts[i]));
  }
  return { chars, startSample: starts, startMs, durationMs };
}

/** Samples (at the format's rate) that `piece` holds: whole MP3 frames, or raw samples. */
function pieceSamples(piece: Uint8Array, info: AudioFormatInfo): number {
  if (info.codec === "pcm") return piece.length >> 1;
  if (info.codec === "ulaw") return piece.length;
  let n = 0;
  for (const f of mp3FramesFrom(piece, 0)) n += f.samplesPerFrame;
  return n;
}

/**
 * One open realtime speech stream of the simulator (see the module comment and {@link SpeechStream}).
 * Chunks are spoken one at a time, each rendered independently (so an identical chunk of any stream with
 * the same voice, model, settings and format is a cache hit).
 */
export class SimulatedSpeechStream implements SpeechStream {
  readonly #renderer: SpeechStreamRenderer;
  readonly #req: SpeechStreamRequest;
  readonly #info: AudioFormatInfo;
  /** Aborted by {@link SimulatedSpeechStream.close}: ends the chunk being spoken. */
  readonly #closing = new AbortController();

  /** Use {@link openSimulatedSpeechStream}. */
  constructor(renderer: SpeechStreamRenderer, req: SpeechStreamRequest) {
    this.#renderer = renderer;
    this.#req = req;
    this.#info = audioFormatInfo(req.format);
  }

  /**
   * Speaks `text` (see {@link SpeechStream.synthesize}): nothing for an empty or whitespace-only text;
   * otherwise, after about 0.2 s x scale (plus at least 1 s for `slow`/`hang`), pieces of about 0.2 s of
   * audio 0.05 s x scale apart, each with the alignment of the characters whose start it holds (null for
   * a piece that holds none), times in ms from the start of the chunk's audio (for MP3: of the
   * synthesizer's timeline, which the decoded MP3 starts about 25 ms later). The chunk's pieces
   * concatenated are the chunk's audio.
   * @throws UpstreamError not retryable for `simulate: "fail"` (before any audio), once the stream or the
   *   upstream is closed, or when the rendering fails; the reason of `signal` when it aborts.
   */
  async *synthesize(text: string, signal?: AbortSignal): AsyncGenerator<SpeechPiece, void, undefined> {
    const closing = this.#closing.signal;
    const both = signal ? AbortSignal.any([signal, closing]) : closing;
    const scale = this.#renderer.latencyScale;
    const timing = SIM_REALTIME_SPEECH_TIMING;
    try {
      both.throwIfAborted();
      if (this.#req.simulate === "fail") {
        await sleep(timing.failSec * scale * 1000, both);
        throw new UpstreamError(`simulated upstream failure for model '${this.#req.model}'`, false);
      }
      if (text.trim() === "") return;
      const { key, job } = realtimeSpeechJob(this.#req, text);
      const rendering = this.#renderer.render(key, job);
      try {
        await sleep(timing.firstPieceSec * scale * 1000 + slowExtraMs(this.#req.simulate, scale), both);
        yield* this.#pieces(rendering.source, charTimeline(text, this.#info.sampleRate), both);
      } finally {
        rendering.release();
      }
    } catch (err) {
      if (closing.aborted && !(signal?.aborted ?? false)) throw closedError();
      throw err;
    }
  }

  /** The pieces of one rendering with their alignments, paced by the piece gap. */
  async *#pieces(src: RenderedChunkSource, timeline: CharTimeline, signal: AbortSignal): AsyncGenerator<SpeechPiece, void, undefined> {
    const gapMs = SIM_REALTIME_SPEECH_TIMING.pieceGapSec * this.#renderer.latencyScale * 1000;
    const delay = this.#info.codec === "mp3" ? MP3_DELAY_SAMPLES : 0;
    let next = 0; // next chunk of the rendering
    let decoded = 0; // samples of the pieces yielded so far (decoded MP3 included its delay)
    let nextChar = 0;
    for (;;) {
      const err = src.error();
      if (err) throw err;
      signal.throwIfAborted();
      if (next >= src.available()) {
        if (src.done()) break;
        await src.changed(signal);
        continue;
      }
      if (next > 0) await sleep(gapMs, signal);
      const audio = src.range(next, next + 1);
      next++;
      decoded += pieceSamples(audio, this.#info);
      // The last piece takes every character left (the MP3's padding makes its end later anyway).
      const last = src.done() && next >= src.available();
      const end = decoded - delay;
      const from = nextChar;
      while (nextChar < timeline.chars.length && (last || timeline.startSample[nextChar] < end)) nextChar++;
      const alignment = from === nextChar ? null : alignmentOf(timeline, from, nextChar);
      yield { audio, alignment, normalizedAlignment: alignment };
    }
  }

  /** Closes the stream: a chunk being spoken ends with an {@link UpstreamError}, later ones fail at once. Never throws. */
  close(): Promise<void> {
    this.#closing.abort(closedError());
    return Promise.resolve();
  }
}

/** Characters `from` to `to` (exclusive) of `t` in the socket's field names. */
function alignmentOf(t: CharTimeline, from: number, to: number): CharAlignment {
  return {
    chars: t.chars.slice(from, to),
    charStartTimesMs: t.startMs.slice(from, to),
    charDurationsMs: t.durationMs.slice(from, to),
  };
}

function closedError(): UpstreamError {
  return new UpstreamError("the simulated realtime speech stream is closed", false);
}

/** The extra delay of `slow`/`hang` (D15: at least 1 s even at scale 0), ms. */
function slowExtraMs(simulate: SimulateMode | null, scale: number): number {
  if (simulate !== "slow" && simulate !== "hang") return 0;
  return (SIM_REALTIME_SPEECH_TIMING.slowMinSec + SIM_REALTIME_SPEECH_TIMING.slowScaledSec * scale) * 1000;
}

/**
 * Opens a simulated realtime speech stream (D42) rendering through `renderer`, after about 0.05 s x scale.
 * Any voice id and model are accepted (the simulator has every voice); `simulate: "fail"` opens and fails
 * at the first chunk, as a provider failing mid-socket would.
 * @throws the reason of `signal` when it aborts; {@link UpstreamError} (not retryable) for a format the
 *   simulator cannot encode.
 */
export async function openSimulatedSpeechStream(renderer: SpeechStreamRenderer, req: SpeechStreamRequest, signal?: AbortSignal): Promise<SimulatedSpeechStream> {
  if (signal?.aborted) throw abortError(signal);
  try {
    audioFormatInfo(req.format);
  } catch {
    throw new UpstreamError(`the simulator cannot stream the audio format '${String(req.format)}'`, false);
  }
  await sleep(SIM_REALTIME_SPEECH_TIMING.openSec * renderer.latencyScale * 1000, signal);
  return new SimulatedSpeechStream(renderer, req);
}
