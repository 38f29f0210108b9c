/**
 * The adapter interface between the gateway and its upstream providers (docs/architecture.md "upstreams/").
 *
 * Adapters know nothing about money, accounts or HTTP requests of the caller: they take a validated
 * request and return media (bytes, or a stream of bytes) or throw {@link UpstreamError}.
 */
import type { Dispatcher } from "undici";

/** Audio output formats of the speech, music and sfx endpoints (spec "POST /v1/audio/speech"). */
export type AudioFormat =
  | "mp3_44100_128"
  | "mp3_44100_192"
  | "mp3_22050_32"
  | "pcm_16000"
  | "pcm_22050"
  | "pcm_24000"
  | "pcm_44100"
  | "ulaw_8000";

export const AUDIO_FORMATS: readonly AudioFormat[] = [
  "mp3_44100_128",
  "mp3_44100_192",
  "mp3_22050_32",
  "pcm_16000",
  "pcm_22050",
  "pcm_24000",
  "pcm_44100",
  "ulaw_8000",
];

/** `Content-Type` of each format (D20). */
export function contentTypeOf(format: AudioFormat): string {
  if (format.startsWith("mp3_")) return "audio/mpeg";
  if (format.startsWith("pcm_")) return "audio/pcm";
  return "audio/basic";
}

/** Value of the `X-Svc-Simulate` request header (D10); only the simulator honours it. */
export type SimulateMode = "fail" | "hang" | "slow";

/** Voice settings of a speech request; each number in 0..1. */
export interface VoiceSettings {
  stability?: number;
  similarity_boost?: number;
  style?: number;
  use_speaker_boost?: boolean;
}

/** A validated speech request as the adapter sees it. `text` is NFC-normalized. */
export interface SpeechRequest {
  model: string;
  text: string;
  voiceId: string;
  format: AudioFormat;
  voiceSettings: VoiceSettings;
  /** Deliver progressively (beta models). */
  stream: boolean;
  simulate: SimulateMode | null;
}

/** A validated music request as the adapter sees it (spec "POST /v1/audio/music"). */
export interface MusicRequest {
  model: string;
  /** NFC-normalized prompt; may be empty for beta models that only have lyrics. */
  prompt: string;
  /** NFC-normalized lyrics, or null (alpha-music ignores lyrics: the caller passes null). */
  lyrics: string | null;
  /** Requested length in ms (alpha-music honours it; beta models derive their length from the lyrics). */
  lengthMs: number;
  /** The beta model decides the length from lyrics, at most about 5 minutes. */
  lengthFromLyrics: boolean;
  format: AudioFormat;
  simulate: SimulateMode | null;
}

/** A validated sound-effect request (spec "POST /v1/audio/sfx"). */
export interface SfxRequest {
  model: string;
  prompt: string;
  /** Requested duration in seconds, or null (the model picks). */
  durationSec: number | null;
  /** 0 (creative) to 1 (strict). */
  promptInfluence: number;
  format: AudioFormat;
  simulate: SimulateMode | null;
}

/** Complete audio bytes with their delivered length (`durationSec`, seconds). */
export type AudioBytes = Extract<AudioResult, { kind: "bytes" }>;

/** Music generation (a real source of the alpha or beta family, or the simulator). */
export interface MusicSource {
  /**
   * Generates `req` in exactly `req.format` (transcoded or trimmed as D26 says when the source cannot).
   * Throws {@link UpstreamError} on upstream failure; honours `signal`.
   */
  music(req: MusicRequest, signal?: AbortSignal): Promise<AudioBytes>;
}

/** Sound-effect generation (alpha family). */
export interface SfxSource {
  /** Throws {@link UpstreamError} on upstream failure; honours `signal`. */
  sfx(req: SfxRequest, signal?: AbortSignal): Promise<AudioBytes>;
}

/** Music and sound-effect generation by one upstream family. Results are complete bytes. */
export interface MusicAdapter extends MusicSource, SfxSource {}

/** A validated voice-design request (spec "POST /v1/audio/voice-design"). */
export interface VoiceDesignRequest {
  description: string;
  name: string | null;
  previewText: string | null;
  gender: "male" | "female" | null;
  ageGroup: "child" | "young" | "middle-aged" | "elderly" | null;
  simulate: SimulateMode | null;
}

/** A validated voice-clone request: the reference recording, already checked (format, duration). */
export interface VoiceCloneRequest {
  audio: Uint8Array;
  format: "mp3" | "wav" | "m4a";
  durationSec: number;
  name: string | null;
  simulate: SimulateMode | null;
}

/** Creates voices at an upstream (beta provider). Returns the upstream's id of the new voice. */
export interface VoiceCreationAdapter {
  /** Throws {@link UpstreamError} on upstream failure; honours `signal`. */
  designVoice(req: VoiceDesignRequest, signal?: AbortSignal): Promise<{ upstreamVoiceId: string }>;
  /** Throws {@link UpstreamError} on upstream failure; honours `signal`. */
  cloneVoice(req: VoiceCloneRequest, signal?: AbortSignal): Promise<{ upstreamVoiceId: string }>;
}

/** Audio produced by an upstream: either complete bytes or a stream of chunks. */
export type AudioResult =
  | { kind: "bytes"; contentType: string; body: Uint8Array; durationSec: number }
  | { kind: "stream"; contentType: string; chunks: AsyncIterable<Uint8Array> };

/** A record of the voice library (spec "Voice", library record fields). */
export type VoiceRecord =
  | {
      provider: "alpha";
      voice_id: string;
      name: string;
      category: string;
      labels: { gender: string; age: string; accent: string; use_case: string };
      preview_url: string;
      description: string;
    }
  | { provider: "beta"; voice_id: string; name: string; description: string[] };

/** Speech synthesis by one upstream family. */
export interface SpeechAdapter {
  /**
   * Synthesizes `req`. Throws {@link UpstreamError} when the upstream fails; honours `signal`
   * (aborts the upstream call when the caller goes away).
   */
  speech(req: SpeechRequest, signal?: AbortSignal): Promise<AudioResult>;
}

/**
 * The voice catalog of one real source: every voice it offers, records in the spec's shape with the
 * provider of the source's family (`alpha` for elevenlabs, `beta` for minimax). The source pages through
 * the upstream's listing itself; the gateway caches the result 5 minutes (audio/voice-library.ts).
 */
export interface VoiceListSource {
  /** Throws {@link UpstreamError} when the catalog is unavailable; honours `signal`. */
  listVoices(signal?: AbortSignal): Promise<VoiceRecord[]>;
}

/** What every real source object has: its `UPSTREAMS` name and a way to release its connections. */
export interface NamedSource {
  /** The entry's `name` (D25). */
  readonly name: string;
  /** Releases the source's connection pool. */
  close(): Promise<void>;
}

/**
 * The settings every real-source factory takes from its `UPSTREAMS` entry (D25): the same fields for
 * audio and text sources as for job sources.
 */
export type UpstreamSourceConfig = VisualJobSourceConfig;

/** The voice library of one audio provider. */
export interface VoiceLibraryAdapter {
  /** All voices of `provider`. Throws {@link UpstreamError} when the catalog is unavailable. */
  listVoices(provider: "alpha" | "beta", simulate?: SimulateMode | null): Promise<VoiceRecord[]>;
  /**
   * Fast membership test used by the speech endpoint to tell alpha voices from beta ones (D20); null when
   * it cannot tell without the catalog (a real alpha source: the cached list decides).
   */
  isAlphaVoice(voiceId: string): boolean | null;
}

/**
 * An upstream failure. `retryable` hints whether another attempt may succeed. `contentRejected` says the
 * source refused the content itself (a moderation refusal: the job ends `failed` with `content_rejected`,
 * D27). `unsupported` says the source does not serve this request at all (a model or variant it lacks,
 * more reference images than it takes), found before anything was sent: the job runner skips the source
 * for the family's next one, and the registry counts it neither in the circuit nor in the statistics.
 * `voiceUnavailable` says the source no longer has the voice a speech call named (ElevenLabs
 * `voice_not_found`, MiniMax 2042 / 20132): the caller gets 410 `voice_unavailable` and pays nothing (D27).
 * `modelNotFound` says the source answered that the upstream model or endpoint it was asked for does not
 * exist (OpenAI 404 `model_not_found`, fal 404 for an unknown endpoint id, ElevenLabs 400 `model_not_found`,
 * MiniMax 2013 naming the model; D35): never retried on that source, but the family's next source is tried
 * (like a source that cannot serve the request); `upstreamModel` then names the id that was refused.
 * Any of these flags makes the error not retryable, whatever `retryable` was given.
 */
export class UpstreamError extends Error {
  readonly retryable: boolean;
  readonly contentRejected: boolean;
  readonly unsupported: boolean;
  readonly voiceUnavailable: boolean;
  readonly modelNotFound: boolean;
  /** With `modelNotFound`: the upstream id the source refused (e.g. `gpt-image-1`); else null. */
  readonly upstreamModel: string | null;
  constructor(
    message: string,
    retryable = true,
    options: {
      contentRejected?: boolean;
      unsupported?: boolean;
      voiceUnavailable?: boolean;
      modelNotFound?: boolean;
      upstreamModel?: string | null;
    } = {},
  ) {
    super(message);
    this.name = "UpstreamError";
    this.contentRejected = options.contentRejected ?? false;
    this.unsupported = options.unsupported ?? false;
    this.voiceUnavailable = options.voiceUnavailable ?? false;
    this.modelNotFound = options.modelNotFound ?? false;
    this.upstreamModel = options.upstreamModel ?? null;
    this.retryable =
      retryable && !this.contentRejected && !this.unsupported && !this.voiceUnavailable && !this.modelNotFound;
  }
}

/** The six aspect ratios image requests map to (spec "POST /v1/images/generations"). */
export type AspectRatio = "1:1" | "16:9" | "9:16" | "4:3" | "3:4" | "21:9";

/** A validated image job as the adapter sees it. Sizes in pixels. */
export interface ImageRequest {
  model: string;
  prompt: string;
  /** Images to make (1 for single-image models). */
  n: number;
  aspect: AspectRatio;
  width: number;
  height: number;
  quality: "low" | "medium" | "high" | null;
  output: "png" | "svg";
  /** Reference images (https URLs), already checked. */
  imageUrls: string[];
  /** Pass-through parameters, forwarded unchanged (D3). */
  parameters: Record<string, unknown>;
  simulate: SimulateMode | null;
}

/** A validated video job as the adapter sees it. */
export interface VideoRequest {
  model: string;
  prompt: string;
  /** Whole seconds. */
  durationSec: number;
  /** First frame (image-to-video), or null. */
  imageUrl: string | null;
  parameters: Record<string, unknown>;
  simulate: SimulateMode | null;
}

/** One output of an image or video job: bytes, or an upstream URL the gateway downloads and rehosts. */
export type MediaOutput =
  | { kind: "bytes"; contentType: string; body: Uint8Array; width?: number; height?: number; durationSec?: number }
  | { kind: "url"; url: string; contentType?: string };

/**
 * Image and video generation by one upstream family. `onProgress` is called while the upstream is
 * working (the runner turns it into heartbeats; an adapter that stops calling it is presumed dead), with
 * how far the work is (0..1) when the adapter knows (the job's `progress`, D30).
 */
export interface VisualAdapter {
  /** Throws {@link UpstreamError} on upstream failure; honours `signal`. */
  generateImages(req: ImageRequest, signal?: AbortSignal, onProgress?: VisualProgress): Promise<MediaOutput[]>;
  /** Throws {@link UpstreamError} on upstream failure; honours `signal`. */
  generateVideo(req: VideoRequest, signal?: AbortSignal, onProgress?: VisualProgress): Promise<MediaOutput>;
}

/** A visual adapter's sign of life, with the fraction of the work done (0..1) when it knows it. */
export type VisualProgress = (fraction?: number) => void;

/** A transcription or audio-understanding request as the adapter sees it. */
export interface AudioTextRequest {
  model: string;
  audio: Uint8Array;
  /** Duration read from the audio, seconds. */
  durationSec: number;
  /** The question (audio understanding), or null (transcription). */
  prompt: string | null;
  simulate: SimulateMode | null;
}

/** Speech to text and audio question answering by one upstream. */
export interface AudioTextAdapter {
  /** Throws {@link UpstreamError} on failure; honours `signal`. */
  transcribe(req: AudioTextRequest, signal?: AbortSignal): Promise<{ text: string }>;
  /** Throws {@link UpstreamError} on failure; honours `signal`. */
  understand(req: AudioTextRequest, signal?: AbortSignal): Promise<{ text: string }>;
}

/**
 * What a source returns the moment it accepts a job (D28): enough for any runner to resume the job by
 * polling, never by submitting again. Stored on the job row.
 * - `source`: the source's name (`UPSTREAMS` entry `name`, D25);
 * - `requestId`: the upstream's id of the request (fal `request_id`, BFL `id`, ...);
 * - `urls`: the follow-up URLs the source returned (fal `status_url`/`response_url`/`cancel_url`, BFL
 *   `polling_url`), keyed by purpose; an adapter checks their host before sending its key (D25).
 */
export interface UpstreamHandle {
  source: string;
  requestId: string;
  urls: Record<string, string>;
  /**
   * Facts the source reported when it accepted the job and does not repeat at the end, kept for the
   * final state: BFL's `cost` (as `upstream_cost_usd`, USD) and `output_mp` (as `megapixels`). Absent
   * when the source reported none.
   */
  facts?: Record<string, number>;
}

/**
 * The state of an accepted job at its source (D27, D28, issue "Real upstreams, part 1").
 * - `queued` / `running`: still working; `position` (0-based, when the source says) and `progress`
 *   (0..1, when it says);
 * - `succeeded`: the outputs (bytes, or URLs the gateway downloads and rehosts), with what the source
 *   reports of the delivery: `durationSec` (video, D26), `megapixels` (imgB-2-pro final charge, D26),
 *   `upstreamCostUsd` (what the source says it charged, in USD as it reports it, else null);
 * - `failed`: `retryable` when the source's own infrastructure failed (the job may move to the next
 *   source under the same hold, D27), not when the input was refused; `contentRejected` for a
 *   moderation refusal (the job ends `failed` with `content_rejected`).
 */
export type UpstreamJobState =
  | { state: "queued"; position: number | null }
  | { state: "running"; progress: number | null }
  | {
      state: "succeeded";
      outputs: MediaOutput[];
      durationSec: number | null;
      megapixels: number | null;
      upstreamCostUsd: number | null;
    }
  | { state: "failed"; retryable: boolean; contentRejected: boolean; message: string };

/**
 * A source of image and video jobs on a real queue protocol (fal, BFL) or a synchronous one wrapped as
 * a job (OpenAI images: `submit` does the work, `poll` returns the stored result). Every method throws
 * {@link UpstreamError} on a transport or HTTP failure (`retryable` for connection errors, timeouts, 429
 * and 5xx; not for a 4xx refusal of the input) and honours `signal`. Adapters never see money.
 */
export interface VisualJobSource {
  /** Submits an image job; resolves once the source has accepted it. */
  submitImage(req: ImageRequest, signal?: AbortSignal): Promise<UpstreamHandle>;
  /** Submits a video job; resolves once the source has accepted it. */
  submitVideo(req: VideoRequest, signal?: AbortSignal): Promise<UpstreamHandle>;
  /** Reads the job's state at the source (one HTTP round trip, or a few for the result). */
  poll(handle: UpstreamHandle, signal?: AbortSignal): Promise<UpstreamJobState>;
  /** Asks the source to cancel; best effort (a job already finished is not an error). */
  cancel(handle: UpstreamHandle, signal?: AbortSignal): Promise<void>;
}

/**
 * What every job-source factory (`createFalSource`, `createBflSource`, `createOpenAIImagesSource`) takes
 * from its `UPSTREAMS` entry (D25). A protocol's factory documents its defaults and may add fields.
 */
export interface VisualJobSourceConfig {
  /** The entry's `name`: stored in every handle and used in messages. */
  name: string;
  /** The entry's `base_url`; default: the protocol's public API. */
  baseUrl?: string;
  /** The entry's key, sent in the protocol's header to the hosts D25 allows only; never put into a message. */
  apiKey: string;
  /** Total time of one HTTP call, ms (`timeout_s`; default: the protocol's). */
  timeoutMs?: number;
  /**
   * `trusted_hosts`: further `host[:port]`s whose output files are downloaded directly and which, for a
   * protocol with follow-up URLs, may receive the key.
   */
  trustedHosts?: readonly string[];
  /** `models`: overrides of the default upstream ids (the protocol says which keys it reads). */
  models?: Readonly<Record<string, string>>;
  /** Longest connect phase, ms (default min(timeoutMs, 10 000)). */
  connectTimeoutMs?: number;
  /** An undici dispatcher instead of the source's own keep-alive pool (tests, a shared pool); never closed by the source. */
  dispatcher?: Dispatcher;
}

/**
 * A {@link VisualJobSource} built from one `UPSTREAMS` entry (D25) by its protocol's factory
 * (`createFalSource`, `createBflSource`, `createOpenAIImagesSource`): what the job runner needs beyond
 * the protocol calls.
 */
export interface VisualJobSourceAdapter extends VisualJobSource {
  /** The entry's `name`; every handle it returns carries it. */
  readonly name: string;
  /**
   * True when an output URL is on the host of the source's `base_url` or on its `trusted_hosts` (D25): the
   * runner downloads it as it is; any other URL goes through the SSRF-safe fetch.
   */
  isDirectDownloadHost(url: string): boolean;
  /** Releases the source's connection pool (and anything it keeps in memory). */
  close(): Promise<void>;
}
