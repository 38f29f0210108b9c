/**
 * Types of the model catalog: the single record per model that validation, quoting, holds,
 * `/v1/pricing`, audio pools and adapter selection all read (docs/architecture.md, "one catalog drives everything").
 *
 * Amounts are integer micro-USD (`Micros`, D7). Markups are in basis points (10_000 = x1.00,
 * 13_500 = x1.35) so that `provider cost x markup` stays exact integer arithmetic.
 */
import type { Micros } from "../money.ts";

export type Modality = "audio" | "image" | "video" | "text";

/** The five synchronous audio upstream pools of the tier matrix (spec Limits, D12). */
export type AudioPool = "host_1" | "host_2" | "alpha" | "beta" | "host_3";
export const AUDIO_POOLS: readonly AudioPool[] = ["host_1", "host_2", "alpha", "beta", "host_3"];

/** The pricing modes of `/v1/pricing` media rows (spec "GET /v1/pricing"). */
export type PricingMode =
  | "per-image"
  | "per-second"
  | "per-minute"
  | "per-quality"
  | "per-mp"
  | "per-char"
  | "per-song"
  | "per-call";

/**
 * How a model is priced. The charged amount is authoritative; `markupBp` only explains it in the
 * catalog (D18: `provider_cost x markup` equals the charged price).
 */
export type Pricing =
  /** Speech: charged micro-USD per 1000 characters (code points after NFC, D7). */
  | { mode: "per-char"; microsPerKchar: Micros; markupBp: number }
  /** Video (and alpha-music): charged micro-USD per second of requested length. */
  | {
      mode: "per-second";
      microsPerSecond: Micros;
      minDurationSec: number;
      maxDurationSec: number;
      /** Only these durations are accepted, or null for any whole/fractional value in range. */
      allowedDurations: number[] | null;
      defaultDurationSec: number;
    }
  /** Transcription and audio understanding: per started minute, 1-minute minimum. */
  | { mode: "per-minute"; microsPerMinute: Micros; markupBp: number }
  /** Fixed price per image; `n` images cost `n` times this. */
  | { mode: "per-image"; microsPerImage: Micros; markupBp: number }
  /** Price per image by quality tier (D14). */
  | {
      mode: "per-quality";
      tiers: { low: Micros; medium: Micros; high: Micros };
      defaultQuality: "low" | "medium" | "high";
    }
  /**
   * imgB-2-pro: `(base + extra x (mp - 1)) x markup`, megapixels rounded half-up to a whole number
   * (at least 1), the result rounded half-up to `roundStepMicros` (D7, D19).
   */
  | {
      mode: "per-mp";
      baseMicros: Micros;
      extraPerMpMicros: Micros;
      markupBp: number;
      roundStepMicros: Micros;
    }
  /** Flat price per song, whatever length the model picks. */
  | { mode: "per-song"; microsPerSong: Micros }
  /** Flat price per call (sfx, voice design, voice clone, vidC clips). */
  | { mode: "per-call"; microsPerCall: Micros };

export type Capability =
  | "speech"
  | "music"
  | "sfx"
  | "voice_design"
  | "voice_clone"
  | "transcription"
  | "audio_understanding"
  | "image"
  | "video";

interface ModelBase {
  /** Model id, also the `/v1/pricing` row id (D18). */
  id: string;
  /** Human-readable name for the catalog. */
  name: string;
  modality: Modality;
  capability: Capability;
  /** Upstream family that serves it (`alpha`, `beta`, `vidA`, `imgB`, ...); picks the adapter. */
  family: string;
  pricing: Pricing;
  /** Marked legacy in the spec (Versioning 3); still served. */
  legacy: boolean;
  /** Disabled models are omitted from model lists and refused. */
  enabled: boolean;
}

/** Text to speech (spec "POST /v1/audio/speech"). */
export interface SpeechModel extends ModelBase {
  capability: "speech";
  pricing: Extract<Pricing, { mode: "per-char" }>;
  /** Which voices the model accepts (D20): alpha voices with alpha-*, beta/owned voices with beta-*. */
  voiceProvider: "alpha" | "beta";
  audioPool: AudioPool;
  /** Maximum input length in code points after NFC. */
  maxInputChars: number;
  /** `stream: true` is honoured (beta models only). */
  supportsStreaming: boolean;
  /**
   * Served on the realtime speech socket (D42; `GET /v1/models` shows it as `realtime`). False for
   * `alpha-v3`, as ElevenLabs has no socket for `eleven_v3`.
   */
  supportsRealtime: boolean;
}

/** Music (spec "POST /v1/audio/music"); limits count grapheme clusters after NFC (D7). */
export interface MusicModel extends ModelBase {
  capability: "music";
  audioPool: AudioPool;
  promptMaxGraphemes: number;
  promptRequired: boolean;
  /** null: the model ignores lyrics. */
  lyricsMaxGraphemes: number | null;
  /** The model honours `music_length_ms` (alpha) rather than deriving length from lyrics (beta). */
  honoursLength: boolean;
  minLengthMs: number;
  maxLengthMs: number;
  defaultLengthMs: number;
}

/** Sound effects (spec "POST /v1/audio/sfx"). */
export interface SfxModel extends ModelBase {
  capability: "sfx";
  audioPool: AudioPool;
  promptMaxChars: number;
  minDurationSec: number;
  maxDurationSec: number;
  defaultPromptInfluence: number;
}

/** Voice design and cloning (flat per call). */
export interface VoiceCreationModel extends ModelBase {
  capability: "voice_design" | "voice_clone";
  audioPool: AudioPool;
}

/** Transcription and audio understanding (per started minute). */
export interface AudioTextModel extends ModelBase {
  capability: "transcription" | "audio_understanding";
  audioPool: AudioPool;
  /** Aliases resolving to this model (`transcribe`, `audio-understand`). */
  aliases: string[];
}

/** Asynchronous image generation (spec "POST /v1/images/generations"). */
export interface ImageModel extends ModelBase {
  capability: "image";
  promptMaxChars: number;
  maxN: number;
  /** The model always makes exactly one image (`n` ignored). */
  singleImage: boolean;
  /** `image_url` or `image_urls` is required (imgB-edit-pro). */
  imageRequired: boolean;
  /** `image_url` is used (others ignore it). */
  acceptsImageUrl: boolean;
  /** `image_urls` is used (imgB-2-pro), up to `maxImageUrls`. */
  acceptsImageUrls: boolean;
  maxImageUrls: number;
  /** Output file type. */
  output: "png" | "svg";
}

/** Asynchronous video generation (spec "POST /v1/videos/generations"). */
export interface VideoModel extends ModelBase {
  capability: "video";
  promptMaxChars: number;
  minDurationSec: number;
  maxDurationSec: number;
  defaultDurationSec: number;
  /** Only these durations are accepted (vidC: 6 or 10), or null. */
  allowedDurations: number[] | null;
  /** Requires `image_url` (vidC-02-512p, D2). */
  imageRequired: boolean;
  /** Also accepted at `POST /v1/genmedia/jobs` (vidD-*, D19). */
  genmediaAlias: boolean;
  /**
   * The short side of the model's largest output, px (720: at most 1280x720 or 720x1280, the long side
   * 16/9 of it): the largest size the simulator renders for it.
   */
  maxShortSidePx: number;
}

export type ModelRecord =
  | SpeechModel
  | MusicModel
  | SfxModel
  | VoiceCreationModel
  | AudioTextModel
  | ImageModel
  | VideoModel;

/**
 * The record type of the models of `C` (a {@link Capability}, or a union of them): `ModelOf<"speech">` is
 * {@link SpeechModel}, `ModelOf<"voice_design">` is {@link VoiceCreationModel}.
 */
export type ModelOf<C extends Capability> = ModelRecord extends infer M
  ? M extends ModelRecord
    ? C extends M["capability"]
      ? M
      : never
    : never
  : never;

/** One row of the tier matrix (spec "Tier matrix fields", D12). Amounts in USD for display. */
export interface TierRow {
  tier: number;
  name: string;
  /** Minimum cumulative deposit, micro-USD. */
  minDepositMicros: Micros;
  rpm: number;
  perModelRpm: number;
  tpm: number;
  maxSingleRequest: number;
  imageConcurrent: number;
  imageQueueDepthCap: number;
  videoConcurrent: number;
  videoQueueDepthCap: number;
  audioConcurrent: number;
  audioConcurrentPerProvider: Record<AudioPool, number>;
  /** Tier 4 only: image and video share one pool. */
  combinedMediaConcurrent: number | null;
  combinedQueueDepthCap: number | null;
}

/**
 * What the pricing catalog needs to know about a token-priced text model (spec "GET /v1/pricing", text
 * row). The text side owns its model records; any record with these fields can be passed to the catalog
 * builders. Amounts are micro-USD per one million tokens.
 */
export interface TextModelPrice {
  /** Model id, also the text row id. */
  id: string;
  /** Human-readable name. */
  name: string;
  /** Charged micro-USD per 1M input tokens. */
  inputMicrosPer1M: Micros;
  /** Charged micro-USD per 1M output tokens. */
  outputMicrosPer1M: Micros;
  /**
   * Charged micro-USD per 1M cached input tokens. When omitted the catalog shows 10% of the input price
   * (spec "Billing rules" 4), rounded half-up to the micro-USD.
   */
  cachedInputMicrosPer1M?: Micros;
  /** Disabled models are left out of the catalog (spec Versioning 6); default true. */
  enabled?: boolean;
}
