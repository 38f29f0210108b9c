/**
 * A loopback fake of ElevenLabs' API (elevenlabs/elevenlabs-js `src/api/resources/*\/client/Client.ts`),
 * for contract tests and the `fake-upstreams` script: it answers in ElevenLabs' real shapes, serves real,
 * decodable audio, validates requests as strictly as ElevenLabs does, and misbehaves on request. The
 * official `@elevenlabs/elevenlabs-js` client accepts it (test/upstreams/elevenlabs/official-client.test.ts).
 *
 * ## Protocol
 * | request | answer |
 * |---|---|
 * | `POST /v1/text-to-speech/{voice_id}[/stream]?output_format=` `{text, model_id?, voice_settings?, ...}` | 200 audio, about 0.06 s per character (at least 0.3 s); headers `request-id`, `character-cost` |
 * | `POST /v1/music?output_format=` `{prompt, music_length_ms?, model_id?, ...}` | 200 audio of exactly `music_length_ms` (default 10 000) |
 * | `POST /v1/sound-generation?output_format=` `{text, duration_seconds?, prompt_influence?, model_id?, loop?}` | 200 audio of `duration_seconds` or 2 s |
 * | `GET /v2/voices?page_size=&next_page_token=` | `{voices, has_more, total_count, next_page_token}` over the account's voices (`page_size` 1..100, default 10) |
 * | `GET /v1/voices` | `{voices}`: every account voice |
 * | `GET /v1/shared-voices?page_size=&page=` | `{voices, has_more, total_count, last_sort_id}` over the public library (`page_size` 1..100, default 30; `page` from 0) |
 * | `POST /v1/speech-to-text` (multipart `file`, `model_id`, ...) | `{language_code, language_probability, text, words, transcription_id}` (fakes/elevenlabs-realtime.ts) |
 * | WebSocket `/v1/text-to-speech/{voice_id}/stream-input`, `.../multi-stream-input` | realtime speech (D42; fakes/elevenlabs-realtime.ts) |
 * | WebSocket `/v1/speech-to-text/realtime` | Scribe realtime transcription (D43; fakes/elevenlabs-realtime.ts) |
 * Another path: 404 `{detail: "Not Found"}`; a known path with another method: 405 `{detail: "Method
 * Not Allowed"}`. Audio is a sine tone in the requested `output_format` whose pitch follows the voice or
 * prompt; the content type is `audio/mpeg`, `audio/pcm` or `audio/basic` (*unverified*: ElevenLabs' own
 * types for raw formats).
 *
 * ## Validation (what ElevenLabs refuses, in its shapes)
 * Each request body is checked as FastAPI checks the pydantic model the SDK's request type mirrors
 * (elevenlabs-js 2.73.0: `textToSpeech/client/requests/BodyTextToSpeechFull.ts` with
 * `src/api/types/VoiceSettings.ts`, `music/client/requests/BodyComposeMusicV1MusicPost.ts`,
 * `textToSoundEffects/client/requests/CreateSoundEffectRequest.ts`): required fields, the type of every
 * field the fake knows (strings, numbers, integers, booleans, lists, objects; unknown fields are ignored,
 * pydantic's default), the enums (`output_format` per endpoint: `TextToSpeechConvertRequestOutputFormat`,
 * `MusicComposeRequestOutputFormat`, `AllowedOutputFormats`; `apply_text_normalization`; the music and
 * sound-effect `model_id`s, `MusicModelId.ts` and `SfxModelId.ts`) and the documented ranges
 * (`music_length_ms` an integer 3000..600000, `duration_seconds` 0.5..30, `prompt_influence` 0..1,
 * `seed`). A failure is FastAPI's 422 `{detail: [{type, loc, msg, input, ctx?}]}` listing every bad
 * field, as pydantic v2 words it (a body that is not JSON: `json_invalid`). After the schema:
 * - speech `model_id` (a free string at ElevenLabs) not in {@link FAKE_TTS_MODELS} (the turbo models are
 *   dropped, D35): 400 `{detail: {status: "model_not_found", message: "A model with model ID <id> does
 *   not exist ..."}}` (ElevenLabs' answer as users record it);
 * - `voice_settings` numbers out of range (stability, similarity_boost, style 0..1; speed 0.7..1.2,
 *   ElevenLabs' docs): 400 `{detail: {status: "invalid_voice_settings", message}}`;
 * - a voice of neither list: 400 `{detail: {status: "voice_not_found", message}}`;
 * - a model id of the `retired` option (any endpoint): 400 `model_not_found`, as for a removed model.
 * The fake renders MP3, PCM and mu-law; a valid Opus, WAV or A-law name answers 400
 * `fake_unsupported_format` (the fake's limit, not ElevenLabs').
 *
 * The catalog: 120 account voices (the first fourteen are ElevenLabs' default voices with their real ids:
 * `21m00Tcm4TlvDq8ikWAM` "Rachel" of the SDK's `tests/wire/voices.test.ts`, `JBFqnCBsd6RMkjVDRZzb` "George" of
 * its README, and the twelve the OpenAI dialect's voice names stand for; premade voices have `description: null` as ElevenLabs sends it; every
 * tenth voice has no `labels`) and 2900 library voices (the first is `sB1b5zUrxQVAFl2PhZFp` "Alita" of
 * the same file), ids of 20 letters and digits, deterministic. Library voices 1 to 10 are also the
 * last account voices (the fake's choice, so a listing has duplicates to drop).
 *
 * Every call needs `xi-api-key` (the configured `apiKey`, or any non-empty key when none is configured);
 * otherwise 401 `{detail: {status: "invalid_api_key", message: "Invalid API key"}}`. `latencyMs` delays
 * every answer.
 *
 * ## Misbehaviour markers
 * In the text or prompt as `[fake:NAME]`, or for every request (voice listings included) with the
 * `markers` option or `setMarkers`:
 * | marker | effect |
 * |---|---|
 * | `500` | 500 `Internal Server Error` as text (uvicorn's answer to an unhandled exception) |
 * | `429` | 429 `{detail: {status: "system_busy", message}}` (message as SubtitleEdit/subtitleedit#9246 quotes it) |
 * | `quota` | 401 `{detail: {status: "quota_exceeded", message}}` (home-assistant/core#160414) |
 * | `voice_gone` | 400 `{detail: {status: "voice_not_found", message}}` (elevenlabs/elevenlabs-docs#1317) |
 * | `422` | 422 `{detail: [{type: "string_too_long", loc: ["body", "text"], msg, input, ctx}]}` |
 * | `malformed` | 200 with an HTML page |
 * | `hang` | never answered (until `close()`) |
 * | `slow` | answered after 2 s |
 * | `echo-key` | 401 `invalid_api_key` with the caller's key echoed in `message` (redaction tests) |
 * The sockets have markers of their own (`ws-fail`, `ws-fail-after-audio`, `ws-drop`, `ws-1011`, `ws-hang`,
 * `stt-*`; `429`, `500` and `hang` refuse or hold the upgrade): fakes/elevenlabs-realtime.ts lists them.
 *
 * `requests` records every request in order: `method`, `path` (with query), `headers` (lower-case;
 * `xi-api-key` recorded as `[redacted]`) and the parsed JSON `body` (or null; for `POST /v1/speech-to-text`
 * the form's fields, the file as `{name, type, bytes}`), WebSocket upgrades included (`GET`); `sockets`
 * records each socket's messages both ways (fakes/elevenlabs-realtime.ts, "Records").
 */
import { createHash, randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { audioFormatInfo } from "../src/upstreams/audio-convert.ts";
import { isJsonObject as isObject, markersOf, sendJson as json, startLoopbackFake } from "./loopback.ts";
import type { LoopbackFake, LoopbackFakeCall, LoopbackFakeRequest } from "./loopback.ts";
import { createRealtimeFake } from "./elevenlabs-realtime.ts";
import type { ElevenLabsFakeSocket, RealtimeFake } from "./elevenlabs-realtime.ts";
import { encodeAudio } from "../src/upstreams/simulator/encode.ts";
import { contentTypeOf } from "../src/upstreams/types.ts";
import type { AudioFormat } from "../src/upstreams/types.ts";

/** Options of {@link startElevenLabsFake}. */
export interface ElevenLabsFakeOptions {
  /** Default 0 (any free port). */
  port?: number;
  /** Default `127.0.0.1`. */
  host?: string;
  /** The only key accepted; default: any non-empty `xi-api-key`. */
  apiKey?: string;
  /**
   * Markers applied to every request, as if each text carried them (`["500"]`: an ElevenLabs that fails
   * everything). Replaced by {@link ElevenLabsFake.setMarkers}. Default none.
   */
  markers?: readonly string[];
  /** Delay before every answer, ms (default 0). */
  latencyMs?: number;
  /**
   * Model ids answered as ElevenLabs answers a model it removed: 400 `{detail: {status:
   * "model_not_found", message}}` on every endpoint (`["music_v2"]`: a retired music model). Replaced by
   * {@link ElevenLabsFake.setRetired}. Default none.
   */
  retired?: readonly string[];
}

/** One recorded request (see the module comment). */
export type ElevenLabsFakeRequest = LoopbackFakeRequest;

/**
 * A running fake: `url` (use it as the source's base URL), `requests` (every request, in order),
 * `submits()` (the `POST`s), `setMarkers()` (replaces the markers applied to every request), `setRetired()`
 * (replaces the retired model ids), `voiceIds()`
 * (every voice id of its catalog, account voices first), `reset()` (forgets the requests; the array
 * stays the same object) and `close()` (stops listening and drops every connection, held `hang` and
 * `slow` requests included).
 */
export interface ElevenLabsFake extends LoopbackFake {
  /** Every WebSocket served, in order (see fakes/elevenlabs-realtime.ts, "Records"); `reset()` forgets them too. */
  sockets: ElevenLabsFakeSocket[];
  setMarkers(markers: readonly string[]): void;
  /** Replaces the retired model ids (the `retired` option). */
  setRetired(ids: readonly string[]): void;
  voiceIds(): string[];
}

/** Number of account voices of the catalog. */
export const FAKE_ACCOUNT_VOICES = 120;
/** Number of library voices of the catalog. */
export const FAKE_SHARED_VOICES = 2900;
/** Library voices that are also account voices (library voices 1..10 are the last account voices). */
export const FAKE_SHARED_IN_ACCOUNT = 10;

/**
 * Text-to-speech model ids the fake serves (ElevenLabs' `model_id` there is a free string, checked by the
 * handler): elevenlabs/elevenlabs-js 2.73.0 `src/api/types/TtsConversationalModel.ts` without the turbo
 * models it marks deprecated ("Use eleven_flash_v2_5 instead"; dropped, D35), plus `eleven_v3`
 * (`ElevenV3Request.ts`). Any other id answers 400 `model_not_found`.
 */
export const FAKE_TTS_MODELS: readonly string[] = ["eleven_v3", "eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_flash_v2"];
/** The model ids of `POST /v1/music`: the enum `src/api/types/MusicModelId.ts` (`music_v1` deprecated, still served). */
export const FAKE_MUSIC_MODELS: readonly string[] = ["music_v1", "music_v2", "music_v2_5"];
/** The model ids of `POST /v1/sound-generation`: the literal `src/api/types/SfxModelId.ts`. */
export const FAKE_SFX_MODELS: readonly string[] = ["eleven_text_to_sound_v2"];

/** MP3, PCM and mu-law names of the output-format enums below (the ones the fake renders). */
const MP3_PCM_ULAW = [
  "mp3_22050_32", "mp3_24000_48", "mp3_44100_32", "mp3_44100_64", "mp3_44100_96", "mp3_44100_128", "mp3_44100_192",
  "pcm_8000", "pcm_16000", "pcm_22050", "pcm_24000", "pcm_32000", "pcm_44100", "pcm_48000", "ulaw_8000",
] as const;
const OPUS = ["opus_48000_32", "opus_48000_64", "opus_48000_96", "opus_48000_128", "opus_48000_192"] as const;
/** `output_format` of speech: `textToSpeech/types/TextToSpeechConvertRequestOutputFormat.ts`. */
const TTS_FORMATS: readonly string[] = [...MP3_PCM_ULAW, "alaw_8000", ...OPUS, "wav_8000", "wav_16000", "wav_22050", "wav_24000", "wav_32000", "wav_44100", "wav_48000"];
/** `output_format` of music: `music/types/MusicComposeRequestOutputFormat.ts` (`auto`: MP3 chosen by the model). */
const MUSIC_FORMATS: readonly string[] = ["auto", "mp3_48000_128", "mp3_48000_192", "mp3_48000_240", "mp3_48000_320", ...MP3_PCM_ULAW, "alaw_8000", ...OPUS];
/** `output_format` of sound effects: `src/api/types/AllowedOutputFormats.ts`. */
const SFX_FORMATS: readonly string[] = [...MP3_PCM_ULAW, "alaw_8000", ...OPUS];
/** `apply_text_normalization` of speech: `BodyTextToSpeechFullApplyTextNormalization.ts`. */
const TEXT_NORMALIZATION = ["auto", "on", "off"];
/**
 * Ranges of `voice_settings` (ElevenLabs' docs: stability, similarity_boost and style 0 to 1; speed 0.7
 * to 1.2, "values outside the 0.7-1.2 range are not supported"). Out of range: 400
 * `invalid_voice_settings` "Invalid setting for <field> received, expected to be greater or equal to
 * <min> and less or equal to <max>, received <value>." (ElevenLabs' answer as users record it).
 */
const VOICE_SETTING_RANGES: Readonly<Record<string, readonly [number, number]>> = {
  stability: [0, 1],
  similarity_boost: [0, 1],
  style: [0, 1],
  speed: [0.7, 1.2],
};

const SLOW_MS = 2000;
/** Misbehaviour markers in a text or prompt: `[fake:NAME]`. */
const TEXT_MARKER = /\[fake:([a-z0-9_-]+)\]/g;
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** A deterministic 20-character voice id (letters and digits, as ElevenLabs' ids are). */
function voiceIdOf(seed: string): string {
  const hash = createHash("sha256").update(`elevenlabs-fake:${seed}`).digest();
  let id = "";
  for (let i = 0; i < 20; i++) id += ALPHABET[hash[i]! % ALPHABET.length];
  return id;
}

const GENDERS = ["female", "male", "neutral"] as const;
const AGES = ["young", "middle_aged", "old"] as const;
const ACCENTS = ["american", "british", "australian", "indian", "irish"] as const;
const USE_CASES = ["narrative_story", "conversational", "characters_animation", "social_media", "informative_educational"] as const;
const CATEGORIES = ["premade", "cloned", "generated", "professional"] as const;
const NAMES = ["Aria", "Roger", "Sarah", "Laura", "Charlie", "George", "Callum", "River", "Liam", "Charlotte", "Alice", "Matilda"] as const;

const pick = <T>(list: readonly T[], i: number): T => list[i % list.length]!;

/**
 * ElevenLabs' own default (premade) voices that open the account's list, with their real ids: "Rachel" of
 * the SDK's `tests/wire/voices.test.ts`, "George", the voice of the SDK's README examples (also the
 * gateway README's, so they run on the fakes as written), and the premade voices the OpenAI dialect's voice
 * names (`alloy`, `nova`, ...) stand for.
 */
const PREMADE_VOICES: readonly (readonly [string, string])[] = [
  ["21m00Tcm4TlvDq8ikWAM", "Rachel"],
  ["JBFqnCBsd6RMkjVDRZzb", "George"],
  ["SAz9YHcvj6GT2YYXdXww", "River"],
  ["TX3LPaxmHKxFdv7VOQHJ", "Liam"],
  ["N2lVS1w4EtoT3dr4eOWO", "Callum"],
  ["cgSgspJ2msm6clMCkdW9", "Jessica"],
  ["cjVigY5qzO86Huf0OWal", "Eric"],
  ["FGY2WhTYpPnrIDTdsKH5", "Laura"],
  ["nPczCjzI2devNBz1zQrb", "Brian"],
  ["XrExE9yKIg1WjnnlVkGX", "Matilda"],
  ["EXAVITQu4vr4xnSDxMaL", "Sarah"],
  ["bIHbv24MWmeRgasZH58o", "Will"],
  ["pFZP5JQG7iQjIQuC4Bku", "Lily"],
  ["iP95p4xoKVk53GoZ742B", "Chris"],
];

/** The account's voices (`Voice` of the SDK, with the fields a listing carries). */
function accountVoices(): Record<string, unknown>[] {
  const voices: Record<string, unknown>[] = [];
  for (let i = 0; i < FAKE_ACCOUNT_VOICES; i++) {
    const premade = PREMADE_VOICES[i];
    const voiceId = premade?.[0] ?? voiceIdOf(`account:${i}`);
    const category = premade === undefined ? pick(CATEGORIES, i) : "premade";
    const voice: Record<string, unknown> = {
      voice_id: voiceId,
      name: premade?.[1] ?? `${pick(NAMES, i)} ${i}`,
      samples: null,
      category,
      fine_tuning: { is_allowed_to_fine_tune: category === "professional", state: {}, verification_failures: [], verification_attempts_count: 0, manual_verification_requested: false },
      labels: i % 10 === 9 ? {} : { accent: pick(ACCENTS, i), descriptive: "calm", age: pick(AGES, i), gender: pick(GENDERS, i), language: "en", use_case: pick(USE_CASES, i) },
      // ElevenLabs sends `description: null` for its premade voices.
      description: category === "premade" ? null : `A ${pick(GENDERS, i)} voice for ${pick(USE_CASES, i).replace(/_/g, " ")}.`,
      preview_url: `https://storage.googleapis.com/eleven-public-prod/premade/voices/${voiceId}/preview.mp3`,
      available_for_tiers: [],
      settings: null,
      sharing: null,
      high_quality_base_model_ids: ["eleven_v2_flash", "eleven_flash_v2", "eleven_turbo_v2_5", "eleven_multilingual_v2", "eleven_flash_v2_5", "eleven_turbo_v2"],
      verified_languages: [],
      safety_control: null,
      collection_ids: [],
      voice_verification: { requires_verification: false, is_verified: false, verification_failures: [], verification_attempts_count: 0, language: null, verification_attempts: null },
      permission_on_resource: null,
      is_owner: category !== "premade",
      is_legacy: false,
      is_mixed: false,
      favorited_at_unix: null,
      created_at_unix: category === "premade" ? null : 1_714_000_000 + i,
    };
    voices.push(voice);
  }
  return voices;
}

/** The public library (`LibraryVoiceResponse` of the SDK: every required field present). */
function sharedVoices(account: readonly Record<string, unknown>[]): Record<string, unknown>[] {
  const voices: Record<string, unknown>[] = [];
  for (let i = 0; i < FAKE_SHARED_VOICES; i++) {
    const voiceId = i === 0 ? "sB1b5zUrxQVAFl2PhZFp" : i <= FAKE_SHARED_IN_ACCOUNT ? (account[FAKE_ACCOUNT_VOICES - 1 - FAKE_SHARED_IN_ACCOUNT + i]!.voice_id as string) : voiceIdOf(`shared:${i}`);
    voices.push({
      public_owner_id: createHash("sha256").update(`owner:${i % 700}`).digest("hex"),
      voice_id: voiceId,
      date_unix: 1_714_423_232 - i * 3600,
      name: i === 0 ? "Alita" : `${pick(NAMES, i + 3)} L${i}`,
      accent: pick(ACCENTS, i + 1),
      gender: i === 0 ? "Female" : pick(GENDERS, i + 1),
      age: pick(AGES, i + 1),
      descriptive: "calm",
      use_case: pick(USE_CASES, i + 2),
      category: i % 3 === 0 ? "professional" : "high_quality",
      language: "en",
      locale: "en-US",
      description: i === 0 ? "Perfectly calm, neutral and strong voice. Great for a young female protagonist." : `Library voice ${i}.`,
      preview_url: `https://storage.googleapis.com/eleven-public-prod/library/voices/${voiceId}/preview.mp3`,
      usage_character_count_1y: 12_852 + i,
      usage_character_count_7d: 100 + (i % 50),
      play_api_usage_character_count_1y: 12_852,
      cloned_by_count: i % 40,
      rate: 1,
      fiat_rate: null,
      free_users_allowed: true,
      live_moderation_enabled: false,
      featured: i % 100 === 0,
      verified_languages: [],
      notice_period: null,
      instagram_username: null,
      twitter_username: null,
      youtube_username: null,
      tiktok_username: null,
      image_url: null,
      is_added_by_user: i >= 1 && i <= FAKE_SHARED_IN_ACCOUNT,
    });
  }
  return voices;
}

/** A FastAPI validation error (422). */
function validation(res: ServerResponse, loc: (string | number)[], msg: string, type: string, input: unknown, ctx?: Record<string, unknown>): void {
  json(res, 422, { detail: [{ type, loc, msg, input, ...(ctx === undefined ? {} : { ctx }) }] });
}

/** One item of a FastAPI (pydantic v2) 422 answer. */
interface FieldError {
  type: string;
  loc: (string | number)[];
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

/**
 * The schema of one request, checked as FastAPI checks a pydantic model: every failure is collected and
 * answered together as one 422 `{detail: [...]}` (pydantic v2's types and messages). Unknown fields are
 * ignored, as pydantic's default `extra="ignore"` does.
 */
class Schema {
  readonly errors: FieldError[] = [];
  private readonly body: Record<string, unknown>;

  constructor(body: Record<string, unknown>) {
    this.body = body;
  }

  /** Records an error at `["body", field]`. */
  error(field: string, type: string, msg: string, input: unknown, ctx?: Record<string, unknown>): void {
    this.errors.push({ type, loc: ["body", field], msg, input, ...(ctx === undefined ? {} : { ctx }) });
  }

  /** A string (`required`: present and not null). */
  string(field: string, required = false): string | null {
    const v = this.body[field];
    if (v === undefined || v === null) {
      if (required) this.error(field, "missing", "Field required", this.body);
      return null;
    }
    if (typeof v !== "string") return (this.error(field, "string_type", "Input should be a valid string", v), null);
    return v;
  }

  /** A number (a numeric string too: pydantic's lax mode) within `ge`..`le` when given. */
  number(field: string, range: { ge?: number; le?: number } = {}): number | null {
    return checkNumber(this.body[field], (type, msg, input, ctx) => this.error(field, type, msg, input, ctx), range);
  }

  /** An integer within `ge`..`le` when given. */
  integer(field: string, range: { ge?: number; le?: number } = {}): number | null {
    const v = this.body[field];
    if (v === undefined || v === null) return null;
    if (typeof v !== "number" || !Number.isFinite(v)) return (this.error(field, "int_type", "Input should be a valid integer", v), null);
    if (!Number.isInteger(v)) return (this.error(field, "int_from_float", "Input should be a valid integer, got a number with a fractional part", v), null);
    return inRange(v, range, (type, msg, ctx) => this.error(field, type, msg, v, ctx));
  }

  /** A boolean (pydantic's lax mode also takes 0/1 and a few words). */
  boolean(field: string): boolean | null {
    return checkBoolean(this.body[field], (type, msg, input) => this.error(field, type, msg, input));
  }

  /** One of `allowed` (an `enum`, or a `literal_error` when the type is a single literal). */
  oneOf(field: string, allowed: readonly string[], literal = false): string | null {
    const v = this.body[field];
    if (v === undefined || v === null) return null;
    if (typeof v === "string" && allowed.includes(v)) return v;
    const expected = expectedList(allowed);
    this.error(field, literal ? "literal_error" : "enum", `Input should be ${expected}`, v, { expected });
    return null;
  }

  /** A list of strings (`pronunciation`-style lists are not checked further). */
  list(field: string): unknown[] | null {
    const v = this.body[field];
    if (v === undefined || v === null) return null;
    if (!Array.isArray(v)) return (this.error(field, "list_type", "Input should be a valid list", v), null);
    return v;
  }

  /** An object (a nested model). */
  object(field: string): Record<string, unknown> | null {
    const v = this.body[field];
    if (v === undefined || v === null) return null;
    if (!isObject(v)) return (this.error(field, "model_attributes_type", "Input should be a valid dictionary or object to extract fields from", v), null);
    return v;
  }

  /** An error of a nested field (`["body", field, sub]`). */
  nested(field: string, sub: string, type: string, msg: string, input: unknown): void {
    this.errors.push({ type, loc: ["body", field, sub], msg, input });
  }
}

type Fail = (type: string, msg: string, input: unknown, ctx?: Record<string, unknown>) => void;

function checkNumber(v: unknown, fail: Fail, range: { ge?: number; le?: number } = {}): number | null {
  if (v === undefined || v === null) return null;
  let n: number;
  if (typeof v === "number" && Number.isFinite(v)) n = v;
  else if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) n = Number(v);
  else if (typeof v === "string") return (fail("float_parsing", "Input should be a valid number, unable to parse string as a number", v), null);
  else return (fail("float_type", "Input should be a valid number", v), null);
  return inRange(n, range, (type, msg, ctx) => fail(type, msg, v, ctx));
}

function inRange(n: number, range: { ge?: number; le?: number }, fail: (type: string, msg: string, ctx: Record<string, unknown>) => void): number | null {
  if (range.ge !== undefined && n < range.ge) return (fail("greater_than_equal", `Input should be greater than or equal to ${range.ge}`, { ge: range.ge }), null);
  if (range.le !== undefined && n > range.le) return (fail("less_than_equal", `Input should be less than or equal to ${range.le}`, { le: range.le }), null);
  return n;
}

const TRUE_WORDS = ["1", "on", "t", "true", "y", "yes"];
const FALSE_WORDS = ["0", "off", "f", "false", "n", "no"];

function checkBoolean(v: unknown, fail: Fail): boolean | null {
  if (v === undefined || v === null) return null;
  if (typeof v === "boolean") return v;
  if (v === 0 || v === 1) return v === 1;
  if (typeof v === "string" && TRUE_WORDS.includes(v.toLowerCase())) return true;
  if (typeof v === "string" && FALSE_WORDS.includes(v.toLowerCase())) return false;
  if (typeof v === "string") return (fail("bool_parsing", "Input should be a valid boolean, unable to interpret input", v), null);
  return (fail("bool_type", "Input should be a valid boolean", v), null);
}

/** pydantic's list of expected values: `'a', 'b' or 'c'`. */
function expectedList(allowed: readonly string[]): string {
  const quoted = allowed.map((a) => `'${a}'`);
  return quoted.length === 1 ? quoted[0]! : `${quoted.slice(0, -1).join(", ")} or ${quoted.at(-1)}`;
}

/** Recently made tones: the same request answers the same bytes without encoding again (benchmarks). */
const TONES = new Map<string, Uint8Array>();

/** A sine tone of `seconds` in `format`, pitch from `seed` (memoized: the last 256 tones). */
function tone(seconds: number, format: AudioFormat, seed: string): Uint8Array {
  const key = `${seconds}|${format}|${seed}`;
  let bytes = TONES.get(key);
  if (bytes === undefined) {
    bytes = renderTone(seconds, format, seed);
    if (TONES.size >= 256) TONES.delete(TONES.keys().next().value!);
    TONES.set(key, bytes);
  }
  return bytes;
}

function renderTone(seconds: number, format: AudioFormat, seed: string): Uint8Array {
  const rate = audioFormatInfo(format).sampleRate;
  return encodeAudio(toneSamples(seconds, rate, seed), rate, format);
}

/** The samples (-1..1) of the fake's tone: `seconds` at `rate` Hz, its pitch (220..659 Hz) from `seed`. */
function toneSamples(seconds: number, rate: number, seed: string): Float32Array {
  const n = Math.round(seconds * rate);
  const hz = 220 + (createHash("sha256").update(seed).digest().readUInt16BE(0) % 440);
  const samples = new Float32Array(n);
  for (let i = 0; i < n; i++) samples[i] = 0.3 * Math.sin((2 * Math.PI * hz * i) / rate);
  return samples;
}

/** Starts the fake on loopback. */
export async function startElevenLabsFake(options: ElevenLabsFakeOptions = {}): Promise<ElevenLabsFake> {
  const latencyMs = options.latencyMs ?? 0;
  let always: readonly string[] = [...(options.markers ?? [])];
  let retired = new Set<string>(options.retired ?? []);
  const account = accountVoices();
  const shared = sharedVoices(account);
  const known = new Set<string>([...account, ...shared].map((v) => v.voice_id as string));
  const timers = new Set<ReturnType<typeof setTimeout>>();
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });

  const audio = (res: ServerResponse, body: Uint8Array, format: AudioFormat, headers: Record<string, string> = {}): void => {
    res.writeHead(200, {
      "content-type": contentTypeOf(format),
      "content-length": String(body.byteLength),
      "request-id": randomBytes(10).toString("hex"),
      ...headers,
    });
    res.end(body);
  };

  /**
   * The query's `output_format` checked against the endpoint's enum (`allowed`): the name, the
   * fallback when absent, or an error (422 `enum` at `["query", "output_format"]`) pushed on `errors`.
   */
  const formatOf = (url: URL, allowed: readonly string[], fallback: string, errors: FieldError[]): string => {
    const raw = url.searchParams.get("output_format");
    if (raw === null) return fallback;
    if (allowed.includes(raw)) return raw;
    const expected = expectedList(allowed);
    errors.push({ type: "enum", loc: ["query", "output_format"], msg: `Input should be ${expected}`, input: raw, ctx: { expected } });
    return fallback;
  };

  /**
   * The audio of a valid request in `name`: the fake renders MP3, PCM and mu-law; the other names of
   * ElevenLabs' enums (Opus, WAV, A-law) answer a 400 that says so (the fake's limit, not ElevenLabs').
   */
  const sendTone = (res: ServerResponse, seconds: number, name: string, seed: string, headers: Record<string, string> = {}): void => {
    if (!/^(mp3|pcm|ulaw)_/.test(name)) {
      return json(res, 400, { detail: { status: "fake_unsupported_format", message: `The fake renders MP3, PCM and mu-law only, not ${name}.` } });
    }
    const format = name as AudioFormat;
    audio(res, tone(seconds, format, seed), format, headers);
  };

  /** 400 `model_not_found`, as ElevenLabs answers a `model_id` it does not have (or no longer has). */
  const modelNotFound = (res: ServerResponse, id: string): void =>
    json(res, 400, { detail: { status: "model_not_found", message: `A model with model ID ${id} does not exist or is not available to you.` } });

  /** The 422 of `errors` (true when answered). */
  const refused = (res: ServerResponse, errors: FieldError[]): boolean => {
    if (errors.length === 0) return false;
    json(res, 422, { detail: errors });
    return true;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse, { url, method, body, raw }: LoopbackFakeCall): Promise<void> => {
    const key = typeof req.headers["xi-api-key"] === "string" ? req.headers["xi-api-key"] : "";
    const text = isObject(body) ? (typeof body.text === "string" ? body.text : typeof body.prompt === "string" ? body.prompt : "") : "";
    // Own pattern: loopback.ts's `[fake:NAME]` takes no `_`, which `voice_gone` has.
    const markers = markersOf("", always, Array.from(text.matchAll(TEXT_MARKER), (m) => m[1]!));

    if (markers.has("echo-key")) return json(res, 401, { detail: { status: "invalid_api_key", message: `Invalid API key: ${key}` } });
    if (key === "" || (options.apiKey !== undefined && key !== options.apiKey)) {
      return json(res, 401, { detail: { status: "invalid_api_key", message: "Invalid API key" } });
    }
    if (markers.has("hang")) return; // never answered; close() drops the connection
    if (latencyMs > 0) await sleep(latencyMs);
    if (markers.has("slow")) await sleep(SLOW_MS);
    if (res.destroyed) return;

    if (markers.has("500")) {
      res.writeHead(500, { "content-type": "text/plain; charset=utf-8" });
      res.end("Internal Server Error");
      return;
    }
    if (markers.has("429")) {
      return json(res, 429, {
        detail: { status: "system_busy", message: "We are sorry, the system is experiencing heavy traffic, please try again. Higher subscriptions have higher priority." },
      });
    }
    if (markers.has("quota")) {
      const needed = Math.max(1, [...text].length);
      return json(res, 401, {
        detail: { status: "quota_exceeded", message: `This request exceeds your quota of 10000. You have 0 credits remaining, while ${needed} credits are required for this request.` },
      });
    }
    const segments = url.pathname.split("/").filter((s) => s !== "").map(safeDecode);
    if (markers.has("voice_gone")) {
      const voiceId = segments[1] === "text-to-speech" ? (segments[2] ?? "") : "";
      return json(res, 400, { detail: { status: "voice_not_found", message: `A voice with the voice_id ${voiceId} was not found.` } });
    }
    if (markers.has("422")) {
      return validation(res, ["body", "text"], "String should have at most 5000 characters", "string_too_long", text, { max_length: 5000 });
    }
    if (markers.has("malformed")) {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html><body><h1>Service temporarily unavailable</h1></body></html>");
      return;
    }

    if (segments.length === 2 && segments[0] === "v1" && segments[1] === "speech-to-text") {
      if (method !== "POST") return json(res, 405, { detail: "Method Not Allowed" });
      const recorded = fake.requests.at(-1);
      const fields = await realtime.speechToText(req, res, raw);
      if (recorded !== undefined) recorded.body = fields;
      return;
    }
    const route = `${method} /${segments.slice(0, 2).join("/")}`;
    const ttsPath = segments[0] === "v1" && segments[1] === "text-to-speech" && (segments.length === 3 || (segments.length === 4 && segments[3] === "stream"));
    const path2 = segments.length === 2 ? `/${segments.join("/")}` : null;
    const posts = ttsPath || path2 === "/v1/music" || path2 === "/v1/sound-generation";
    const gets = path2 === "/v2/voices" || path2 === "/v1/voices" || path2 === "/v1/shared-voices";
    if ((posts && method !== "POST") || (gets && method !== "GET")) return json(res, 405, { detail: "Method Not Allowed" });
    if (posts && body === undefined) {
      // FastAPI's answer to a body that is not JSON.
      return json(res, 422, { detail: [{ type: "json_invalid", loc: ["body", 0], msg: "JSON decode error", input: {}, ctx: { error: "Expecting value" } }] });
    }
    if (ttsPath) return speech(res, url, segments[2]!, body);
    if (route === "POST /v1/music" && segments.length === 2) return music(res, url, body);
    if (route === "POST /v1/sound-generation" && segments.length === 2) return sfx(res, url, body);
    if (route === "GET /v2/voices" && segments.length === 2) return voicesV2(res, url);
    if (route === "GET /v1/voices" && segments.length === 2) return json(res, 200, { voices: account });
    if (route === "GET /v1/shared-voices" && segments.length === 2) return sharedPage(res, url);
    return json(res, 404, { detail: "Not Found" });
  };

  /** A missing or non-object body: FastAPI's 422 (the body model is required). */
  const bodyMissing = (res: ServerResponse, body: unknown): void =>
    body === null ? validation(res, ["body"], "Field required", "missing", null) : validation(res, ["body"], "Input should be a valid dictionary or object to extract fields from", "model_attributes_type", body);

  /**
   * Speech (`BodyTextToSpeechFull`): the schema (422), then the model (400 `model_not_found`: not in
   * {@link FAKE_TTS_MODELS} or retired; absent: `eleven_multilingual_v2`), the voice settings' ranges
   * (400 `invalid_voice_settings`) and the voice (400 `voice_not_found`).
   */
  const speech = (res: ServerResponse, url: URL, voiceId: string, body: unknown): void => {
    if (!isObject(body)) return bodyMissing(res, body);
    const schema = new Schema(body);
    const name = formatOf(url, TTS_FORMATS, "mp3_44100_128", schema.errors);
    const text = schema.string("text", true);
    const modelId = schema.string("model_id") ?? "eleven_multilingual_v2";
    schema.string("language_code");
    schema.string("previous_text");
    schema.string("next_text");
    schema.list("previous_request_ids");
    schema.list("next_request_ids");
    schema.list("pronunciation_dictionary_locators");
    schema.integer("seed", { ge: 0, le: 4_294_967_295 });
    schema.boolean("use_pvc_as_ivc");
    schema.boolean("apply_language_text_normalization");
    schema.oneOf("apply_text_normalization", TEXT_NORMALIZATION);
    const settings = schema.object("voice_settings");
    const numbers: [string, number][] = [];
    if (settings !== null) {
      for (const field of Object.keys(VOICE_SETTING_RANGES)) {
        const n = checkNumber(settings[field], (type, msg, input) => schema.nested("voice_settings", field, type, msg, input));
        if (n !== null) numbers.push([field, n]);
      }
      checkBoolean(settings.use_speaker_boost, (type, msg, input) => schema.nested("voice_settings", "use_speaker_boost", type, msg, input));
    }
    if (refused(res, schema.errors) || text === null) return;
    if (!FAKE_TTS_MODELS.includes(modelId) || retired.has(modelId)) return modelNotFound(res, modelId);
    for (const [field, n] of numbers) {
      const [min, max] = VOICE_SETTING_RANGES[field]!;
      if (n < min || n > max) {
        return json(res, 400, {
          detail: {
            status: "invalid_voice_settings",
            message: `Invalid setting for ${field} received, expected to be greater or equal to ${min.toFixed(1)} and less or equal to ${max.toFixed(1)}, received ${n.toFixed(1)}.`,
          },
        });
      }
    }
    if (!known.has(voiceId)) return json(res, 400, { detail: { status: "voice_not_found", message: `A voice with the voice_id ${voiceId} was not found.` } });
    const chars = [...text].length;
    sendTone(res, Math.max(0.3, 0.06 * chars), name, voiceId, { "character-cost": String(chars) });
  };

  /**
   * Music (`BodyComposeMusicV1MusicPost`): `prompt` or `composition_plan` (one of them); with a prompt,
   * `music_length_ms` an integer 3000..600000 (absent: the fake picks 10 s) and `force_instrumental`;
   * `seed` only with a plan; `model_id` of {@link FAKE_MUSIC_MODELS} (422 `enum` otherwise; a retired
   * one 400 `model_not_found`). `output_format` `auto` is MP3 44.1 kHz 128 kbps for `music_v1`, 48 kHz
   * 192 kbps for the v2 models.
   */
  const music = (res: ServerResponse, url: URL, body: unknown): void => {
    if (!isObject(body)) return bodyMissing(res, body);
    const schema = new Schema(body);
    let name = formatOf(url, MUSIC_FORMATS, "auto", schema.errors);
    const prompt = schema.string("prompt");
    const plan = schema.object("composition_plan");
    const lengthMs = schema.integer("music_length_ms", { ge: 3000, le: 600_000 });
    const modelId = schema.oneOf("model_id", FAKE_MUSIC_MODELS) ?? "music_v1";
    const seed = schema.integer("seed", { ge: 0 });
    const instrumental = schema.boolean("force_instrumental");
    schema.string("finetune_id");
    schema.boolean("respect_sections_durations");
    schema.boolean("store_for_inpainting");
    schema.boolean("sign_with_c2pa");
    if (refused(res, schema.errors)) return;
    if (prompt === null && plan === null) return validation(res, ["body"], "Value error, Either prompt or composition_plan must be provided", "value_error", body);
    if (prompt !== null && plan !== null) return validation(res, ["body"], "Value error, Only one of prompt or composition_plan may be provided", "value_error", body);
    if (plan !== null && (lengthMs !== null || instrumental !== null)) {
      return validation(res, ["body"], "Value error, music_length_ms and force_instrumental can only be used with prompt", "value_error", body);
    }
    if (prompt !== null && seed !== null) return validation(res, ["body"], "Value error, seed cannot be used with prompt", "value_error", body);
    if (retired.has(modelId)) return modelNotFound(res, modelId);
    if (name === "auto") name = modelId === "music_v1" ? "mp3_44100_128" : "mp3_48000_192";
    sendTone(res, (lengthMs ?? 10_000) / 1000, name, prompt ?? "plan");
  };

  /**
   * Sound effects (`CreateSoundEffectRequest`): `text` required, `duration_seconds` 0.5..30 (absent:
   * the fake picks 2 s), `prompt_influence` 0..1, `loop`, `model_id` the literal of
   * {@link FAKE_SFX_MODELS} (422 `literal_error` otherwise; retired: 400 `model_not_found`).
   */
  const sfx = (res: ServerResponse, url: URL, body: unknown): void => {
    if (!isObject(body)) return bodyMissing(res, body);
    const schema = new Schema(body);
    const name = formatOf(url, SFX_FORMATS, "mp3_44100_128", schema.errors);
    const text = schema.string("text", true);
    // The duration's range is ElevenLabs' own validator (a value_error), its type pydantic's.
    const seconds = checkNumber(
      body.duration_seconds,
      (type, msg, input) =>
        type === "float_type" || type === "float_parsing"
          ? schema.error("duration_seconds", type, msg, input)
          : schema.error("duration_seconds", "value_error", "Value error, Duration must be between 0.5 and 30 seconds", input, { error: {} }),
      { ge: 0.5, le: 30 },
    );
    schema.number("prompt_influence", { ge: 0, le: 1 });
    schema.boolean("loop");
    const modelId = schema.oneOf("model_id", FAKE_SFX_MODELS, true) ?? "eleven_text_to_sound_v2";
    if (refused(res, schema.errors) || text === null) return;
    if (retired.has(modelId)) return modelNotFound(res, modelId);
    sendTone(res, seconds ?? 2, name, text);
  };

  /** `page_size` of a listing, or null after answering 422. */
  const pageSizeOf = (url: URL, res: ServerResponse, fallback: number): number | null => {
    const raw = url.searchParams.get("page_size");
    const size = raw === null ? fallback : Number(raw);
    if (!Number.isInteger(size) || size < 1 || size > 100) {
      validation(res, ["query", "page_size"], "Input should be less than or equal to 100", "less_than_equal", raw);
      return null;
    }
    return size;
  };

  const voicesV2 = (res: ServerResponse, url: URL): void => {
    const size = pageSizeOf(url, res, 10);
    if (size === null) return;
    const token = url.searchParams.get("next_page_token");
    const offset = token === null ? 0 : offsetOfToken(token);
    if (offset === null) return validation(res, ["query", "next_page_token"], "Invalid page token", "value_error", token);
    const voices = account.slice(offset, offset + size);
    const hasMore = offset + size < account.length;
    json(res, 200, { voices, has_more: hasMore, total_count: account.length, next_page_token: hasMore ? tokenOfOffset(offset + size) : null });
  };

  const sharedPage = (res: ServerResponse, url: URL): void => {
    const size = pageSizeOf(url, res, 30);
    if (size === null) return;
    const page = Number(url.searchParams.get("page") ?? "0");
    if (!Number.isInteger(page) || page < 0) return validation(res, ["query", "page"], "Input should be a valid integer", "int_type", url.searchParams.get("page"));
    const voices = shared.slice(page * size, (page + 1) * size);
    const hasMore = (page + 1) * size < shared.length;
    const last = voices.at(-1);
    json(res, 200, { voices, has_more: hasMore, total_count: shared.length, last_sort_id: last === undefined ? null : (last.voice_id as string) });
  };

  const realtime: RealtimeFake = createRealtimeFake({
    apiKey: options.apiKey,
    isVoice: (id) => known.has(id),
    ttsModels: FAKE_TTS_MODELS,
    isRetired: (id) => retired.has(id),
    markers: () => always,
    voiceRanges: VOICE_SETTING_RANGES,
    latencyMs,
    sleep,
    // Upgrades go into the loopback's own `requests`, in order with the HTTP requests.
    record: (request) => fake.requests.push(request),
    toneSamples,
  });
  const fake = await startLoopbackFake(
    {
      port: options.port,
      host: options.host,
      recordHeader: (name, value) => (name === "xi-api-key" ? "[redacted]" : value),
      onUpgrade: (req, socket, head) => realtime.onUpgrade(req, socket, head),
    },
    handle,
  );
  const closeServer = fake.close;
  return {
    ...fake,
    sockets: realtime.sockets,
    reset() {
      fake.reset();
      realtime.sockets.length = 0;
    },
    setMarkers(markers) {
      always = [...markers];
    },
    setRetired(ids) {
      retired = new Set(ids);
    },
    voiceIds: () => [...known],
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      realtime.closeAll();
      await closeServer();
    },
  };
}

/** An opaque page token of the account listing (ElevenLabs' are opaque too). */
function tokenOfOffset(offset: number): string {
  return Buffer.from(`offset:${offset}`).toString("base64url");
}

function offsetOfToken(token: string): number | null {
  const m = /^offset:(\d{1,6})$/.exec(Buffer.from(token, "base64url").toString("utf8"));
  return m === null ? null : Number(m[1]);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
