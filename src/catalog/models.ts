/**
 * The model catalog: one {@link ModelRecord} per model the gateway serves (docs/architecture.md, "one catalog drives
 * everything"). Validation, quotes, holds, `/v1/pricing`, audio pools and adapter selection all read these
 * records, so every price and limit of the spec is written exactly once, here.
 *
 * Prices are written as decimal USD text and converted exactly to integer micro-USD at load time (D7).
 * Audio rows carry markup x1.00 (10_000 bp) so that `provider cost x markup` is the charged price; image
 * rows carry x1.35 (13_500 bp, spec "POST /v1/images/generations"; D18).
 */
import { type Micros, usdToMicros } from "../money.ts";
import { deepFreeze } from "./freeze.ts";
import { checkNotRetired, setShutdownDates } from "./lifecycle.ts";
import { TEXT_MODELS } from "./text-models.ts";
import type {
  AudioPool,
  AudioTextModel,
  Capability,
  ImageModel,
  ModelOf,
  ModelRecord,
  MusicModel,
  SfxModel,
  SpeechModel,
  VideoModel,
  VoiceCreationModel,
} from "./types.ts";

/** Default speech model when a request names none (spec "POST /v1/audio/speech"). */
export const DEFAULT_SPEECH_MODEL = "alpha-multilingual-v2";
/** Default music model (spec "POST /v1/audio/music"). */
export const DEFAULT_MUSIC_MODEL = "alpha-music";
/** Default and only sound-effect model (spec "POST /v1/audio/sfx"). */
export const DEFAULT_SFX_MODEL = "alpha-sfx";
/** Default and only voice-design model (spec "POST /v1/audio/voice-design"). */
export const DEFAULT_VOICE_DESIGN_MODEL = "beta-voice-design";
/** Default and only voice-clone model (spec "POST /v1/audio/voice-clone"). */
export const DEFAULT_VOICE_CLONE_MODEL = "beta-voice-clone";
/** Default transcription model: the alias `transcribe` (spec "Other endpoints", Versioning 4). */
export const DEFAULT_TRANSCRIPTION_MODEL = "transcribe";
/** Default audio-understanding model: the alias `audio-understand` (spec "Other endpoints"). */
export const DEFAULT_AUDIO_UNDERSTANDING_MODEL = "audio-understand";

/** Markup x1.00 in basis points: audio rows charge exactly the provider cost shown (D18). */
const AUDIO_MARKUP_BP = 10_000;
/** Markup x1.35 in basis points: every image provider price carries it (spec, image prices). */
const IMAGE_MARKUP_BP = 13_500;

/** Exact micro-USD of a decimal USD literal written in this file; a typo fails at module load. */
function usd(text: string): Micros {
  const micros = usdToMicros(text);
  if (micros === null || micros < 0) throw new Error(`catalog: bad USD literal ${text}`);
  return micros;
}

const base = { legacy: false, enabled: true } as const;

// ---------------------------------------------------------------------------------------------- speech

/** A speech row: per 1000 characters (code points after NFC, D7), max 5000 characters (spec Limits). */
function speech(id: string, name: string, usdPerKchar: string, provider: "alpha" | "beta"): SpeechModel {
  return {
    ...base,
    id,
    name,
    modality: "audio",
    capability: "speech",
    family: provider,
    pricing: { mode: "per-char", microsPerKchar: usd(usdPerKchar), markupBp: AUDIO_MARKUP_BP },
    voiceProvider: provider,
    // D12: alpha-* models draw from the `alpha` pool, beta-* from `beta`.
    audioPool: provider,
    maxInputChars: 5000,
    // `stream: true` applies only to beta speech models (spec "POST /v1/audio/speech").
    supportsStreaming: provider === "beta",
    // D42: every speech model has the socket but alpha-v3 (ElevenLabs serves eleven_v3 over HTTP only).
    supportsRealtime: id !== "alpha-v3",
  };
}

const SPEECH: SpeechModel[] = [
  speech("alpha-v3", "Alpha v3", "0.405", "alpha"),
  speech("alpha-multilingual-v2", "Alpha Multilingual v2", "0.405", "alpha"),
  // D7: flash and turbo charge 0.20 per 1000 characters (the endpoint section), and the catalog shows
  // that same charged amount rather than the 0.2025 of the spec's pricing table.
  speech("alpha-flash-v2-5", "Alpha Flash v2.5", "0.20", "alpha"),
  speech("alpha-turbo-v2-5", "Alpha Turbo v2.5", "0.20", "alpha"),
  speech("beta-speech-hd", "Beta Speech HD", "0.140", "beta"),
  speech("beta-speech-turbo", "Beta Speech Turbo", "0.090", "beta"),
];

// ----------------------------------------------------------------------------------------------- music

/** Length range of `music_length_ms` for every music model (spec "POST /v1/audio/music"). */
const MUSIC_LENGTH = { minLengthMs: 1000, maxLengthMs: 300_000, defaultLengthMs: 30_000 } as const;

const MUSIC: MusicModel[] = [
  {
    ...base,
    id: "alpha-music",
    name: "Alpha Music",
    modality: "audio",
    capability: "music",
    family: "alpha",
    // 0.135 USD per second of requested length; the catalog's per-second detail shows the length range
    // in seconds (1 to 300, default 30) matching the millisecond limits below.
    pricing: {
      mode: "per-second",
      microsPerSecond: usd("0.135"),
      minDurationSec: 1,
      maxDurationSec: 300,
      allowedDurations: null,
      defaultDurationSec: 30,
    },
    audioPool: "alpha",
    promptMaxGraphemes: 2000,
    promptRequired: true,
    lyricsMaxGraphemes: null,
    honoursLength: true,
    ...MUSIC_LENGTH,
  },
  {
    ...base,
    id: "beta-music",
    name: "Beta Music",
    modality: "audio",
    capability: "music",
    family: "beta",
    pricing: { mode: "per-song", microsPerSong: usd("0.045") },
    audioPool: "beta",
    promptMaxGraphemes: 200,
    promptRequired: false,
    lyricsMaxGraphemes: 600,
    honoursLength: false,
    ...MUSIC_LENGTH,
  },
  {
    ...base,
    id: "beta-music-pro",
    name: "Beta Music Pro",
    modality: "audio",
    capability: "music",
    family: "beta",
    pricing: { mode: "per-song", microsPerSong: usd("0.21") },
    audioPool: "beta",
    promptMaxGraphemes: 200,
    promptRequired: false,
    lyricsMaxGraphemes: 600,
    honoursLength: false,
    ...MUSIC_LENGTH,
  },
];

// ------------------------------------------------------------------------------------------------- sfx

const SFX: SfxModel[] = [
  {
    ...base,
    id: "alpha-sfx",
    name: "Alpha Sound Effects",
    modality: "audio",
    capability: "sfx",
    family: "alpha",
    // Flat per generation regardless of duration (spec "POST /v1/audio/sfx").
    pricing: { mode: "per-call", microsPerCall: usd("0.027") },
    audioPool: "alpha",
    promptMaxChars: 500,
    minDurationSec: 0.5,
    maxDurationSec: 22,
    defaultPromptInfluence: 0.3,
  },
];

// ------------------------------------------------------------------------------ voice design and clone

const VOICE_CREATION: VoiceCreationModel[] = [
  {
    ...base,
    id: "beta-voice-design",
    name: "Beta Voice Design",
    modality: "audio",
    capability: "voice_design",
    family: "beta",
    pricing: { mode: "per-call", microsPerCall: usd("4.20") },
    audioPool: "beta",
  },
  {
    ...base,
    id: "beta-voice-clone",
    name: "Beta Voice Clone",
    modality: "audio",
    capability: "voice_clone",
    // Cloned voices are beta voices (used with beta-speech-*), but cloning has its own upstream pool (D12).
    family: "beta",
    pricing: { mode: "per-call", microsPerCall: usd("2.10") },
    audioPool: "host_3",
  },
];

// ----------------------------------------------------------------- transcription, audio understanding

/** A per-started-minute audio-to-text row (spec "Other endpoints that exist"). */
function audioText(
  id: string,
  name: string,
  capability: AudioTextModel["capability"],
  family: string,
  pool: AudioPool,
  usdPerMinute: string,
  alias: string,
): AudioTextModel {
  return {
    ...base,
    id,
    name,
    modality: "audio",
    capability,
    family,
    pricing: { mode: "per-minute", microsPerMinute: usd(usdPerMinute), markupBp: AUDIO_MARKUP_BP },
    audioPool: pool,
    aliases: [alias],
  };
}

const AUDIO_TEXT: AudioTextModel[] = [
  audioText("host1-transcribe-1", "Transcribe 1", "transcription", "host1", "host_1", "0.0009", "transcribe"),
  audioText(
    "host2-audio-understand-1",
    "Audio Understand 1",
    "audio_understanding",
    "host2",
    "host_2",
    "0.0006",
    "audio-understand",
  ),
];

// ----------------------------------------------------------------------------------------------- video

/**
 * A video row priced per second; requests take 1 to 10 s, default 5 (spec "POST /v1/videos/generations").
 * `maxShortSidePx`: the short side of its largest output (720 for 720p).
 */
function videoPerSecond(id: string, name: string, family: string, usdPerSecond: string, maxShortSidePx: number): VideoModel {
  const durations = { minDurationSec: 1, maxDurationSec: 10, defaultDurationSec: 5 } as const;
  return {
    ...base,
    id,
    name,
    modality: "video",
    capability: "video",
    family,
    pricing: { mode: "per-second", microsPerSecond: usd(usdPerSecond), ...durations, allowedDurations: null },
    promptMaxChars: 4000,
    ...durations,
    allowedDurations: null,
    imageRequired: false,
    // D19: only vidD-* is also accepted at POST /v1/genmedia/jobs.
    genmediaAlias: family === "vidD",
    maxShortSidePx,
  };
}

/** A vidC clip: flat per clip, 6 or 10 s, default 6 (spec video prices; D2, D19); `maxShortSidePx` as for {@link videoPerSecond}. */
function videoClip(id: string, name: string, usdPerClip: string, imageRequired: boolean, maxShortSidePx: number): VideoModel {
  return {
    ...base,
    id,
    name,
    modality: "video",
    capability: "video",
    family: "vidC",
    pricing: { mode: "per-call", microsPerCall: usd(usdPerClip) },
    promptMaxChars: 4000,
    minDurationSec: 6,
    maxDurationSec: 10,
    defaultDurationSec: 6,
    allowedDurations: [6, 10],
    imageRequired,
    genmediaAlias: false,
    maxShortSidePx,
  };
}

// The largest output of each: the resolution in its name (vidC, vidD), Kling's 1080p (vidA), and the 720p
// the gateway asks of Seedance and prices (vidB; src/upstreams/fal/models.ts). The simulator's cap.
const VIDEO: VideoModel[] = [
  videoPerSecond("vidA-2.5-pro", "vidA 2.5 Pro", "vidA", "0.0945", 1080),
  videoPerSecond("vidA-3-pro", "vidA 3 Pro", "vidA", "0.1512", 1080),
  videoPerSecond("vidA-3-pro-audio", "vidA 3 Pro (native audio)", "vidA", "0.2268", 1080),
  videoPerSecond("vidB-2-pro", "vidB 2 Pro (bundled audio)", "vidB", "0.40959", 720),
  videoPerSecond("vidB-2-fast", "vidB 2 Fast (bundled audio)", "vidB", "0.326565", 720),
  // D2: vidC-02-512p is image-to-video only.
  videoClip("vidC-02-512p", "vidC 02 512p (image-to-video)", "0.140", true, 512),
  videoClip("vidC-02-768p", "vidC 02 768p", "0.420", false, 768),
  videoClip("vidC-02-1080p", "vidC 02 1080p", "0.780", false, 1080),
  videoPerSecond("vidD-3-fast", "vidD 3 Fast (720p, silent)", "vidD", "0.135", 720),
  videoPerSecond("vidD-3", "vidD 3 (1080p, audio)", "vidD", "0.540", 1080),
];

// ----------------------------------------------------------------------------------------------- image

/** Image request fields shared by every image model (spec "POST /v1/images/generations", Limits). */
const IMAGE_DEFAULTS = {
  promptMaxChars: 4000,
  maxN: 4,
  singleImage: false,
  imageRequired: false,
  acceptsImageUrl: false,
  acceptsImageUrls: false,
  // The spec's limit on `image_urls` is 10 for every request (too_many_references); only models with
  // `acceptsImageUrls` actually use the list.
  maxImageUrls: 10,
  output: "png",
} as const;

/** A per-image row; `usdPerImage` is the charged price (provider price x 1.35). */
function imagePerImage(
  id: string,
  name: string,
  family: string,
  usdPerImage: string,
  extra: Partial<Pick<ImageModel, "legacy" | "imageRequired" | "acceptsImageUrl" | "output">> = {},
): ImageModel {
  return {
    ...base,
    id,
    name,
    modality: "image",
    capability: "image",
    family,
    pricing: { mode: "per-image", microsPerImage: usd(usdPerImage), markupBp: IMAGE_MARKUP_BP },
    ...IMAGE_DEFAULTS,
    ...extra,
  };
}

const IMAGE: ImageModel[] = [
  imagePerImage("imgA-v4", "imgA v4", "imgA", "0.054"),
  imagePerImage("imgA-v4-pro", "imgA v4 Pro", "imgA", "0.338"),
  imagePerImage("imgA-v4-vector", "imgA v4 Vector", "imgA", "0.108", { output: "svg" }),
  imagePerImage("imgA-v4-vector-pro", "imgA v4 Vector Pro", "imgA", "0.405", { output: "svg" }),
  {
    ...base,
    id: "imgB-2-pro",
    name: "imgB 2 Pro",
    modality: "image",
    capability: "image",
    family: "imgB",
    // D7, D19: (0.03 + 0.015 x (mp - 1)) x 1.35, rounded half-up to 0.001 USD.
    pricing: {
      mode: "per-mp",
      baseMicros: usd("0.03"),
      extraPerMpMicros: usd("0.015"),
      markupBp: IMAGE_MARKUP_BP,
      roundStepMicros: usd("0.001"),
    },
    ...IMAGE_DEFAULTS,
    singleImage: true,
    acceptsImageUrl: true,
    acceptsImageUrls: true,
    maxImageUrls: 10,
  },
  imagePerImage("imgB-edit-pro", "imgB Edit Pro", "imgB", "0.054", {
    imageRequired: true,
    acceptsImageUrl: true,
  }),
  imagePerImage("imgC-v3", "imgC v3", "imgC", "0.108"),
  imagePerImage("imgB-1.1-ultra", "imgB 1.1 Ultra", "imgB", "0.081", { legacy: true }),
  imagePerImage("imgA-v3", "imgA v3", "imgA", "0.054", { legacy: true }),
  {
    ...base,
    id: "imgC-q1",
    name: "imgC Q1",
    modality: "image",
    capability: "image",
    family: "imgC",
    // D14: per image by quality tier, default medium.
    pricing: {
      mode: "per-quality",
      tiers: { low: usd("0.015"), medium: usd("0.057"), high: usd("0.225") },
      defaultQuality: "medium",
    },
    ...IMAGE_DEFAULTS,
  },
];

// ------------------------------------------------------------------------------------------- the index

/**
 * Every model of the spec (and D14, D18), enabled or not, in catalog order (audio, video, image). Frozen.
 * Lists shown to callers use {@link enabledModels}; `/v1/pricing` sorts its own rows.
 */
export const MODELS: readonly ModelRecord[] = deepFreeze([
  ...SPEECH,
  ...MUSIC,
  ...SFX,
  ...VOICE_CREATION,
  ...AUDIO_TEXT,
  ...VIDEO,
  ...IMAGE,
]);

/** Model id or alias -> record. Built once; a duplicate id or alias fails at module load. */
const BY_ID: ReadonlyMap<string, ModelRecord> = (() => {
  const map = new Map<string, ModelRecord>();
  const add = (key: string, model: ModelRecord): void => {
    if (map.has(key)) throw new Error(`catalog: duplicate model id or alias ${key}`);
    map.set(key, model);
  };
  for (const model of MODELS) add(model.id, model);
  for (const model of MODELS) {
    if ("aliases" in model) for (const alias of model.aliases) add(alias, model);
  }
  return map;
})();

/**
 * Alias -> concrete model id (`transcribe`, `audio-understand`; spec Versioning 4). The text side adds its
 * own aliases (`best`, `fast`, ...) in its own catalog.
 */
export const MODEL_ALIASES: ReadonlyMap<string, string> = new Map(
  MODELS.flatMap((m) => ("aliases" in m ? m.aliases.map((a): [string, string] => [a, m.id]) : [])),
);

/**
 * The record of a model id or alias, enabled or not (O(1)); undefined when unknown. Request handlers use
 * {@link getModelOf}, typed by capability, which also refuses disabled models; this one is for records of
 * past work (a job whose model was disabled since) and for catalog-wide code.
 */
export function getModel(id: string): ModelRecord | undefined {
  return BY_ID.get(id);
}

/** The enabled record of `id` (or alias), else undefined (spec Versioning 6: disabled models are refused). */
function enabled(id: string): ModelRecord | undefined {
  const model = BY_ID.get(id);
  return model?.enabled ? model : undefined;
}

/** Enabled models in catalog order (the live model list, spec Versioning 6). */
export function enabledModels(): readonly ModelRecord[] {
  return ENABLED;
}
const ENABLED: readonly ModelRecord[] = Object.freeze(MODELS.filter((m) => m.enabled));

/**
 * The enabled record of `id` (or alias) when it has `capability`, else undefined (unknown, disabled or of
 * another capability; spec Versioning 6), whatever its lifecycle: for work accepted before a shutdown date
 * (the job runner's sources, delivery and its price). Requests use {@link getModelOf}.
 */
export function findModelOf<C extends Capability>(id: string, capability: C): ModelOf<C> | undefined {
  const m = enabled(id);
  return m?.capability === capability ? (m as ModelOf<C>) : undefined;
}

/**
 * The model a request names: the enabled record of `id` (or alias) when it has `capability`, else undefined
 * (unknown, disabled or of another capability; spec Versioning 6). Typed by the capability:
 * `getModelOf(id, "video")` is a {@link VideoModel}, `getModelOf(id, "voice_clone")` a
 * {@link VoiceCreationModel}. The caller turns undefined into its 400: `not_a_tts_model` (speech),
 * `not_a_music_model`, `not_an_sfx_model`, `not_a_voice_design_model`, `not_a_voice_clone_model`,
 * `invalid_model` (image, video); transcription and audio understanding also take their alias
 * (`transcribe`, `audio-understand`). Every paid route resolves its model here, so a model whose shutdown
 * date has come is refused here for all of them (D35), before any limit or hold.
 * @throws AppError 410 `model_retired` when the model is retired (lifecycle.ts).
 */
export function getModelOf<C extends Capability>(id: string, capability: C): ModelOf<C> | undefined {
  const m = findModelOf(id, capability);
  if (m !== undefined) checkNotRetired(m.id);
  return m;
}

/**
 * Checks and installs the operator's shutdown dates (D35, `MODEL_SHUTDOWN_DATES` as `loadConfig` parsed
 * it: concrete model id -> `YYYY-MM-DD`) for this process; an empty table clears them. `createServices`
 * calls it first, so a bad value stops the start.
 * @throws Error naming `MODEL_SHUTDOWN_DATES` and the id when an id is not a model of the catalog (media or
 *   text; an alias is refused: the date belongs to the model it points at).
 */
export function configureModelLifecycle(dates: Readonly<Record<string, string>>): void {
  const textIds = new Set(TEXT_MODELS.map((m) => m.id));
  for (const id of Object.keys(dates)) {
    const media = BY_ID.get(id);
    if (!(media !== undefined && media.id === id) && !textIds.has(id)) {
      throw new Error(`MODEL_SHUTDOWN_DATES names '${id}', which is not a model id of the catalog (aliases are not accepted)`);
    }
  }
  setShutdownDates(dates);
}
